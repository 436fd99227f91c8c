import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AccountService } from '../accounts/accounts.js';
import { ApiKeyService } from '../accounts/api-keys.js';
import { type Clock, systemClock } from '../accounts/clock.js';
import { TokenService } from '../accounts/jwt.js';
import { type KmsDecrypt, cachedJwtSecret } from '../accounts/jwt-secret.js';
import type { LimitService } from '../accounts/limits.js';
import { type PasswordHasher, createScryptHasher } from '../accounts/passwords.js';
import type { Config } from '../config.js';
import { kmsDecrypt } from '../crypto/kms-decrypt.js';
import { AccountTable } from '../store/account-table.js';
import { ApiKeyTable } from '../store/api-key-table.js';
import { getConfig, getDb } from './core.js';
import { createLimitService, type KeyAuthDeps } from './key-auth.js';
import { getKmsClient } from './kms.js';
import { lazy } from './lazy.js';

/**
 * Everything the account endpoints and the auth/limit middleware use. A superset of KeyAuthDeps
 * (lib/deps/key-auth.ts), which is all that functions behind an API key resolve.
 */
export interface AccountDeps extends KeyAuthDeps {
  config: Config;
  clock: Clock;
  accounts: AccountService;
  apiKeys: ApiKeyService;
  limits: LimitService;
  tokens: TokenService;
}

/** Resolves the dependencies per request (the default resolves the process-wide ones lazily). */
export type AccountDepsProvider = () => AccountDeps;

/** Inputs of {@link createAccountDeps}; everything but `config` and `db` has a production default. */
export interface AccountDepsOptions {
  config: Config;
  db: DynamoDBDocumentClient;
  clock?: Clock;
  /** Tests that hash many passwords pass a cheaper hasher; production uses N = 2^15. */
  passwords?: PasswordHasher;
  /** The HS256 secret; by default read once from the configured source (file, env or KMS). */
  jwtSecret?: () => Promise<Uint8Array>;
  kmsDecrypt?: KmsDecrypt;
}

/** Production hashing (N = 2^15), shared by every build of the account dependencies. */
const productionHasher = /* @__PURE__ */ lazy(createScryptHasher);

/** Wires repositories and services (the composition root of the accounts domain). */
export function createAccountDeps(options: AccountDepsOptions): AccountDeps {
  const { config, db } = options;
  const clock = options.clock ?? systemClock;
  const accountRepo = new AccountTable(db, config.tables.accounts);
  const keyRepo = new ApiKeyTable(db, config.tables.apiKeys);
  // KMS only for a KMS-encrypted secret: the process's one KMS client is built when the secret is first read.
  const decrypt: KmsDecrypt = options.kmsDecrypt ?? ((ciphertext) => kmsDecrypt(getKmsClient())(ciphertext));
  const secret = options.jwtSecret ?? (() => cachedJwtSecret(config.jwt, decrypt));
  const tokens = new TokenService(secret, { issuer: config.jwt.issuer, audience: config.jwt.audience, ttlSeconds: config.jwt.ttlSeconds }, clock);
  const passwords = options.passwords ?? productionHasher();
  return {
    config,
    clock,
    tokens,
    accounts: new AccountService({ accounts: accountRepo, keys: keyRepo, passwords, tokens, tiers: config.tiers, clock }),
    apiKeys: new ApiKeyService(keyRepo, accountRepo, clock),
    limits: createLimitService(config, db, clock),
  };
}

/** The process-wide dependencies over getConfig()/getDb() (rebuilt after resetCoreDeps()). */
export const getAccountDeps: AccountDepsProvider = /* @__PURE__ */ lazy(() => createAccountDeps({ config: getConfig(), db: getDb() }));
