import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Config } from '../config.js';
import { getConfig, getDb } from '../deps/core.js';
import { AccountRepository } from './account-repository.js';
import { AccountService } from './accounts.js';
import { ApiKeyRepository } from './api-key-repository.js';
import { ApiKeyService } from './api-keys.js';
import { type Clock, systemClock } from './clock.js';
import { TokenService } from './jwt.js';
import { type KmsDecrypt, cachedJwtSecret } from './jwt-secret.js';
import { createLimitService, type KeyAuthDeps } from './key-auth-deps.js';
import type { LimitService } from './limits.js';
import { type PasswordHasher, createScryptHasher } from './passwords.js';

/**
 * Everything the account endpoints and the auth/limit middleware use. A superset of KeyAuthDeps
 * (lib/accounts/key-auth-deps.ts), which is all that functions behind an API key resolve.
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

let productionHasher: PasswordHasher | undefined;

/** Wires repositories and services (the composition root of the accounts domain). */
export function createAccountDeps(options: AccountDepsOptions): AccountDeps {
  const { config, db } = options;
  const clock = options.clock ?? systemClock;
  const accountRepo = new AccountRepository(db, config.tables.accounts);
  const keyRepo = new ApiKeyRepository(db, config.tables.apiKeys);
  const secret = options.jwtSecret ?? (() => cachedJwtSecret(config.jwt, config.aws.region, options.kmsDecrypt));
  const tokens = new TokenService(secret, { issuer: config.jwt.issuer, audience: config.jwt.audience, ttlSeconds: config.jwt.ttlSeconds }, clock);
  const passwords = options.passwords ?? (productionHasher ??= createScryptHasher());
  return {
    config,
    clock,
    tokens,
    accounts: new AccountService({ accounts: accountRepo, keys: keyRepo, passwords, tokens, tiers: config.tiers, clock }),
    apiKeys: new ApiKeyService(keyRepo, accountRepo, clock),
    limits: createLimitService(config, db, clock),
  };
}

let cached: { config: Config; db: DynamoDBDocumentClient; deps: AccountDeps } | undefined;

/** The process-wide dependencies over getConfig()/getDb(), rebuilt if those were reset (tests). */
export const getAccountDeps: AccountDepsProvider = () => {
  const config = getConfig();
  const db = getDb();
  if (!cached || cached.config !== config || cached.db !== db) cached = { config, db, deps: createAccountDeps({ config, db }) };
  return cached.deps;
};
