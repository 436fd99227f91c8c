import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type Config, loadConfig } from '../config.js';
import { createDocumentClient } from '../store/dynamo.js';

/**
 * The composition root for what every function needs: the validated configuration and the
 * DynamoDB client. Built once per process (per Lambda container) on first use. Heavier
 * adapters (ML-DSA, TSA, ledger) live in lib/deps/anchoring.ts so that functions which do not
 * anchor never load them.
 */
let config: Config | undefined;
let db: DynamoDBDocumentClient | undefined;

export function getConfig(): Config {
  config ??= loadConfig();
  return config;
}

export function getDb(): DynamoDBDocumentClient {
  db ??= createDocumentClient({ region: getConfig().aws.region, endpoint: getConfig().aws.dynamoEndpoint });
  return db;
}

const resetHooks: (() => void)[] = [];

/** Lets another composition module forget what it built from the old configuration. */
export function onDepsReset(hook: () => void): void {
  resetHooks.push(hook);
}

/** Forgets the cached configuration and clients (tests that change the environment). */
export function resetCoreDeps(): void {
  db?.destroy();
  config = undefined;
  db = undefined;
  for (const hook of resetHooks) hook();
}
