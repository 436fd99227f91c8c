import { describeError, log } from '../log.js';
import { ProcessCache } from '../memo.js';
import type { AccountRepository, TierStamp } from './account-repository.js';
import { hashApiKey, isWellFormedApiKey } from './api-key-format.js';
import type { ApiKeyRecord, ApiKeyRepository } from './api-key-repository.js';
import { type Clock, systemClock } from './clock.js';
import { isTierName, type TierName } from './tiers.js';

/**
 * Authentication of API keys: on the hot path one strongly consistent GetItem of the key item.
 *
 * The tier on the key. Each key item carries a copy of its account's tier together with the
 * account's `tier_version` (a count of tier changes); the account item stays the source of truth.
 * The copies are kept equal to it without transactions and without the `by_account` index (which
 * DynamoDB updates only eventually):
 * - the account item enlists the hash of every key that carries a copy (`key_hashes`). Enlisting a
 *   key and reading the tier stamp are one atomic write: the account's PutItem at register, the
 *   slot reservation at key creation, {@link ApiKeyAuthenticator} for a key older than the copies.
 *   A tier change sets the tier and reads the enlisted hashes in one atomic write as well;
 * - a copy is written only over an older version (ApiKeyRepository.setTier), so concurrent tier
 *   changes that reach the keys in either order leave the latest one;
 * - a tier change copies its stamp onto every enlisted key before it answers ({@link copyTierToKeys});
 * - key creation writes the key with the stamp read by its reservation, then re-reads the account
 *   and copies the newer stamp if the tier changed in between (ApiKeyService.create).
 * Why that suffices: take a tier change C and a key K enlisted before it (a key enlisted after C
 * reads C's stamp or a newer one). C reads K's hash. If K's item exists when C updates it, K gets
 * C's stamp. If not, K's creator writes K after C's update attempt and re-reads the account after
 * that, so it sees C's version and copies it. Either way K holds C's stamp (or a newer one) before
 * C answers or before K's creation answers, whichever is later; the clear key is disclosed only by
 * that answer. A re-list of the index instead would miss a key the index has not caught up with.
 *
 * Account state: accounts have no status and are never deleted once registered. The one removal,
 * the clean-up of a registration that lost its e-mail claim, deletes the key item before the
 * account item and never discloses the key. So reading the key alone drops no check that reading
 * the account made. Suspending or deleting accounts, if ever added, must deactivate their keys
 * (or copy the state onto them by the same rules).
 */

/** `last_used_at` is written at most once per key and this interval (keeps the hot path at one read). */
export const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * The longest an instance may answer from a key it read before (API_KEY_CACHE_MS, default and
 * maximum): a deactivation, or a tier change, reaches every instance within this bound. The
 * instance that makes the change forgets the key at once ({@link forgetAuthenticatedKeys}), so
 * with `npm start` (one process) it takes effect with the very next request.
 */
export const MAX_KEY_CACHE_MS = 5_000;

/**
 * Keys this process authenticated, by key hash, each with the time until which it may be answered
 * from here (decisions.md "API keys"): the key's GetItem leaves the hot path, one read per key and
 * instance every API_KEY_CACHE_MS at most. Only a key that authenticated is kept: an unknown or
 * deactivated key is read every time (a refusal is never cached, so a new key works at once).
 */
const authenticated = new ProcessCache<string, { caller: AuthenticatedKey; until: number }>('authenticated API keys (≤ API_KEY_CACHE_MS)', 10_000);

/** Forgets keys this process may answer from memory: their deactivation or tier change is seen by the next request here. */
export function forgetAuthenticatedKeys(keyHashes: Iterable<string>): void {
  for (const hash of keyHashes) authenticated.delete(hash);
}

/** The caller behind a valid, active API key. */
export interface AuthenticatedKey {
  accountId: string;
  keyId: string;
  tier: TierName;
}

/** What the API-key middleware needs of the key service. */
export interface KeyAuthenticator {
  authenticate(apiKey: string): Promise<AuthenticatedKey | undefined>;
}

/**
 * Copies a tier stamp onto the given keys (all at once; a key that is gone or already holds this
 * version or a newer one is left as it is). Throws when a write fails: the tier change must not
 * answer as done while a key may still carry the old tier.
 */
export async function copyTierToKeys(keys: ApiKeyRepository, keyHashes: readonly string[], stamp: TierStamp): Promise<void> {
  await Promise.all(keyHashes.map((hash) => keys.setTier(hash, stamp.tier, stamp.version)));
  forgetAuthenticatedKeys(keyHashes);
}

/** API-key authentication (the part of the key service that evidence functions load). */
export class ApiKeyAuthenticator implements KeyAuthenticator {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly accounts: AccountRepository,
    private readonly clock: Clock = systemClock,
    /** API_KEY_CACHE_MS: how long a key read may answer later requests of this process (0: never; at most {@link MAX_KEY_CACHE_MS}). */
    private readonly cacheMs = 0,
  ) {
    if (!(cacheMs >= 0 && cacheMs <= MAX_KEY_CACHE_MS)) throw new Error(`the API key cache holds a key at most ${MAX_KEY_CACHE_MS} ms`);
  }

  /**
   * The caller behind `apiKey`, or undefined for a malformed key (no database access), an unknown
   * or deactivated key, or a key whose account is gone. Round trips: none while this process read
   * the key less than `cacheMs` ago; otherwise one strongly consistent GetItem of the key, which
   * carries the tier, and about once a minute per key the `last_used_at` write. A key older than
   * the tier copies takes one more (the account's enlisting write, in parallel with `last_used_at`)
   * and one to store its copy, once.
   */
  async authenticate(apiKey: string): Promise<AuthenticatedKey | undefined> {
    if (!isWellFormedApiKey(apiKey)) return undefined;
    const hash = hashApiKey(apiKey);
    const now = this.clock().getTime();
    const hit = this.cacheMs > 0 ? authenticated.get(hash) : undefined;
    if (hit && now < hit.until && now >= hit.until - this.cacheMs) return hit.caller;
    const caller = await this.read(hash);
    if (caller && this.cacheMs > 0) authenticated.set(hash, { caller, until: now + this.cacheMs });
    else authenticated.delete(hash);
    return caller;
  }

  private async read(keyHash: string): Promise<AuthenticatedKey | undefined> {
    const key = await this.keys.getByHash(keyHash);
    if (!key || key.active !== true) return undefined;
    if (isTierName(key.tier)) {
      await this.recordUse(key);
      return { accountId: key.account_id, keyId: key.key_id, tier: key.tier };
    }
    const [stamp] = await Promise.all([this.enlist(key), this.recordUse(key)]);
    if (!stamp) return undefined;
    return { accountId: key.account_id, keyId: key.key_id, tier: stamp.tier };
  }

  /** A key without a copy: enlist it on its account (reading the stamp) and store the copy. */
  private async enlist(key: ApiKeyRecord): Promise<TierStamp | undefined> {
    const stamp = await this.accounts.enlistKey(key.account_id, key.key_hash);
    if (!stamp) return undefined;
    try {
      await this.keys.setTier(key.key_hash, stamp.tier, stamp.version);
    } catch (error) {
      // The stamp was read from the account itself; without the copy the next request enlists again.
      log.warn('api key tier copy not stored', { key_id: key.key_id, ...describeError(error) });
    }
    return stamp;
  }

  private async recordUse(key: ApiKeyRecord): Promise<void> {
    const now = this.clock();
    const notAfter = new Date(now.getTime() - LAST_USED_RESOLUTION_MS).toISOString();
    if (key.last_used_at !== undefined && key.last_used_at >= notAfter) return;
    try {
      await this.keys.touch(key.key_hash, now.toISOString(), notAfter);
    } catch (error) {
      // Bookkeeping only: a failed write must not fail the request it describes.
      log.warn('api key last_used_at not recorded', { key_id: key.key_id, ...describeError(error) });
    }
  }
}
