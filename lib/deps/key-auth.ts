import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type Clock, systemClock } from '../accounts/clock.js';
import { ApiKeyAuthenticator, type KeyAuthenticator } from '../accounts/key-auth.js';
import { LimitService } from '../accounts/limits.js';
import type { Config } from '../config.js';
import { AccountTable } from '../store/account-table.js';
import { ApiKeyTable } from '../store/api-key-table.js';
import { CounterTable } from '../store/counter-table.js';
import { MeterTable } from '../store/meter-table.js';
import { getConfig, getDb } from './core.js';
import { lazy } from './lazy.js';

/**
 * What the API-key middleware and the limit middleware use: key authentication and the limit
 * counters, nothing else. Evidence and public functions resolve only this, so their bundles carry
 * neither the JWT code (jose) nor password hashing nor the account service (lib/deps/accounts.ts,
 * whose AccountDeps is a superset and can be passed wherever this is expected).
 */
export interface KeyAuthDeps {
  config: Config;
  clock: Clock;
  apiKeys: KeyAuthenticator;
  limits: LimitService;
}

/** Resolves the dependencies per request (the default resolves the process-wide ones lazily). */
export type KeyAuthDepsProvider = () => KeyAuthDeps;

/** The limit service over the configured counters table. */
export function createLimitService(config: Config, db: DynamoDBDocumentClient, clock: Clock): LimitService {
  return new LimitService(
    new CounterTable(db, config.tables.counters),
    new MeterTable(db, config.tables.counters),
    config.tiers,
    { publicPerMinute: config.publicRatePerMinute, accountPerMinute: config.accountRatePerMinute, authFailuresPerWindow: config.authFailuresPerWindow },
    clock,
  );
}

/** Wires the key authenticator and the limits. */
export function createKeyAuthDeps(options: { config: Config; db: DynamoDBDocumentClient; clock?: Clock }): KeyAuthDeps {
  const { config, db } = options;
  const clock = options.clock ?? systemClock;
  return {
    config,
    clock,
    apiKeys: new ApiKeyAuthenticator(new ApiKeyTable(db, config.tables.apiKeys), new AccountTable(db, config.tables.accounts), clock, config.apiKeyCacheMs),
    limits: createLimitService(config, db, clock),
  };
}

/** The process-wide dependencies over getConfig()/getDb() (rebuilt after resetCoreDeps()). */
export const getKeyAuthDeps: KeyAuthDepsProvider = /* @__PURE__ */ lazy(() => createKeyAuthDeps({ config: getConfig(), db: getDb() }));
