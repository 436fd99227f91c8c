/**
 * The stand-alone RFC 3161 timestamp of a hash (POST /api/v2/evidence/timestamp): the same TSA
 * and the same checks as anchoring ({@link TimestampAuthority.timestamp} verifies every reply
 * before it returns it). The answer is recorded for the caller's account on the hash's evidence
 * item (`ts#<account>`, for its PDF certificate) before it is given out.
 */
import type { TimestampAuthority } from '../crypto/ports.js';
import { DomainError, unavailable } from '../errors.js';
import { describeError, log } from '../log.js';
import { recordStandaloneProof, type StandaloneRecorder } from './standalone-record.js';

export interface HashTimestamp {
  sha256_hash: string;
  timestamp_token: string;
  gen_time: string;
  serial_number: string;
  policy: string;
  tsa_certificates: string[];
}

/**
 * Time-stamps a SHA-256 hash; a TSA that fails is `unavailable` (503 tsa_unavailable), its cause
 * logged. With a recorder, the answer is stored for its account first (a failed write: 503).
 */
export async function timestampHash(getTsa: () => Promise<TimestampAuthority>, sha256Hash: string, recorder?: StandaloneRecorder): Promise<HashTimestamp> {
  const answer = await issueTimestamp(getTsa, sha256Hash);
  if (recorder) await recordStandaloneProof(recorder, sha256Hash, 'ts', answer);
  return answer;
}

async function issueTimestamp(getTsa: () => Promise<TimestampAuthority>, sha256Hash: string): Promise<HashTimestamp> {
  try {
    const tsa = await getTsa();
    const [issued, certificates] = await Promise.all([tsa.timestamp(Buffer.from(sha256Hash, 'hex')), tsa.certificates()]);
    return {
      sha256_hash: sha256Hash,
      timestamp_token: Buffer.from(issued.response).toString('base64'),
      gen_time: issued.genTime.toISOString(),
      serial_number: issued.serial,
      policy: issued.policy,
      tsa_certificates: certificates,
    };
  } catch (error) {
    if (error instanceof DomainError) throw error;
    log.warn('time-stamping authority failed', describeError(error));
    throw tsaUnavailable();
  }
}

/** 503 tsa_unavailable: nothing was issued, a retry may succeed. */
export function tsaUnavailable(): DomainError {
  return unavailable('tsa_unavailable', 'The time-stamping authority is unavailable; no token was issued. Retry the request.');
}
