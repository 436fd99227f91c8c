/**
 * Errors of the time-stamping adapters.
 */

/**
 * The time-stamping authority could not give a token that verifies: it did not answer in time,
 * answered with an HTTP error, or its reply failed a check. The message says which, and never
 * carries credentials (user-info and query of the TSA URL are left out).
 */
export class TsaUnavailableError extends Error {
  /** Stable machine-readable code, for API error bodies. */
  readonly code = 'tsa_unavailable' as const;
  /** The HTTP status a remote TSA answered with, when it answered with an error (a client says what it means: 401, 403, 429). */
  readonly httpStatus: number | undefined;

  constructor(message: string, options?: ErrorOptions & { httpStatus?: number }) {
    super(message, options);
    this.name = 'TsaUnavailableError';
    this.httpStatus = options?.httpStatus;
  }
}
