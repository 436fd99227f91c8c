import type { TierName } from './tiers.js';

/** An account as stored (accounts table, `pk = acct#<account_id>`). */
export interface AccountRecord {
  account_id: string;
  /** Lower-cased. */
  email: string;
  name: string | null;
  tier: TierName;
  /** scrypt, self-describing (lib/accounts/passwords.ts). */
  password_hash: string;
  created_at: string;
  /** Active API keys, the counter that enforces the 5-key limit (see {@link AccountRepository.reserveKeySlot}). */
  active_keys: number;
  tier_updated_at?: string;
  /**
   * Counts tier changes (0 for a new account, absent = 0 on accounts older than it). Every API-key
   * item carries the tier and this version it was copied at (lib/accounts/key-auth.ts).
   */
  tier_version?: number;
}

/** The account's tier and its {@link AccountRecord.tier_version}, as copied onto its key items. */
export interface TierStamp {
  tier: TierName;
  version: number;
}

/** Result of {@link AccountRepository.setTier}. */
export interface TierChange {
  account: AccountRecord;
  /** Hashes of the keys enlisted on the account (`key_hashes`): the key items that carry the tier. */
  keyHashes: string[];
}

/**
 * Where the accounts are kept (lib/store/account-table.ts): one record per account and one claim
 * per e-mail address. Every read is strongly consistent; every write is one conditional write of
 * one record, atomic on its own (no transactions).
 *
 * The account record also lists the hashes of its active API keys (and of older keys once they
 * have been used, see {@link enlistKey}): the key records that carry a copy of the tier. The list
 * is read back atomically with each tier change, so a tier change finds every such key.
 */
export interface AccountRepository {
  /** Writes a new account with the hashes of its first keys enlisted; never overwrites an existing account. */
  create(account: AccountRecord, keyHashes?: readonly string[]): Promise<void>;
  /**
   * Claims `email` for `accountId`; false when another account holds it. The one place where
   * uniqueness of e-mail addresses is decided: of N concurrent claims of one address, exactly one wins.
   */
  claimEmail(email: string, accountId: string, at: string): Promise<boolean>;
  /** Deletes an account (clean-up of a registration that lost its e-mail claim). */
  remove(accountId: string): Promise<void>;
  /** The account, or undefined. */
  get(accountId: string): Promise<AccountRecord | undefined>;
  /** The id of the account that claimed `email` (lower-cased), or undefined. */
  findIdByEmail(email: string): Promise<string | undefined>;
  /**
   * Sets the tier and counts the change in `tier_version`; with it, in the same atomic write, the
   * hashes of the keys enlisted at that moment. Undefined when there is no such account.
   */
  setTier(accountId: string, tier: TierName, at: string): Promise<TierChange | undefined>;
  /**
   * Takes one of the account's `max` key slots for the key `keyHash` and enlists the hash; the
   * account's tier stamp at that moment, or undefined when all slots are taken (or no such
   * account). Check and increment are one atomic write: of 20 concurrent calls with 0 keys and max 5, exactly 5 succeed.
   */
  reserveKeySlot(accountId: string, max: number, keyHash: string): Promise<TierStamp | undefined>;
  /** Gives back one key slot (never below zero) and withdraws the key's hash. */
  releaseKeySlot(accountId: string, keyHash: string): Promise<void>;
  /**
   * Enlists an existing key (one written before keys carried the tier) and reads the tier stamp
   * in the same atomic write. Undefined when there is no such account.
   */
  enlistKey(accountId: string, keyHash: string): Promise<TierStamp | undefined>;
}

/** The tier stamp of an account record. */
export function tierStamp(account: Pick<AccountRecord, 'tier' | 'tier_version'>): TierStamp {
  return { tier: account.tier, version: Number(account.tier_version ?? 0) };
}
