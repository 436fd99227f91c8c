import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiKeyService } from '../../lib/accounts/api-keys.js';
import { generateApiKey } from '../../lib/accounts/api-key-format.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { AccountTable } from '../../lib/store/account-table.js';
import { ApiKeyTable } from '../../lib/store/api-key-table.js';
import { useStack } from '../support/stack.js';
import { frozenClock, registerDirect, testDeps } from './support.js';

/** The real repository, counting the lookups of the authentication path. */
class CountingKeyRepository extends ApiKeyTable {
  lookups = 0;
  touches = 0;
  override async getByHash(keyHash: string) {
    this.lookups++;
    return super.getByHash(keyHash);
  }
  override async touch(keyHash: string, at: string, notAfter: string) {
    this.touches++;
    return super.touch(keyHash, at, notAfter);
  }
}

// At module level, not in a `before` hook: on Node 20 an `after()` registered inside a root
// `before` hook runs as soon as that hook ends (see test/functions/lambda-handler.test.ts).
await useStack();

describe('API key authentication', () => {
  const keys = new CountingKeyRepository(getDb(), getConfig().tables.apiKeys);
  const accounts = new AccountTable(getDb(), getConfig().tables.accounts);


  it('rejects a key with a bad checksum without a database lookup', async () => {
    const service = new ApiKeyService(keys, accounts);
    const key = generateApiKey();
    const bad = `${key.slice(0, -1)}${key.endsWith('0') ? '1' : '0'}`;
    const before = keys.lookups;
    assert.equal(await service.authenticate(bad), undefined);
    assert.equal(await service.authenticate('not-a-key'), undefined);
    assert.equal(keys.lookups, before);
  });

  it('looks a well-formed key up once and names its account, key and tier', async () => {
    const registration = await registerDirect(testDeps());
    const service = new ApiKeyService(keys, accounts);
    const before = keys.lookups;
    const caller = await service.authenticate(registration.api_key);
    assert.deepEqual(caller, { accountId: registration.account_id, keyId: registration.key_id, tier: 'free' });
    assert.equal(keys.lookups - before, 1);
  });

  it('records last_used_at at most about once a minute', async () => {
    const registration = await registerDirect(testDeps());
    const clock = frozenClock('2030-11-22T10:15:00.000Z');
    const service = new ApiKeyService(keys, accounts, clock);
    const before = keys.touches;
    await service.authenticate(registration.api_key);
    clock.advance(30_000);
    await service.authenticate(registration.api_key);
    assert.equal(keys.touches - before, 1);
    clock.advance(31_000);
    await service.authenticate(registration.api_key);
    assert.equal(keys.touches - before, 2);
    const [listed] = await service.list(registration.account_id);
    assert.equal(listed?.last_used_at, '2030-11-22T10:16:01.000Z');
  });

  it('gives random key ids unrelated to the stored hash', async () => {
    const registration = await registerDirect(testDeps());
    const stored = await keys.listByAccount(registration.account_id);
    assert.match(registration.key_id, /^key_[0-9A-Za-z]{20}$/);
    assert.equal(stored.length, 1);
    assert.notEqual(stored[0]?.key_hash.includes(registration.key_id.slice(4)), true);
    assert.equal(JSON.stringify(stored).includes(registration.api_key), false);
  });
});
