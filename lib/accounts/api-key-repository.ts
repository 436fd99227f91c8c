import type { TierName } from './tiers.js';

/** An API key as stored (apiKeys table, key = `key_hash`). Never holds the key itself. */
export interface ApiKeyRecord {
  /** SHA-256 of the whole key, lower-case hex: the table key. */
  key_hash: string;
  /** Random public identifier (`key_…`), used in URLs; unrelated to the hash. */
  key_id: string;
  account_id: string;
  name: string | null;
  /** The first characters of the key, enough to recognise it in a list. */
  prefix: string;
  active: boolean;
  created_at: string;
  last_used_at?: string;
  deactivated_at?: string;
  /**
   * A copy of the account's tier, so that authentication reads only this item, and the account's
   * `tier_version` it was copied at (lib/accounts/key-auth.ts). Absent on keys written before keys
   * carried the tier.
   */
  tier?: TierName;
  tier_version?: number;
}

/** Outcome of a deactivation. */
export type DeactivateOutcome = { outcome: 'deactivated' | 'already_inactive'; record: ApiKeyRecord } | { outcome: 'not_found' };

/**
 * Where the API keys are kept (lib/store/api-key-table.ts), by the hash of the key. Authentication
 * reads the record itself, strongly consistent, so a deactivation is seen by the very next request;
 * the per-account listing may lag behind (it only serves listings and the key-id lookup of DELETE).
 */
export interface ApiKeyRepository {
  /** Stores a new key; never overwrites (and so re-assigns) another key. */
  create(record: ApiKeyRecord): Promise<void>;
  /** Deletes a key (clean-up of a registration that lost its e-mail claim). */
  remove(keyHash: string): Promise<void>;
  /** The key with this hash: one strongly consistent read (the authentication hot path). */
  getByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  /**
   * Copies the account's tier stamp onto the key, unless the key already holds that version or a
   * newer one; false when it did (or when the key does not exist). Versions only move forward.
   */
  setTier(keyHash: string, tier: TierName, version: number): Promise<boolean>;
  /**
   * Records a use, unless one was recorded after `notAfter` (so at most about one write per key
   * and minute, whatever the request rate). False when another request recorded it first.
   */
  touch(keyHash: string, at: string, notAfter: string): Promise<boolean>;
  /** Every key of an account, active or not. */
  listByAccount(accountId: string): Promise<ApiKeyRecord[]>;
  /** The key `keyId` of `accountId` (another account's key is never found). */
  findByKeyId(accountId: string, keyId: string): Promise<ApiKeyRecord | undefined>;
  /** Deactivates the key `keyHash` if it belongs to `accountId` and is active: once, whatever the concurrency. */
  deactivate(keyHash: string, accountId: string, at: string): Promise<DeactivateOutcome>;
}
