/**
 * Keeps what the stand-alone endpoints answered (POST /api/v2/evidence/timestamp and /sign) for
 * the account that asked, so that its PDF certificate can show and attach it. The answer is only
 * given once it is stored: a failed write is `unavailable` (503 database_unavailable) and
 * the quota hold is refunded by the middleware like for any failure.
 */
import { unavailable } from '../errors.js';
import { describeError, log } from '../log.js';
import type { StandaloneKind, StandaloneProofStore } from './records.js';

/** Who asked and where their answers go (wired in the function, from lib/deps). */
export interface StandaloneRecorder {
  store: StandaloneProofStore;
  accountId: string;
}

export async function recordStandaloneProof(recorder: StandaloneRecorder, imageHash: string, kind: StandaloneKind, answer: object): Promise<void> {
  try {
    await recorder.store.recordStandalone(imageHash, recorder.accountId, kind, answer);
  } catch (error) {
    log.warn('stand-alone proof not recorded', { kind, ...describeError(error) });
    throw unavailable(
      'database_unavailable',
      `The ${kind === 'ts' ? 'timestamp' : 'signature'} could not be recorded for your account; it is not given out and no quota was used. Retry the request.`,
    );
  }
}
