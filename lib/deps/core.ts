import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type Config, loadConfig } from '../config.js';
import { createDocumentClient } from '../store/dynamo.js';
import { lazy, resetDeps } from './lazy.js';
import { watchPort } from './port-hooks.js';

/**
 * What every function needs: the validated configuration and the DynamoDB client. The other
 * files of lib/deps build on these; each Lambda imports only the ones it uses, so that functions
 * which do not anchor never load the signers, the TSA or ethers (lib/deps/anchoring.ts), and
 * functions behind an API key never load jose or scrypt (lib/deps/accounts.ts).
 */
export const getConfig: () => Config = /* @__PURE__ */ lazy(loadConfig);

export const getDb: () => DynamoDBDocumentClient = /* @__PURE__ */ lazy(
  () => {
    const { aws } = getConfig();
    return watchPort('dynamodb', createDocumentClient({ region: aws.region, endpoint: aws.dynamoEndpoint, attemptTimeoutMs: aws.dynamoAttemptTimeoutMs, deadlineMs: aws.dynamoDeadlineMs }));
  },
  (db) => db.destroy(),
);

/** Forgets the configuration and every client and service built from it (tests that change the environment). */
export function resetCoreDeps(): void {
  resetDeps();
}
