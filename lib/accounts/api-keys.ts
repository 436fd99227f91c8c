import type { TierName } from '../config.js';
import { conflict, notFound } from '../http/errors.js';
import { log, describeError } from '../log.js';
import type { AccountRepository } from './account-repository.js';
import type { ApiKeyRecord, ApiKeyRepository } from './api-key-repository.js';
import { apiKeyDisplayPrefix, generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key-format.js';
import { type Clock, systemClock } from './clock.js';
import { randomId } from './random.js';

/** At most this many active keys per account (api-v2.md "Limits"). */
export const MAX_ACTIVE_KEYS = 5;

/** `last_used_at` is written at most once per key and this interval (keeps the hot path at one read). */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** The caller behind a valid, active API key. */
export interface AuthenticatedKey {
  accountId: string;
  keyId: string;
  tier: TierName;
}

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

/** Builds a new key and the record that stores it (only its hash). */
export function newApiKeyRecord(accountId: string, name: string | null, now: Date): { apiKey: string; record: ApiKeyRecord } {
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
    },
  };
}

/** API keys: creation within the 5-key limit, listing, deactivation and authentication. */
export class ApiKeyService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly accounts: AccountRepository,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * Creates a key for `accountId`. A key slot is reserved on the account first (the conditional
   * counter), then the key is stored; if storing fails the slot is given back. A crash between
   * the two leaves one slot taken by no key: the limit errs on the safe side (never a sixth key).
   * Throws 409 `key_limit_reached` when 5 keys are active.
   */
  async create(accountId: string, name: string | null): Promise<NewApiKey> {
    if (!(await this.accounts.reserveKeySlot(accountId, MAX_ACTIVE_KEYS))) {
      if (!(await this.accounts.get(accountId))) throw notFound('account_not_found', 'The account of this token does not exist.');
      throw conflict(
        'key_limit_reached',
        `This account already has ${MAX_ACTIVE_KEYS} active API keys, the most allowed. Deactivate one (DELETE /api/v2/account/keys/{key_id}) to create another.`,
        { max_keys: MAX_ACTIVE_KEYS },
      );
    }
    const { apiKey, record } = newApiKeyRecord(accountId, name, this.clock());
    try {
      await this.keys.create(record);
    } catch (error) {
      await this.accounts.releaseKeySlot(accountId);
      throw error;
    }
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
    if (result.outcome === 'not_found') throw keyNotFound(keyId);
    // The slot is released only by the one request that flipped `active` (the conditional update).
    if (result.outcome === 'deactivated') await this.accounts.releaseKeySlot(accountId);
    return { key_id: keyId, active: false, deactivated_at: result.record.deactivated_at ?? this.clock().toISOString() };
  }

  /**
   * The caller behind `apiKey`, or undefined for a malformed key (no database access), an unknown
   * or deactivated key, or a key whose account is gone. Round trips: one strongly consistent
   * GetItem of the key, then the account's GetItem (its tier), in parallel with the rare
   * `last_used_at` write (about once a minute per key).
   */
  async authenticate(apiKey: string): Promise<AuthenticatedKey | undefined> {
    if (!isWellFormedApiKey(apiKey)) return undefined;
    const key = await this.keys.getByHash(hashApiKey(apiKey));
    if (!key || key.active !== true) return undefined;
    const [account] = await Promise.all([this.accounts.get(key.account_id), this.recordUse(key)]);
    if (!account) return undefined;
    return { accountId: account.account_id, keyId: key.key_id, tier: account.tier };
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
  return notFound('key_not_found', `This account has no API key with id "${keyId}".`);
}
