/**
 * `npm start`'s steps against the database and the chain node (the tables, the replay of the ledger's
 * transactions, a wallet rotation's end, the ML-DSA key's registration) are each idempotent and
 * resumable. One that meets a dependency that does not answer within its deadline (a node still
 * warming up, a machine under load) is tried again a bounded number of times, rather than failing
 * the whole start on one missed deadline. The deadline of each call stays as it is; what a step
 * meets that is not an outage (a refused transaction, a misconfigured signer) fails at once.
 */
import { isStoreUnavailable } from '../errors.js';
import { isLedgerUnavailable } from '../ledger/errors.js';

/** An outage that a later try may not meet: the database or the node did not answer, or the ledger's records could not be read. */
export function isTransientOutage(error: unknown): boolean {
  if (isStoreUnavailable(error)) return true;
  return isLedgerUnavailable(error) && (error.reason === 'unreachable' || error.reason === 'timeout' || error.reason === 'store');
}

export interface StartRetryOptions {
  /** Tries in all (default 5). */
  attempts?: number;
  /** The pause before the second try, doubled before each next one (default 500 ms). */
  firstPauseMs?: number;
  /** Told of each retry (one line for the operator). */
  onRetry?: (line: string) => void;
}

/** Runs `step`, again after a transient outage, at most `attempts` times; the last error is thrown. */
export async function retryStartStep<T>(what: string, step: () => Promise<T>, options: StartRetryOptions = {}): Promise<T> {
  const attempts = Math.max(1, options.attempts ?? 5);
  let pause = options.firstPauseMs ?? 500;
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if (attempt >= attempts || !isTransientOutage(error)) throw error;
      options.onRetry?.(`${what}: ${error instanceof Error ? error.message : String(error)}; trying again in ${pause} ms (${attempt} of ${attempts})`);
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause *= 2;
    }
  }
}
