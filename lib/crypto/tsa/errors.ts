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

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TsaUnavailableError';
  }
}
