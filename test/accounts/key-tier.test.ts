import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { app as keysCreateApp } from '../../functions/v2/account-keys-create.js';
import { app as adminSetTierApp } from '../../functions/v2/admin-set-tier.js';
import type { AccountRecord } from '../../lib/accounts/account-repository.js';
import { generateApiKey, hashApiKey } from '../../lib/accounts/api-key-format.js';
import type { ApiKeyRecord } from '../../lib/accounts/api-key-repository.js';
import { ApiKeyService, newApiKeyRecord } from '../../lib/accounts/api-keys.js';
import { createAccountDeps } from '../../lib/deps/accounts.js';
import { ApiKeyAuthenticator } from '../../lib/accounts/key-auth.js';
import { randomId } from '../../lib/accounts/random.js';
import type { TierName } from '../../lib/accounts/tiers.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { AccountTable } from '../../lib/store/account-table.js';
import { ApiKeyTable } from '../../lib/store/api-key-table.js';
import { useStack } from '../support/stack.js';
import { bearer, evidenceTestApp, fastHasher, post, registerDirect, testDeps, uniqueEmail, withKey, withAccountDeps } from './support.js';

// At module level, not in a `before` hook (see test/functions/lambda-handler.test.ts).
await useStack();

/** The real account repository, counting the calls the authentication path could make. */
class CountingAccountRepository extends AccountTable {
  gets = 0;
  enlists = 0;
  override async get(accountId: string) {
    this.gets++;
    return super.get(accountId);
  }
  override async enlistKey(accountId: string, keyHash: string) {
    this.enlists++;
    return super.enlistKey(accountId, keyHash);
  }
}

/** The real key repository, with a hook that runs just before a key item is written. */
class HookedKeyRepository extends ApiKeyTable {
  beforeCreate: ((record: ApiKeyRecord) => Promise<void>) | undefined;
  override async create(record: ApiKeyRecord) {
    await this.beforeCreate?.(record);
    return super.create(record);
  }
}

const db = getDb();
const tables = getConfig().tables;
const deps = testDeps();
const keys = new ApiKeyTable(db, tables.apiKeys);

async function keyItem(apiKey: string): Promise<ApiKeyRecord> {
  const item = await keys.getByHash(hashApiKey(apiKey));
  assert.ok(item, 'key item');
  return item;
}

async function accountItem(accountId: string): Promise<Record<string, unknown>> {
  const out = await db.send(new GetCommand({ TableName: tables.accounts, Key: { pk: `acct#${accountId}` }, ConsistentRead: true }));
  assert.ok(out.Item, 'account item');
  return out.Item;
}

/** Every key item of the account, read from the table itself (not the index). */
async function keyItemsOf(accountId: string, apiKeys: string[]): Promise<ApiKeyRecord[]> {
  const items = await Promise.all(apiKeys.map(keyItem));
  for (const item of items) assert.equal(item.account_id, accountId);
  return items;
}

/** An account and one key as written before keys carried the tier: no stamp, no `key_hashes`. */
async function legacyAccount(tier: TierName): Promise<{ accountId: string; apiKey: string }> {
  const accountId = randomId('acc');
  const account: AccountRecord = {
    account_id: accountId,
    email: uniqueEmail('legacy'),
    name: null,
    tier,
    password_hash: 'unused',
    created_at: new Date().toISOString(),
    active_keys: 1,
  };
  await new AccountTable(db, tables.accounts).create(account);
  const { apiKey, record } = newApiKeyRecord(accountId, 'legacy', new Date());
  assert.equal(record.tier, undefined);
  await keys.create(record);
  return { accountId, apiKey };
}

describe('the tier on the API-key item', () => {
  it('is written at register and enlisted on the account, and authentication then reads no account', async () => {
    const registration = await registerDirect(deps);
    const item = await keyItem(registration.api_key);
    assert.equal(item.tier, 'free');
    assert.equal(item.tier_version, 0);
    const account = await accountItem(registration.account_id);
    assert.deepEqual([...(account.key_hashes as Set<string>)], [item.key_hash]);

    const accounts = new CountingAccountRepository(db, tables.accounts);
    const caller = await new ApiKeyAuthenticator(keys, accounts).authenticate(registration.api_key);
    assert.deepEqual(caller, { accountId: registration.account_id, keyId: registration.key_id, tier: 'free' });
    assert.equal(accounts.gets + accounts.enlists, 0);
  });

  it('is copied onto every active key by set-tier before it answers, and back on a downgrade', async () => {
    const registration = await registerDirect(deps);
    const more = [];
    for (let i = 0; i < 4; i++) more.push(await deps.apiKeys.create(registration.account_id, `k${i}`));
    const all = [registration.api_key, ...more.map((k) => k.api_key)];
    for (const item of await keyItemsOf(registration.account_id, all)) assert.equal(item.tier, 'free');

    await deps.accounts.setTier(registration.account_id, 'pro');
    for (const item of await keyItemsOf(registration.account_id, all)) {
      assert.equal(item.tier, 'pro');
      assert.equal(item.tier_version, 1);
    }
    const anchor = evidenceTestApp(deps, 'anchor');
    for (const apiKey of all) assert.equal((await anchor.request('/op', withKey(apiKey))).status, 200);

    await deps.accounts.setTier(registration.account_id, 'free');
    for (const item of await keyItemsOf(registration.account_id, all)) assert.equal(item.tier, 'free');
    assert.equal((await anchor.request('/op', withKey(all[3] ?? ''))).status, 403);
  });

  it('withdraws a deactivated key from the account', async () => {
    const registration = await registerDirect(deps);
    const second = await deps.apiKeys.create(registration.account_id, 'second');
    const secondHash = (await keyItem(second.api_key)).key_hash;
    assert.equal((await accountItem(registration.account_id)).key_hashes instanceof Set, true);
    assert.ok(((await accountItem(registration.account_id)).key_hashes as Set<string>).has(secondHash));
    await deps.apiKeys.deactivate(registration.account_id, second.key_id);
    const account = await accountItem(registration.account_id);
    assert.equal((account.key_hashes as Set<string>).has(secondHash), false);
    assert.equal(account.active_keys, 1);
  });

  it('never goes back to an older version', async () => {
    const registration = await registerDirect(deps);
    const hash = (await keyItem(registration.api_key)).key_hash;
    assert.equal(await keys.setTier(hash, 'enterprise', 7), true);
    assert.equal(await keys.setTier(hash, 'starter', 6), false);
    assert.equal(await keys.setTier(hash, 'pro', 7), false);
    const item = await keyItem(registration.api_key);
    assert.equal(item.tier, 'enterprise');
    assert.equal(item.tier_version, 7);
    assert.equal(await keys.setTier(hashApiKey(generateApiKey()), 'pro', 1), false, 'no stub item for an unknown key');
    assert.equal(await keys.getByHash(hashApiKey(generateApiKey())), undefined);
  });
});

describe('a key created while its account changes tier', () => {
  it('is corrected when the tier changed between its slot reservation and its write', async () => {
    const registration = await registerDirect(deps);
    const hooked = new HookedKeyRepository(db, tables.apiKeys);
    const accounts = new AccountTable(db, tables.accounts);
    const service = new ApiKeyService(hooked, accounts);
    let written: TierName | undefined;
    // The worst interleaving: the reservation has read Free, then the whole tier change runs
    // (it finds the new key enlisted but not yet written), then the key is written with Free.
    hooked.beforeCreate = async (record) => {
      hooked.beforeCreate = undefined;
      written = record.tier;
      await deps.accounts.setTier(registration.account_id, 'pro');
      assert.equal(await keys.getByHash(record.key_hash), undefined);
    };
    const created = await service.create(registration.account_id, 'racing');
    assert.equal(written, 'free', 'the key was written with the stamp read before the change');
    const item = await keyItem(created.api_key);
    assert.equal(item.tier, 'pro');
    assert.equal(item.tier_version, 1);
    assert.equal((await evidenceTestApp(deps, 'anchor').request('/op', withKey(created.api_key))).status, 200);
  });

  it('ends with the account tier on every key, under concurrent key creation and set-tier requests', async () => {
    const adminHeaders = { 'content-type': 'application/json', ...bearer(getConfig().adminToken ?? '') };
    const changes = new Map<string, Promise<Response>>();
    // The requests' DynamoDB calls are delayed at random, as round trips vary; a key item's
    // PutItem by up to 60 ms (a slow or retried write). When an account's first key slot is
    // reserved, its move to Pro is sent as a request of its own, so that it runs while that
    // creation and the others are under way.
    const base = getDb();
    const jittery = Object.create(base) as typeof base;
    jittery.send = (async (command: Parameters<typeof base.send>[0]) => {
      const slow = command instanceof PutCommand && command.input.TableName === tables.apiKeys;
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * (slow ? 61 : 4))));
      const out = await base.send(command);
      const update = command instanceof UpdateCommand ? command.input : undefined;
      const pk = String(update?.Key?.pk ?? '');
      if (pk.startsWith('acct#') && /active_keys :one/.test(update?.UpdateExpression ?? '') && !changes.has(pk)) {
        changes.set(pk, Promise.resolve(admin.request(`/api/v2/admin/accounts/${pk.slice(5)}/tier`, { method: 'PUT', headers: adminHeaders, body: JSON.stringify({ tier: 'pro' }) })));
      }
      return out;
    }) as typeof base.send;
    const racing = createAccountDeps({ config: deps.config, db: jittery, passwords: fastHasher });
    const createKey = withAccountDeps(keysCreateApp, racing);
    const admin = withAccountDeps(adminSetTierApp, racing);
    const registrations = await Promise.all(Array.from({ length: 12 }, () => registerDirect(deps)));
    const keysOf = new Map<string, string[]>(registrations.map((r) => [r.account_id, [r.api_key]]));

    await Promise.all(
      registrations.flatMap((r) =>
        Array.from({ length: 4 }, async () => {
          const res = await createKey.request('/api/v2/account/keys', post({}, bearer(r.token)));
          assert.equal(res.status, 200);
          keysOf.get(r.account_id)?.push(String(((await res.json()) as { api_key: string }).api_key));
        }),
      ),
    );
    assert.equal(changes.size, registrations.length);
    for (const res of await Promise.all(changes.values())) assert.equal(res.status, 200);

    for (const r of registrations) {
      const account = await deps.accounts.get(r.account_id);
      assert.equal(account.tier, 'pro');
      assert.equal(account.tier_version, 1);
      const all = keysOf.get(r.account_id) ?? [];
      assert.equal(all.length, 5);
      for (const item of await keyItemsOf(r.account_id, all)) {
        assert.equal(item.tier, account.tier, `key ${item.key_id} of ${r.account_id}`);
        assert.equal(item.tier_version, account.tier_version);
      }
      const caller = await deps.apiKeys.authenticate(all[4] ?? '');
      assert.equal(caller?.tier, account.tier);
    }
  });
});

describe('a key written before keys carried the tier', () => {
  it('is authenticated from its account, then carries the tier and is found by set-tier', async () => {
    const { accountId, apiKey } = await legacyAccount('starter');
    const accounts = new CountingAccountRepository(db, tables.accounts);
    const auth = new ApiKeyAuthenticator(keys, accounts);

    assert.equal((await auth.authenticate(apiKey))?.tier, 'starter');
    assert.equal(accounts.enlists, 1);
    const item = await keyItem(apiKey);
    assert.equal(item.tier, 'starter');
    assert.equal(item.tier_version, 0);
    assert.ok(((await accountItem(accountId)).key_hashes as Set<string>).has(item.key_hash));

    assert.equal((await auth.authenticate(apiKey))?.tier, 'starter');
    assert.equal(accounts.enlists, 1, 'the second request reads the key only');
    assert.equal(accounts.gets, 0);

    await deps.accounts.setTier(accountId, 'enterprise');
    assert.equal((await keyItem(apiKey)).tier, 'enterprise');
    assert.equal((await auth.authenticate(apiKey))?.tier, 'enterprise');
  });

  it('follows a tier change made before its first use', async () => {
    const { accountId, apiKey } = await legacyAccount('free');
    await deps.accounts.setTier(accountId, 'pro');
    assert.equal((await keyItem(apiKey)).tier, undefined, 'not enlisted, so not copied');
    assert.equal((await deps.apiKeys.authenticate(apiKey))?.tier, 'pro');
    const item = await keyItem(apiKey);
    assert.equal(item.tier, 'pro');
    assert.equal(item.tier_version, 1);
  });

  it('can be deactivated before it was ever used, releasing its slot', async () => {
    const { accountId, apiKey } = await legacyAccount('free');
    const { key_id } = await keyItem(apiKey);
    assert.equal((await deps.apiKeys.deactivate(accountId, key_id)).active, false);
    const account = await accountItem(accountId);
    assert.equal(account.active_keys, 0);
    assert.equal(account.key_hashes, undefined);
    assert.equal(await deps.apiKeys.authenticate(apiKey), undefined);
  });

  it('is refused when its account is gone, as before', async () => {
    const { accountId, apiKey } = await legacyAccount('pro');
    await new AccountTable(db, tables.accounts).remove(accountId);
    assert.equal(await deps.apiKeys.authenticate(apiKey), undefined);
    assert.equal((await evidenceTestApp(deps).request('/op', withKey(apiKey))).status, 401);
    const out = await db.send(new GetCommand({ TableName: tables.accounts, Key: { pk: `acct#${accountId}` }, ConsistentRead: true }));
    assert.equal(out.Item, undefined, 'no account item re-created');
  });
});
