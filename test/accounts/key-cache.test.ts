import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashApiKey } from '../../lib/accounts/api-key-format.js';
import { ApiKeyAuthenticator, MAX_KEY_CACHE_MS } from '../../lib/accounts/key-auth.js';
import { loadConfig } from '../../lib/config.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { AccountTable } from '../../lib/store/account-table.js';
import { ApiKeyTable } from '../../lib/store/api-key-table.js';
import { useStack } from '../support/stack.js';
import { registerDirect, testDeps } from './support.js';

await useStack();

/** The real key table, counting the reads authentication makes. */
class CountingKeys extends ApiKeyTable {
  reads = 0;
  override async getByHash(keyHash: string) {
    this.reads++;
    return super.getByHash(keyHash);
  }
}

const db = getDb();
const tables = getConfig().tables;
const deps = testDeps();

/** An authenticator as another instance holds it: its own clock, the real tables. */
function instance(cacheMs: number) {
  let now = Date.parse('2026-11-29T10:00:00.000Z');
  const keys = new CountingKeys(db, tables.apiKeys);
  const auth = new ApiKeyAuthenticator(keys, new AccountTable(db, tables.accounts), () => new Date(now), cacheMs);
  return { keys, auth, advance: (ms: number) => (now += ms) };
}

describe('API keys read at most once per API_KEY_CACHE_MS per instance', () => {
  it('answers repeated requests from one read, and sees a deactivation made elsewhere once the bound has passed, not later', async () => {
    const registration = await registerDirect(deps);
    const { keys, auth, advance } = instance(MAX_KEY_CACHE_MS);
    const caller = { accountId: registration.account_id, keyId: registration.key_id, tier: 'free' };
    for (let i = 0; i < 5; i++) assert.deepEqual(await auth.authenticate(registration.api_key), caller);
    assert.equal(keys.reads, 1, 'one read for five requests');

    // Another instance deactivates the key (its own process forgets it; this one cannot know).
    const deactivated = await new ApiKeyTable(db, tables.apiKeys).deactivate(hashApiKey(registration.api_key), registration.account_id, new Date().toISOString());
    assert.equal(deactivated.outcome, 'deactivated');
    advance(MAX_KEY_CACHE_MS - 1);
    assert.deepEqual(await auth.authenticate(registration.api_key), caller, 'still within the bound: answered from memory');
    assert.equal(keys.reads, 1);
    advance(1);
    assert.equal(await auth.authenticate(registration.api_key), undefined, 'refused once the bound has passed');
    assert.equal(keys.reads, 2);
    // A refusal is never kept: each later request reads the key again.
    assert.equal(await auth.authenticate(registration.api_key), undefined);
    assert.equal(keys.reads, 3);
  });

  it('reads every time with API_KEY_CACHE_MS=0', async () => {
    const registration = await registerDirect(deps);
    const { keys, auth } = instance(0);
    for (let i = 0; i < 3; i++) assert.ok(await auth.authenticate(registration.api_key));
    assert.equal(keys.reads, 3);
  });

  it('is taken from the configuration, 5 s by default and never more', () => {
    assert.equal(loadConfig({}).apiKeyCacheMs, 5000);
    assert.equal(loadConfig({ API_KEY_CACHE_MS: '0' }).apiKeyCacheMs, 0);
    assert.throws(() => loadConfig({ API_KEY_CACHE_MS: '5001' }), /API_KEY_CACHE_MS must be an integer ≥ 0 and ≤ 5000/);
    assert.throws(() => new ApiKeyAuthenticator(new ApiKeyTable(db, tables.apiKeys), new AccountTable(db, tables.accounts), undefined, 6000), /at most 5000 ms/);
  });
});
