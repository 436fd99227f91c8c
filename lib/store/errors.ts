/**
 * What the DynamoDB adapter counts as an outage, without the SDK. The error it raises for one,
 * StoreUnavailableError, is the base's (lib/errors.ts): the domain and the HTTP layer see it
 * through the ports, without importing the store.
 */

/** Socket-level failures: the endpoint could not be reached or dropped the connection. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EPIPE', 'EADDRNOTAVAIL']);
/** SDK error names that mean "not now" rather than "not like this". */
const TRANSIENT_NAMES = new Set([
  'TimeoutError',
  'AbortError', // the call's overall deadline (lib/store/dynamo.ts)
  'RequestTimeout',
  'RequestTimeoutException',
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'ServiceUnavailable',
  'InternalServerError',
]);

/**
 * True when a DynamoDB call failed because the service is unavailable (after the SDK's own
 * retries), as opposed to a request the service refused (a lost condition, a validation error,
 * a missing table), which stays what it is.
 */
export function isStoreOutage(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { name?: unknown; code?: unknown; cause?: { code?: unknown }; $fault?: unknown; $metadata?: { httpStatusCode?: unknown } };
  if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return true;
  if (typeof e.cause?.code === 'string' && NETWORK_CODES.has(e.cause.code)) return true;
  if (typeof e.name === 'string' && TRANSIENT_NAMES.has(e.name)) return true;
  if (e.$fault === 'server') return true;
  const status = e.$metadata?.httpStatusCode;
  return typeof status === 'number' && status >= 500;
}
