import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { isLedgerUnavailable } from '../ledger/errors.js';
import { isStoreUnavailable } from '../errors.js';
import { PROBLEM_TITLES, problemTypePath } from './problem-titles.js';

/**
 * The one error family of the API. Every error a client sees is one of these, rendered by
 * `onError` as RFC 9457 problem+json with a stable machine-readable `code`.
 */
export class HttpError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    readonly title: string,
    readonly detail: string,
    /** Extra members of the problem document (RFC 9457 §3.2), e.g. `errors` or `required_tier`. */
    readonly extensions: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'HttpError';
  }

  /**
   * The problem document (RFC 9457 §3.1): `type` names the problem type's page (relative here;
   * the app factory makes it absolute under PUBLIC_BASE_URL), `title` summarises the type (the
   * same for every occurrence: lib/http/problem-titles.ts; the status phrase for a code not in it).
   */
  toJSON(): Record<string, unknown> {
    return {
      type: problemTypePath(this.code),
      title: PROBLEM_TITLES[this.code] ?? this.title,
      status: this.status,
      detail: this.detail,
      code: this.code,
      ...this.extensions,
    };
  }
}


export const badRequest = (code: string, detail: string, extensions?: Record<string, unknown>) =>
  new HttpError(400, code, 'Bad Request', detail, extensions);
export const unauthorized = (code: string, detail: string) =>
  new HttpError(401, code, 'Unauthorized', detail, {}, { 'WWW-Authenticate': 'Bearer' });
export const forbidden = (code: string, detail: string, extensions?: Record<string, unknown>) =>
  new HttpError(403, code, 'Forbidden', detail, extensions);
export const notFound = (code: string, detail: string, extensions?: Record<string, unknown>) =>
  new HttpError(404, code, 'Not Found', detail, extensions);
export const conflict = (code: string, detail: string, extensions?: Record<string, unknown>) =>
  new HttpError(409, code, 'Conflict', detail, extensions);
// Connection: close, because the body was not read: the server then closes the connection at once
// and the client opens a fresh one, instead of reusing a socket the server drops ~500 ms later
// (@hono/node-server's drain timeout), which failed the client's next request (measured: `UND_ERR_SOCKET other side closed`; bodies up to ~128 KiB drain fine).
export const payloadTooLarge = (detail: string) => new HttpError(413, 'payload_too_large', 'Payload Too Large', detail, {}, { Connection: 'close' });
export const tooManyRequests = (code: string, detail: string, retryAfterSeconds: number, extensions?: Record<string, unknown>) =>
  new HttpError(429, code, 'Too Many Requests', detail, extensions, { 'Retry-After': String(retryAfterSeconds) });
export const serviceUnavailable = (code: string, detail: string, retryAfterSeconds = 5) =>
  new HttpError(503, code, 'Service Unavailable', detail, {}, { 'Retry-After': String(retryAfterSeconds) });
export const notImplemented = (detail: string) => new HttpError(501, 'not_implemented', 'Not Implemented', detail);

/**
 * The adapters' "dependency down" errors as the 503 a client sees (decisions.md "Faults and retries":
 * public reads answer 503 problem+json, never another 5xx). The detail names the dependency and
 * nothing else: the adapter's message may name a host and port, and an SDK's names its endpoint.
 * undefined for any other error.
 */
export function dependencyUnavailable(error: unknown): HttpError | undefined {
  if (isLedgerUnavailable(error)) {
    return serviceUnavailable('ledger_unavailable', 'The ledger node cannot be read right now; no verdict was given on a proof that was not checked. Retry shortly.');
  }
  if (isStoreUnavailable(error)) {
    return serviceUnavailable('database_unavailable', 'The database cannot be reached right now; nothing was read or changed. Retry shortly.');
  }
  return undefined;
}
