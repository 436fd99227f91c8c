import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { app as adminSetTierApp } from '../../functions/v2/admin-set-tier.js';
import { getConfig } from '../../lib/deps/core.js';
import { useStack } from '../support/stack.js';
import { bearer, body, fromRandomIp, registerDirect, testDeps, withAccountDeps } from '../accounts/support.js';

// At module level, not in a `before` hook (see test/functions/lambda-handler.test.ts).
await useStack();

const deps = testDeps();
const app = withAccountDeps(adminSetTierApp, deps);
const adminToken = getConfig().adminToken ?? '';
const path = (accountId: string) => `/api/v2/admin/accounts/${accountId}/tier`;
const put = (payload: unknown, headers: Record<string, string> = bearer(adminToken)): RequestInit => ({
  method: 'PUT',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(payload),
});

describe('PUT /api/v2/admin/accounts/{account_id}/tier', () => {
  it('sets the tier with the admin token', async () => {
    const account = await registerDirect(deps);
    const res = await app.request(path(account.account_id), put({ tier: 'starter' }));
    assert.equal(res.status, 200);
    assert.deepEqual(await body(res), { account_id: account.account_id, tier: 'starter' });
    assert.equal((await deps.accounts.get(account.account_id)).tier, 'starter');
  });

  it('answers 401 without the admin token, with a wrong one, or with an account JWT', async () => {
    const account = await registerDirect(deps);
    for (const headers of [{}, bearer('wrong-token'), bearer(`${adminToken}x`), bearer(account.token)]) {
      const res = await app.request(path(account.account_id), put({ tier: 'pro' }, headers));
      assert.equal(res.status, 401);
      assert.equal((await body(res)).code, 'invalid_admin_token');
    }
    assert.equal((await deps.accounts.get(account.account_id)).tier, 'free');
  });

  it('answers 404 for an unknown account', async () => {
    const res = await app.request(path('acc_nobody'), put({ tier: 'pro' }));
    assert.equal(res.status, 404);
    assert.equal((await body(res)).code, 'account_not_found');
  });

  it('answers 400 for an unknown tier or unknown fields', async () => {
    const account = await registerDirect(deps);
    assert.equal((await app.request(path(account.account_id), put({ tier: 'platinum' }))).status, 400);
    assert.equal((await app.request(path(account.account_id), put({ tier: 'pro', note: 'x' }))).status, 400);
  });

  it('does not exist (404) when ADMIN_TOKEN is not configured', async () => {
    const withoutAdmin = withAccountDeps(adminSetTierApp, testDeps({ config: { adminToken: undefined } }));
    const account = await registerDirect(deps);
    const res = await withoutAdmin.request(path(account.account_id), put({ tier: 'pro' }));
    assert.equal(res.status, 404);
    assert.equal((await body(res)).code, 'not_found');
  });

  it('locks an address out after too many wrong admin tokens, the right one included', async () => {
    const lockable = withAccountDeps(adminSetTierApp, testDeps({ config: { authFailuresPerWindow: 5 } }));
    const account = await registerDirect(deps);
    const ip = fromRandomIp();
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await lockable.request(path(account.account_id), put({ tier: 'pro' }, bearer(`guess-${i}`)), ip)).status);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429]);
    const locked = await lockable.request(path(account.account_id), put({ tier: 'pro' }), ip);
    assert.equal(locked.status, 429);
    assert.equal((await body(locked)).code, 'too_many_failed_attempts');
    assert.ok(Number(locked.headers.get('retry-after')) >= 1);
    assert.equal((await deps.accounts.get(account.account_id)).tier, 'free');
    // The operator's own address still works.
    assert.equal((await lockable.request(path(account.account_id), put({ tier: 'pro' }), fromRandomIp())).status, 200);
  });
});
