/**
 * The errors the domain (lib/evidence, lib/accounts) throws. They say what went wrong in the
 * domain's terms — a kind and a stable machine-readable code — and know nothing of HTTP: the one
 * error handler of the API (lib/http/app.ts renderError) maps each kind to a status and renders
 * problem+json (RFC 9457). The `code` is what clients switch on, so it never changes meaning.
 */
export type DomainErrorKind =
  /** The input breaks a rule (400). */
  | 'invalid'
  /** The caller is not who it claims (401). */
  | 'unauthenticated'
  /** The caller may not do this (403), e.g. its tier lacks the feature. */
  | 'forbidden'
  /** Nothing of that name the caller may see (404). */
  | 'not_found'
  /** The state of the resource forbids it (409). */
  | 'conflict'
  /** A limit was reached (429); `retryAfterSeconds` says when to come back. */
  | 'limited'
  /** A dependency is down; nothing was recorded that blocks a retry (503). */
  | 'unavailable';

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    readonly code: string,
    readonly detail: string,
    /** Extra members for the problem document, e.g. `next_index` or `expected_chain_hash`. */
    readonly extensions: Record<string, unknown> = {},
    /** For 'limited' and 'unavailable': when a retry makes sense. */
    readonly retryAfterSeconds?: number,
  ) {
    super(detail);
    this.name = 'DomainError';
  }
}

export const invalid = (code: string, detail: string, extensions?: Record<string, unknown>) => new DomainError('invalid', code, detail, extensions);
export const unauthenticated = (code: string, detail: string) => new DomainError('unauthenticated', code, detail);
export const forbiddenError = (code: string, detail: string, extensions?: Record<string, unknown>) => new DomainError('forbidden', code, detail, extensions);
export const notFoundError = (code: string, detail: string, extensions?: Record<string, unknown>) => new DomainError('not_found', code, detail, extensions);
export const conflictError = (code: string, detail: string, extensions?: Record<string, unknown>, retryAfterSeconds?: number) =>
  new DomainError('conflict', code, detail, extensions, retryAfterSeconds);
export const unavailable = (code: string, detail: string, retryAfterSeconds = 5) => new DomainError('unavailable', code, detail, {}, retryAfterSeconds);

/**
 * The database cannot be used right now (unreachable, timed out, throttled, or a server-side fault):
 * what a store port raises (lib/store: dynamo.ts), HTTP 503 `database_unavailable`. Nothing was
 * recorded that blocks a retry; a write that timed out may have landed (the state machines allow for it).
 */
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
