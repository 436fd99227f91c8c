import { conflictError, invalid, notFoundError, unauthenticated } from '../errors.js';
import { describeError, log } from '../log.js';
import { type AccountRecord, type AccountRepository, tierStamp } from './account-repository.js';
import type { ApiKeyRepository } from './api-key-repository.js';
import { MAX_ACTIVE_KEYS, newApiKeyRecord } from './api-keys.js';
import { type Clock, systemClock } from './clock.js';
import type { IssuedToken, TokenService } from './jwt.js';
import { copyTierToKeys } from './key-auth.js';
import { MIN_PASSWORD_LENGTH, type PasswordHasher } from './passwords.js';
import { randomId } from './random.js';
import { type Feature, featuresOf, isTierName, limitsOf, type TierLimits, type TierName, type TierTable } from './tiers.js';

/** Body of `POST /account/register`. */
export interface RegisterInput {
  email: string;
  password: string;
  name?: string | null | undefined;
}

/** Response of `POST /account/register` (decisions.md "Accounts"). */
export interface Registration extends IssuedToken {
  account_id: string;
  email: string;
  tier: TierName;
  api_key: string;
  key_id: string;
}

/** Response of `POST /account/login`. */
export interface Login extends IssuedToken {
  account_id: string;
}

/** Response of `GET /account/info`. */
export interface AccountInfo {
  account_id: string;
  email: string;
  name: string | null;
  tier: TierName;
  created_at: string;
  active_keys: number;
  max_keys: number;
  limits: TierLimits;
  features: Feature[];
}

/** What {@link AccountService} works with. */
export interface AccountServiceDeps {
  accounts: AccountRepository;
  keys: ApiKeyRepository;
  passwords: PasswordHasher;
  tokens: TokenService;
  tiers: TierTable;
  clock?: Clock;
}

/** E-mail addresses are compared and stored lower-cased and trimmed (decisions.md "Accounts"). */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Accounts: registration, login, information and tier changes. */
export class AccountService {
  private readonly clock: Clock;

  constructor(private readonly deps: AccountServiceDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  /**
   * Creates an account on the Free tier with its first API key, and returns both with a JWT.
   * Throws 409 `email_exists` when the address is taken (after hashing the password all the
   * same, so both answers cost one scrypt), 400 `password_too_short` under 12 characters.
   *
   * Without transactions the writes are ordered so that a crash at any point leaves nothing that
   * blocks a retry: (1) the account item, under a new random id; (2) its first key (stored as a
   * hash only; the clear key has not left the process); (3) the e-mail claim, a conditional put,
   * which is the commit point. Before (3) every item written is unreachable (nothing leads to the
   * account id, nobody knows the key), so a retry starts afresh; if (3) loses against a
   * concurrent registration, (1) and (2) are deleted and the caller gets 409. After (3) the account
   * is complete: every claim points at a finished account. The token is signed before any write,
   * so a JWT-secret problem fails before anything is stored. The key carries the account's tier
   * stamp (Free, version 0) and the account item enlists it (lib/accounts/key-auth.ts); no tier
   * change can come in between, as nothing leads to the account id before the answer.
   */
  async register(input: RegisterInput): Promise<Registration> {
    const email = normaliseEmail(input.email);
    if ([...input.password].length < MIN_PASSWORD_LENGTH) {
      throw invalid('password_too_short', `The password must have at least ${MIN_PASSWORD_LENGTH} characters.`);
    }
    // The password is hashed whether or not the address is taken, alongside the early look-up
    // for the common duplicate: the 409 then costs the same scrypt as a registration and does
    // not tell by its speed which e-mails exist (decisions.md "Accounts"). The claim in step (3)
    // is what decides.
    const [existing, passwordHash] = await Promise.all([this.deps.accounts.findIdByEmail(email), this.deps.passwords.hash(input.password)]);
    if (existing) throw emailExists();

    const now = this.clock();
    const accountId = randomId('acc');
    const token = await this.deps.tokens.issue(accountId);
    const account: AccountRecord = {
      account_id: accountId,
      email,
      name: input.name ?? null,
      tier: 'free',
      password_hash: passwordHash,
      created_at: now.toISOString(),
      active_keys: 1, // the first key, written next
      tier_version: 0,
    };
    const { apiKey, record: key } = newApiKeyRecord(accountId, 'default', now, tierStamp(account));

    await this.deps.accounts.create(account, [key.key_hash]);
    try {
      await this.deps.keys.create(key);
    } catch (error) {
      await this.cleanUp(accountId, undefined);
      throw error;
    }
    if (!(await this.deps.accounts.claimEmail(email, accountId, now.toISOString()))) {
      await this.cleanUp(accountId, key.key_hash);
      throw emailExists();
    }
    return { account_id: accountId, email, tier: 'free', api_key: apiKey, key_id: key.key_id, ...token };
  }

  /**
   * A JWT for valid credentials; otherwise 401 `invalid_credentials`, the same answer for an
   * unknown e-mail and a wrong password. An unknown e-mail still costs one scrypt verification
   * (against the hasher's dummy hash), so both failures take about as long.
   */
  async login(emailInput: string, password: string): Promise<Login> {
    const email = normaliseEmail(emailInput);
    const accountId = await this.deps.accounts.findIdByEmail(email);
    const account = accountId ? await this.deps.accounts.get(accountId) : undefined;
    const valid = await this.deps.passwords.verify(password, account?.password_hash ?? this.deps.passwords.dummyHash);
    if (!account || !valid) throw unauthenticated('invalid_credentials', 'The e-mail address or the password is wrong.');
    const token = await this.deps.tokens.issue(account.account_id);
    return { ...token, account_id: account.account_id };
  }

  /** The account's information; 404 `account_not_found` when it does not exist. */
  async info(accountId: string): Promise<AccountInfo> {
    const account = await this.get(accountId);
    return {
      account_id: account.account_id,
      email: account.email,
      name: account.name,
      tier: account.tier,
      created_at: account.created_at,
      active_keys: account.active_keys,
      max_keys: MAX_ACTIVE_KEYS,
      limits: limitsOf(this.deps.tiers, account.tier),
      features: featuresOf(account.tier),
    };
  }

  /** The account, or 404 `account_not_found`. */
  async get(accountId: string): Promise<AccountRecord> {
    const account = await this.deps.accounts.get(accountId);
    if (!account) throw notFoundError('account_not_found', `There is no account "${accountId}".`);
    return account;
  }

  /** The account named by an e-mail address (contains `@`) or an account id; undefined when none. */
  async find(emailOrId: string): Promise<AccountRecord | undefined> {
    const id = emailOrId.includes('@') ? await this.deps.accounts.findIdByEmail(normaliseEmail(emailOrId)) : emailOrId;
    return id ? this.deps.accounts.get(id) : undefined;
  }

  /**
   * Moves an account to `tier` (operators and billing); 404 `account_not_found`, 400 `unknown_tier`.
   * Answers only once the account's API keys carry the new tier (lib/accounts/key-auth.ts); if
   * copying fails the call fails, and running it again completes it.
   */
  async setTier(accountId: string, tier: string): Promise<{ account_id: string; tier: TierName }> {
    if (!isTierName(tier)) throw invalid('unknown_tier', `Unknown tier "${tier}" (known: free, starter, pro, enterprise).`);
    const change = await this.deps.accounts.setTier(accountId, tier, this.clock().toISOString());
    if (!change) throw notFoundError('account_not_found', `There is no account "${accountId}".`);
    await copyTierToKeys(this.deps.keys, change.keyHashes, tierStamp(change.account));
    return { account_id: change.account.account_id, tier: change.account.tier };
  }

  /** Best effort: what is left behind is unreachable anyway (see {@link register}). */
  private async cleanUp(accountId: string, keyHash: string | undefined): Promise<void> {
    try {
      if (keyHash) await this.deps.keys.remove(keyHash);
      await this.deps.accounts.remove(accountId);
    } catch (error) {
      log.warn('registration clean-up failed; the items left are unreachable', { account_id: accountId, ...describeError(error) });
    }
  }
}

function emailExists() {
  return conflictError('email_exists', 'An account with this e-mail address already exists. Log in instead (POST /api/v2/account/login).');
}
