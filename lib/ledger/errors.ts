/**
 * Errors of the ledger adapter. Messages are written for an API user and an operator: they say
 * what failed and what happened to the transaction, and never carry an RPC URL (it may embed a
 * provider API key), a private key, raw SDK text or a stack.
 */

/** Why the ledger could not be used. */
export type LedgerFailureReason =
  /** The node could not be reached: nothing was sent. */
  | 'unreachable'
  /** No answer in time: the request may or may not have reached the node. */
  | 'timeout'
  /** The node answered with an error (for a transaction: it refused it, nothing was sent). */
  | 'rejected'
  /** The wallet's nonce was taken by a transaction this service did not sign. */
  | 'nonce_conflict'
  /** The nonce counter or the transaction records in DynamoDB could not be read or written. */
  | 'store'
  /** The wallet key or KMS could not sign. */
  | 'signer'
  /** The signer or the node is not what the configuration says (address, chain id). */
  | 'misconfigured';

/** The ledger (node, wallet or its records) cannot be used right now: HTTP 503, code `ledger_unavailable`. */
export class LedgerUnavailableError extends Error {
  readonly code = 'ledger_unavailable' as const;
  readonly status = 503;

  constructor(
    message: string,
    readonly reason: LedgerFailureReason,
    /** A short, sanitised technical detail for logs (error code, RPC error text without URLs). */
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'LedgerUnavailableError';
  }
}

/** True for a LedgerUnavailableError (also across module copies). */
export function isLedgerUnavailable(error: unknown): error is LedgerUnavailableError {
  return error instanceof LedgerUnavailableError || (typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'ledger_unavailable');
}

/** A short description of any thrown value, with URLs and long hex (keys, raw transactions) removed. */
export function sanitizeDetail(error: unknown): string {
  let text: string;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    text = `${typeof code === 'string' ? `${code}: ` : ''}${(error as { shortMessage?: string }).shortMessage ?? error.message}`;
  } else {
    text = String(error);
  }
  return text
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi, '<url>')
    .replace(/0x[0-9a-f]{130,}/gi, '<hex>')
    .replace(/\s+/g, ' ')
    .slice(0, 300);
}
