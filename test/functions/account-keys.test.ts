import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { app as accountInfoApp } from '../../functions/v2/account-info.js';
import { app as keysCreateApp } from '../../functions/v2/account-keys-create.js';
import { app as keysDeleteApp } from '../../functions/v2/account-keys-delete.js';
import { app as keysListApp } from '../../functions/v2/account-keys-list.js';
import { isWellFormedApiKey } from '../../lib/accounts/api-key-format.js';
import { useStack } from '../support/stack.js';
import { bearer, body, evidenceTestApp, post, registerDirect, testDeps, withKey, withAccountDeps } from '../accounts/support.js';

// At module level, not in a `before` hook (see test/functions/lambda-handler.test.ts).
await useStack();

const deps = testDeps();
const create = withAccountDeps(keysCreateApp, deps);
const list = withAccountDeps(keysListApp, deps);
const remove = withAccountDeps(keysDeleteApp, deps);
const info = withAccountDeps(accountInfoApp, deps);
const evidence = evidenceTestApp(deps);
const KEYS = '/api/v2/account/keys';

interface KeyRecord {
  key_id: string;
  name: string | null;
  prefix: string;
  active: boolean;
  created_at: string;
  last_used_at: string | null;
  deactivated_at: string | null;
}

async function listKeys(token: string): Promise<KeyRecord[]> {
  const res = await list.request(KEYS, { headers: bearer(token) });
  assert.equal(res.status, 200);
  return ((await res.json()) as { keys: KeyRecord[] }).keys;
}

const deactivate = (token: string, keyId: string) => remove.request(`${KEYS}/${keyId}`, { method: 'DELETE', headers: bearer(token) });

describe('API key management', () => {
  it('creates a named key that is shown once and works at once', async () => {
    const account = await registerDirect(deps);
    const res = await create.request(KEYS, post({ name: 'ci pipeline' }, bearer(account.token)));
    assert.equal(res.status, 200);
    const key = await body(res);
    assert.deepEqual(Object.keys(key).sort(), ['api_key', 'created_at', 'key_id', 'name']);
    assert.equal(key.name, 'ci pipeline');
    assert.equal(isWellFormedApiKey(String(key.api_key)), true);
    assert.equal((await evidence.request('/op', withKey(String(key.api_key)))).status, 200);
  });

  it('creates a key without a body, with no name', async () => {
    const account = await registerDirect(deps);
    const res = await create.request(KEYS, { method: 'POST', headers: bearer(account.token) });
    assert.equal(res.status, 200);
    assert.equal((await body(res)).name, null);
  });

  it('lists keys with their prefix and state, never the key or its hash', async () => {
    const account = await registerDirect(deps);
    const second = await body(await create.request(KEYS, post({ name: 'second' }, bearer(account.token))));
    const res = await list.request(KEYS, { headers: bearer(account.token) });
    const text = await res.text();
    const { keys } = JSON.parse(text) as { keys: KeyRecord[] };
    assert.deepEqual(keys.map((k) => k.key_id), [account.key_id, second.key_id]);
    assert.deepEqual(Object.keys(keys[0] ?? {}).sort(), ['active', 'created_at', 'deactivated_at', 'key_id', 'last_used_at', 'name', 'prefix']);
    assert.equal(keys[1]?.prefix, String(second.api_key).slice(0, 12));
    assert.equal(keys.every((k) => k.active && k.deactivated_at === null), true);
    assert.equal(text.includes(account.api_key) || text.includes(String(second.api_key)), false);
    assert.doesNotMatch(text, /key_hash|[0-9a-f]{64}/);
  });

  it('leaves exactly 5 active keys after 20 concurrent creations, and refuses the sixth with 409', async () => {
    const account = await registerDirect(deps);
    assert.equal((await deactivate(account.token, account.key_id)).status, 200);
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => create.request(KEYS, post({ name: `k${i}` }, bearer(account.token)))));
    const statuses = responses.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 200).length, 5);
    assert.equal(statuses.filter((s) => s === 409).length, 15);
    assert.equal((await listKeys(account.token)).filter((k) => k.active).length, 5);
    const sixth = await create.request(KEYS, post({}, bearer(account.token)));
    assert.equal(sixth.status, 409);
    const problem = await body(sixth);
    assert.equal(problem.code, 'key_limit_reached');
    assert.equal(problem.max_keys, 5);
    assert.equal((await body(await info.request('/api/v2/account/info', { headers: bearer(account.token) }))).active_keys, 5);
  });

  it('deactivates a key so that the very next request with it gets 401, and frees its slot once', async () => {
    const account = await registerDirect(deps);
    assert.equal((await evidence.request('/op', withKey(account.api_key))).status, 200);
    const res = await deactivate(account.token, account.key_id);
    assert.equal(res.status, 200);
    const result = await body(res);
    assert.deepEqual(Object.keys(result).sort(), ['active', 'deactivated_at', 'key_id']);
    assert.equal(result.active, false);
    const after = await evidence.request('/op', withKey(account.api_key));
    assert.equal(after.status, 401);
    assert.equal((await body(after)).code, 'invalid_api_key');
    const again = await body(await deactivate(account.token, account.key_id));
    assert.equal(again.deactivated_at, result.deactivated_at);
    const [listed] = await listKeys(account.token);
    assert.equal(listed?.active, false);
    assert.equal(listed?.deactivated_at, result.deactivated_at);
    assert.equal((await body(await info.request('/api/v2/account/info', { headers: bearer(account.token) }))).active_keys, 0);
  });

  it("does not let one account list or deactivate another account's keys", async () => {
    const a = await registerDirect(deps);
    const b = await registerDirect(deps);
    const bKeys = await listKeys(b.token);
    assert.deepEqual(bKeys.map((k) => k.key_id), [b.key_id]);
    const res = await deactivate(b.token, a.key_id);
    assert.equal(res.status, 404);
    assert.equal((await body(res)).code, 'key_not_found');
    assert.equal((await evidence.request('/op', withKey(a.api_key))).status, 200);
    assert.equal((await listKeys(a.token))[0]?.active, true);
  });

  it('answers 404 for an unknown key id', async () => {
    const account = await registerDirect(deps);
    assert.equal((await deactivate(account.token, 'key_00000000000000000000')).status, 404);
  });

  it('refuses unknown fields in the creation body with 400', async () => {
    const account = await registerDirect(deps);
    assert.equal((await create.request(KEYS, post({ name: 'x', scopes: ['all'] }, bearer(account.token)))).status, 400);
  });

  it('shows when a key was last used', async () => {
    const account = await registerDirect(deps);
    assert.equal((await listKeys(account.token))[0]?.last_used_at, null);
    await evidence.request('/op', withKey(account.api_key));
    assert.match((await listKeys(account.token))[0]?.last_used_at ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});
