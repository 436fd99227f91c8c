import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { StoreUnavailableError } from '../errors.js';
import { isStoreOutage } from './errors.js';
import { installResendSafeWrites } from './resend-safe.js';
import { DYNAMO_ATTEMPT_TIMEOUT_MS, DYNAMO_DEADLINE_MS } from './table-definitions.js';

export { DYNAMO_ATTEMPT_TIMEOUT_MS, DYNAMO_DEADLINE_MS, TABLE_DEFINITIONS, TABLE_KEYS } from './table-definitions.js';
export type { TableDefinition, TableKey, TableNames } from './table-definitions.js';

export interface DynamoSettings {
  region: string;
  /** Set for the embedded dynalite server; unset in AWS (the SDK resolves the regional endpoint). */
  endpoint?: string | undefined;
  /** Per attempt: connecting and the whole request and response (default 1500 ms). */
  attemptTimeoutMs?: number;
  /** Per call, the SDK's retries included (default 3500 ms): the call then fails as an outage. */
  deadlineMs?: number;
}

/**
 * A DocumentClient over the real AWS SDK. Against the embedded server the credentials are
 * placeholders (dynalite does not check them); in AWS the default provider chain (the Lambda role) is used.
 *
 * Every call has two deadlines (decisions.md "Faults of the parts"): each attempt (connect, request,
 * response) ends after `attemptTimeoutMs` and is retried by the SDK (3 attempts), and the call as
 * a whole ends after `deadlineMs`, retries included. A database that hangs (a frozen process, a
 * partition) therefore costs a public read at most `deadlineMs` before its 503, never forever. A
 * write whose deadline fires may still have landed: every write of the state machines is
 * conditional on the state it was computed from, so its retry, or the next reader, finds out.
 */
export function createDocumentClient(settings: DynamoSettings): DynamoDBDocumentClient {
  const attemptMs = settings.attemptTimeoutMs ?? DYNAMO_ATTEMPT_TIMEOUT_MS;
  const deadlineMs = settings.deadlineMs ?? DYNAMO_DEADLINE_MS;
  const client = new DynamoDBClient({
    region: settings.region,
    ...(settings.endpoint
      ? { endpoint: settings.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
    maxAttempts: 3,
    requestHandler: { connectionTimeout: attemptMs, requestTimeout: attemptMs, throwOnRequestTimeout: true, socketTimeout: attemptMs },
  });

  // One place for outages: a call that still fails after the SDK's retries because DynamoDB is
  // unreachable or failing becomes StoreUnavailableError (HTTP 503 database_unavailable, see
  // lib/http/errors.ts). Outermost step, so it sees the final error; refusals (conditions,
  // validation) pass through unchanged.
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        if (!isStoreOutage(error)) throw error;
        const e = error as { name?: string; code?: string };
        throw new StoreUnavailableError([e.name, e.code].filter(Boolean).join(' '), { cause: error });
      }
    },
    { step: 'initialize', name: 'storeOutageMiddleware', priority: 'high' },
  );
  // A conditional write the SDK sent again after a late answer recognises its own first attempt.
  installResendSafeWrites(client);
  // The service never gives the SDK a logger (its own log lines say what failed), yet the SDK's
  // logger step builds a filtered copy of every input and output for the no-op logger it has. It
  // is removed: a V8 profile of 4,000 requests on dynalite put 0.04 ms per request in that copy,
  // about 2 % of a request's CPU here (bench/sdk-request.ts compares the clients). The HTTP agent
  // stays the SDK's default, which is already what a hot path wants: keep-alive, at most 50
  // sockets per host, requests beyond that queue on the client rather than open connections.
  client.middlewareStack.remove('loggerMiddleware');
  const documents = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true },
  });
  // The overall deadline: an abort signal on every call that has none of its own (the document
  // client sends through its own send(), over the client's middleware stack and handler).
  withDeadline(client, deadlineMs);
  withDeadline(documents, deadlineMs);
  return documents;
}

function withDeadline(target: { send: unknown }, deadlineMs: number): void {
  type Send = (command: unknown, options?: { abortSignal?: AbortSignal }) => Promise<unknown>;
  const send = (target.send as Send).bind(target);
  target.send = ((command: unknown, options?: { abortSignal?: AbortSignal }) =>
    send(command, { ...options, abortSignal: options?.abortSignal ?? AbortSignal.timeout(deadlineMs) })) as Send;
}

/** True when a write lost its condition (the expected outcome of a race, not a fault). */
export function isConditionalCheckFailed(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    'name' in error &&
    (error as { name: unknown }).name === 'ConditionalCheckFailedException'
  );
}
