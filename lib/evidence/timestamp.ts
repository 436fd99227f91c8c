/**
 * The stand-alone RFC 3161 timestamp of a hash (POST /api/v2/evidence/timestamp): the same TSAs
 * and the same checks as anchoring ({@link TimestampAuthority.timestamp} verifies every reply
 * before it returns it). The request chooses the TSA by its policy OID, as an RFC 3161 reqPolicy
 * does (decisions.md "Post-quantum time"): the classic one (ECDSA) by default, the post-quantum
 * one (ML-DSA-65, RFC 9882) by its policy. The answer is recorded for the caller's account in an
 * item of its own for the hash (records.ts StandaloneKind; for its PDF certificate) before it is given out.
 */
import type { TimestampAuthority } from '../crypto/ports.js';
import { DomainError, invalid, unavailable } from '../errors.js';
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

/** The time-stamping authorities a request may choose from, each under its policy OID (wired in lib/deps). */
export interface TimestampAuthorities {
  /** The classic TSA (ECDSA): a request without a policy, or with its policy, gets its token. */
  classic: { policyOid: string; get: () => Promise<TimestampAuthority> };
  /** The post-quantum TSA (ML-DSA-65, RFC 9882); absent while it is off (TSA_PQ=off, a remote TSA). */
  pq?: { policyOid: string; get: () => Promise<TimestampAuthority> };
}

/**
 * The TSA a request's policy OID names: none or the classic policy, the classic TSA; the
 * post-quantum policy, the post-quantum TSA while it is on. Any other policy, and the
 * post-quantum one while that TSA is off, is `invalid` (400 unaccepted_policy), the rule of
 * RFC 3161's unacceptedPolicy: nothing is issued, nothing is charged, and retrying cannot help.
 */
export function authorityForPolicy(authorities: TimestampAuthorities, policy: string | undefined): () => Promise<TimestampAuthority> {
  const { classic, pq } = authorities;
  if (policy === undefined || policy === classic.policyOid) return classic.get;
  if (pq && policy === pq.policyOid) return pq.get;
  const offered = `${classic.policyOid} (classic, ECDSA)${pq ? ` and ${pq.policyOid} (post-quantum, ML-DSA-65)` : ''}`;
  throw invalid(
    'unaccepted_policy',
    `No time-stamping authority of this service has the policy ${policy}. It issues tokens under ${offered}${pq ? '' : '; its post-quantum TSA is off'}. Leave policy out for the classic TSA.`,
  );
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
