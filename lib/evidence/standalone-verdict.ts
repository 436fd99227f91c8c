/**
 * The verdict on the Starter answers (a stand-alone RFC 3161 timestamp of a hash, an Ed25519
 * signature of a hash), given once for every reader: the PDF certificate that attaches them and
 * the offline `evidence verify --timestamp / --signature`. The words are the one verdict's
 * (verdict.ts): `holds`, `fails`, or `unchecked` when the reader did not pin what it was checked against.
 */
import { verifyTimestampResponse } from '../crypto/tsa/verify.js';
import { describeSubject } from '../crypto/tsa/x509-verify.js';
import { checkTimestamp, type TimestampVerdict, type Verdict } from './proof-check.js';
import { checkSignatureResponse, type SignatureVerdict } from './signature.js';
import { checkWindow, retiredSinceNote, type ValidityWindow, type WindowVerdict } from '../crypto/key-windows.js';
import { describeSigningTime, type ProofState, type SigningTime } from './verdict.js';

export interface StandaloneTimestampVerdict {
  state: Exclude<ProofState, 'pending' | 'absent'>;
  reason: string;
  /** The answer is about this hash. */
  hash: Verdict;
  /** The token's own checks. */
  token: TimestampVerdict;
  gen_time: string | null;
  tsa_name: string | null;
}

const field = <T>(o: unknown, key: string, ok: (v: unknown) => v is T): T | undefined => {
  const v = typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[key] : undefined;
  return ok(v) ? v : undefined;
};
const isString = (v: unknown): v is string => typeof v === 'string';
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString);

/**
 * A stand-alone timestamp answer (POST /api/v2/evidence/timestamp) against the hash it should
 * cover and TSA roots. `rootsTrusted` false: the roots are the answer's own (nothing pinned), so a
 * token that verifies is only consistent with itself: `unchecked`. Never throws.
 */
export async function verifyStandaloneTimestamp(
  answer: unknown,
  imageHash: string,
  roots: string[],
  rootsTrusted: boolean,
  /** TSA certificates retired from signing (lib/crypto/tsa/history.ts): a token dated after its certificate's retirement fails. */
  retired: readonly { sha256: string; retiredAt: Date }[] = [],
): Promise<StandaloneTimestampVerdict> {
  const stated = field(answer, 'sha256_hash', isString);
  const hash: Verdict =
    stated === undefined
      ? { ok: false, reason: 'the answer has no sha256_hash' }
      : stated.toLowerCase() === imageHash.toLowerCase()
        ? { ok: true, reason: `the answer is for ${imageHash.slice(0, 12)}…` }
        : { ok: false, reason: `the answer is for ${stated}, not ${imageHash}` };
  const certificates = field(answer, 'tsa_certificates', isStrings) ?? [];
  const tokenText = field(answer, 'timestamp_token', isString);
  const policy = field(answer, 'policy', isString);
  let token: TimestampVerdict;
  if (!tokenText) token = checkTimestamp(null, 'the answer has no timestamp_token');
  else if (roots.length === 0) token = checkTimestamp(null, 'no TSA root to check the chain against: pin one (evidence trust add <url>, or --root)');
  else {
    try {
      token = checkTimestamp(
        await verifyTimestampResponse(Buffer.from(tokenText, 'base64'), {
          imprint: Buffer.from(imageHash, 'hex'),
          roots,
          untrusted: certificates,
          hashAlgorithm: 'SHA-256',
          ...(policy ? { policy } : {}),
          retired,
        }),
      );
    } catch (error) {
      token = checkTimestamp(null, `cannot be checked: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const state = !hash.ok || !token.ok ? 'fails' : rootsTrusted ? 'holds' : 'unchecked';
  const reason = !hash.ok
    ? hash.reason
    : !token.ok
      ? token.reason
      : rootsTrusted
        ? token.reason
        : `${token.reason}, but against the answer's own root: pin the TSA root (evidence trust add <url>, or --root)`;
  return {
    state,
    reason,
    hash,
    token,
    gen_time: token.genTime ? token.genTime.toISOString() : null,
    tsa_name: certificates[0] ? describeSubject(certificates[0]) : null,
  };
}

export interface StandaloneSignatureVerdict {
  state: 'holds' | 'fails';
  reason: string;
  checks: SignatureVerdict;
  /**
   * The key's validity window at the signing time (decisions.md "Key validity windows"): the
   * statement's `signed_at`, which the key itself signs (no independent time). null: no window known.
   */
  window: WindowVerdict | null;
  /** The signing time the window was judged at (the statement's signed_at), when it states one. */
  as_of: SigningTime | null;
}

/**
 * A signature answer (POST /api/v2/evidence/sign) against the hash and the service's key of its
 * kid (undefined: none known or pinned, which fails: an Ed25519 signature proves nothing without its key).
 */
export function judgeStandaloneSignature(answer: unknown, imageHash: string, publicKey: Uint8Array | undefined, keyWindow?: ValidityWindow): StandaloneSignatureVerdict {
  const checks = checkSignatureResponse(answer, imageHash, publicKey);
  const signedAt = field(field(answer, 'statement', (v): v is object => typeof v === 'object' && v !== null), 'signed_at', isString);
  const as_of: SigningTime | null = signedAt !== undefined ? { at: signedAt, source: 'stated' } : null;
  const window: WindowVerdict | null =
    keyWindow === undefined ? null : as_of ? checkWindow(keyWindow, new Date(as_of.at)) : { ok: false, reason: 'the statement states no signing time to judge the key at' };
  const windowVerdict: Verdict | undefined = window
    ? { ok: window.ok, reason: window.ok ? `the Ed25519 key was valid ${describeSigningTime(as_of as SigningTime)}${retiredSinceNote(window)}` : `the Ed25519 key signed outside its validity window: ${window.reason}` }
    : undefined;
  const failing = [checks.statement, checks.signature, ...(checks.device ? [checks.device] : []), ...(windowVerdict ? [windowVerdict] : [])].find((v) => !v.ok);
  if (failing) return { state: 'fails', reason: failing.reason, checks, window, as_of };
  return { state: 'holds', reason: `${checks.signature.reason}${as_of ? `; ${windowVerdict ? windowVerdict.reason : describeSigningTime(as_of)}` : ''}`, checks, window, as_of };
}
