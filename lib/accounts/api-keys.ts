import { conflictError, notFoundError } from '../errors.js';
import type { AccountRepository, TierStamp } from './account-repository.js';
import type { ApiKeyRecord, ApiKeyRepository } from './api-key-repository.js';
import { apiKeyDisplayPrefix, generateApiKey, hashApiKey } from './api-key-format.js';
import { type Clock, systemClock } from './clock.js';
import { ApiKeyAuthenticator, type AuthenticatedKey, forgetAuthenticatedKeys, type KeyAuthenticator } from './key-auth.js';
import { randomId } from './random.js';

export { type AuthenticatedKey, LAST_USED_RESOLUTION_MS } from './key-auth.js';

/** At most this many active keys per account (api-v2.md "Limits"). */
export const MAX_ACTIVE_KEYS = 5;

/** A key as its creator sees it, once (`POST /account/keys` and register). */
export interface NewApiKey {
  key_id: string;
  api_key: string;
  name: string | null;
  created_at: string;
}

/** A key in `GET /account/keys`: never the key or its hash. */
export interface ApiKeyView {
  key_id: string;
  name: string | null;
  prefix: string;
  active: boolean;
  created_at: string;
  last_used_at: string | null;
  deactivated_at: string | null;
}

/** Result of `DELETE /account/keys/{key_id}`. */
export interface DeactivatedKey {
  key_id: string;
  active: false;
  deactivated_at: string;
}

/**
 * Builds a new key and the record that stores it (only its hash), with the account's tier stamp
 * (lib/accounts/key-auth.ts).
 */
export function newApiKeyRecord(accountId: string, name: string | null, now: Date, stamp?: TierStamp): { apiKey: string; record: ApiKeyRecord } {
  const apiKey = generateApiKey();
  return {
    apiKey,
    record: {
      key_hash: hashApiKey(apiKey),
      key_id: randomId('key'),
      account_id: accountId,
      name,
      prefix: apiKeyDisplayPrefix(apiKey),
      active: true,
      created_at: now.toISOString(),
      ...(stamp ? { tier: stamp.tier, tier_version: stamp.version } : {}),
    },
  };
}

/** API keys: creation within the 5-key limit, listing, deactivation and authentication. */
export class ApiKeyService implements KeyAuthenticator {
  private readonly authenticator: ApiKeyAuthenticator;

  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly accounts: AccountRepository,
    private readonly clock: Clock = systemClock,
  ) {
    this.authenticator = new ApiKeyAuthenticator(keys, accounts, clock);
  }

  /**
   * Creates a key for `accountId`. A key slot is reserved on the account first (the conditional
   * counter, which also enlists the key's hash and reads the tier stamp), then the key is stored
   * with that stamp; if storing fails the slot is given back. A crash between the two leaves one
   * slot taken by no key: the limit errs on the safe side (never a sixth key). Last, the account
   * is read again and a tier change made in between is copied onto the key (the rules are in
   * lib/accounts/key-auth.ts); if that fails the request fails and the key is never disclosed.
   * Throws 409 `key_limit_reached` when 5 keys are active.
   */
  async create(accountId: string, name: string | null): Promise<NewApiKey> {
    const { apiKey, record } = newApiKeyRecord(accountId, name, this.clock());
    const stamp = await this.accounts.reserveKeySlot(accountId, MAX_ACTIVE_KEYS, record.key_hash);
    if (!stamp) {
      if (!(await this.accounts.get(accountId))) throw notFoundError('account_not_found', 'The account of this token does not exist.');
      throw conflictError(
        'key_limit_reached',
        `This account already has ${MAX_ACTIVE_KEYS} active API keys, the most allowed. Deactivate one (DELETE /api/v2/account/keys/{key_id}) to create another.`,
        { max_keys: MAX_ACTIVE_KEYS },
      );
    }
    const stamped: ApiKeyRecord = { ...record, tier: stamp.tier, tier_version: stamp.version };
    try {
      await this.keys.create(stamped);
    } catch (error) {
      await this.accounts.releaseKeySlot(accountId, record.key_hash);
      throw error;
    }
    const account = await this.accounts.get(accountId);
    const version = Number(account?.tier_version ?? 0);
    if (account && version > stamp.version) await this.keys.setTier(record.key_hash, account.tier, version);
    return { key_id: record.key_id, api_key: apiKey, name: record.name, created_at: record.created_at };
  }

  /** Every key of the account, oldest first. */
  async list(accountId: string): Promise<ApiKeyView[]> {
    const records = await this.keys.listByAccount(accountId);
    return records.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.key_id.localeCompare(b.key_id)).map(toView);
  }

  /**
   * Deactivates the caller's key `keyId`: the next request with it fails (authentication reads
   * the table strongly consistently). Deactivating an inactive key again answers the same.
   * Throws 404 `key_not_found` for an unknown key or another account's key.
   */
  async deactivate(accountId: string, keyId: string): Promise<DeactivatedKey> {
    const found = await this.keys.findByKeyId(accountId, keyId);
    if (!found) throw keyNotFound(keyId);
    const result = await this.keys.deactivate(found.key_hash, accountId, this.clock().toISOString());
    // This process answers no request from the key any more; the others within API_KEY_CACHE_MS.
    forgetAuthenticatedKeys([found.key_hash]);
    if (result.outcome === 'not_found') throw keyNotFound(keyId);
    // The slot is released only by the one request that flipped `active` (the conditional update).
    if (result.outcome === 'deactivated') await this.accounts.releaseKeySlot(accountId, found.key_hash);
    return { key_id: keyId, active: false, deactivated_at: result.record.deactivated_at ?? this.clock().toISOString() };
  }

  /** See {@link ApiKeyAuthenticator.authenticate}. */
  authenticate(apiKey: string): Promise<AuthenticatedKey | undefined> {
    return this.authenticator.authenticate(apiKey);
  }
}

function toView(r: ApiKeyRecord): ApiKeyView {
  return {
    key_id: r.key_id,
    name: r.name ?? null,
    prefix: r.prefix,
    active: r.active === true,
    created_at: r.created_at,
    last_used_at: r.last_used_at ?? null,
    deactivated_at: r.deactivated_at ?? null,
  };
}

function keyNotFound(keyId: string) {
  return notFoundError('key_not_found', `This account has no API key with id "${keyId}".`);
}
