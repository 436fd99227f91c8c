/**
 * Errors of the DynamoDB adapter, without the SDK: imported by the error renderer of every
 * function, so it must stay this small.
 */

/** DynamoDB cannot be used right now (unreachable, timed out, throttled, or a server-side fault): HTTP 503 `database_unavailable`. */
export class StoreUnavailableError extends Error {
  readonly code = 'database_unavailable' as const;
  readonly status = 503;

  constructor(
    /** A short, sanitised technical detail for logs (the SDK error's name and code, never its message: it names the endpoint). */
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super('The database cannot be reached right now', options);
    this.name = 'StoreUnavailableError';
  }
}

/** True for a StoreUnavailableError (also across module copies). */
export function isStoreUnavailable(error: unknown): error is StoreUnavailableError {
  return error instanceof StoreUnavailableError || (typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'database_unavailable');
}

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
