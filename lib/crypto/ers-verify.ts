/**
 * Verification of an RFC 4998 Evidence Record against its data (§5.3), offline: every archive
 * timestamp's reduced hash tree, its RFC 3161 token (signature, ESS, EKU and the TSA chain to the
 * given roots, as of the token's genTime: lib/crypto/tsa/verify.ts) and the continuity of the
 * chains (each renewal made while the timestamp it renews was still valid).
 */
import {
  type ArchiveTimeStamp,
  type ErsHash,
  type EvidenceRecord,
  ErsFormatError,
  bytesEqual,
  encodeArchiveTimeStampSequence,
  ersDigest,
  parseEvidenceRecord,
  rootOfReducedTree,
} from './ers.js';
import { isString, stringValue } from './tsa/der.js';
import { toHex } from './tsa/identifiers.js';
import { parseTimestampToken, verifyTimestampToken } from './tsa/verify.js';
import { certificatesFromPem, nameAttributes } from './tsa/x509-verify.js';

export interface VerifyEvidenceRecordOptions {
  /**
   * The data object's digest with an algorithm (the photo's hash), or undefined when it is not
   * known (only the image hash, SHA-256, was given: a chain of another algorithm cannot be checked).
   */
  dataDigest: (alg: ErsHash) => Uint8Array | undefined;
  /** Trusted TSA roots (PEM). */
  rootsPem: string[];
  /** TSA certificates retired from signing (lib/crypto/tsa/history.ts): an archive timestamp dated after its certificate's retirement fails. */
  retired?: readonly { sha256: string; retiredAt: Date }[];
}

/** One archive timestamp as checked. */
export interface ArchiveTimeStampCheck {
  chain: number;
  index: number;
  algorithm: ErsHash;
  /** What its hash tree covers: the data (first of the first chain), the data with the earlier chains (hash-tree renewal), or the previous timestamp(s) (timestamp renewal). */
  covers: 'data' | 'data and earlier chains' | 'previous timestamps';
  genTime?: Date;
  /** notAfter of the TSA certificate that signed it. */
  tsaNotAfter?: Date;
  tsa?: string;
  ok: boolean;
  /** What was checked, or what failed. */
  detail: string;
}

export interface EvidenceRecordVerification {
  ok: boolean;
  /** Set when the record could not be decoded. */
  malformed?: string;
  checks: ArchiveTimeStampCheck[];
  /** genTime of the first archive timestamp: the data existed then. */
  existedAt?: Date;
  /** notAfter of the last archive timestamp's TSA certificate: renew before it. */
  protectedUntil?: Date;
  record?: EvidenceRecord;
}

export async function verifyEvidenceRecord(der: Uint8Array, options: VerifyEvidenceRecordOptions): Promise<EvidenceRecordVerification> {
  let record: EvidenceRecord;
  try {
    record = parseEvidenceRecord(der);
  } catch (error) {
    return { ok: false, malformed: error instanceof ErsFormatError ? error.message : `malformed: ${String(error)}`, checks: [] };
  }
  const checks: ArchiveTimeStampCheck[] = [];
  let previous: ArchiveTimeStampCheck | undefined;
  for (const [c, chain] of record.chains.entries()) {
    const first = chain[0] as ArchiveTimeStamp;
    const alg = first.digestAlgorithm ?? imprintAlgorithm(first.timeStamp);
    for (const [i, ats] of chain.entries()) {
      const check: ArchiveTimeStampCheck = {
        chain: c,
        index: i,
        algorithm: alg ?? 'SHA-256',
        covers: i > 0 ? 'previous timestamps' : c === 0 ? 'data' : 'data and earlier chains',
        ok: false,
        detail: '',
      };
      checks.push(check);
      const problems: string[] = [];
      const atsAlg = ats.digestAlgorithm ?? imprintAlgorithm(ats.timeStamp);
      if (!alg || atsAlg !== alg) problems.push(`its hash algorithm ${atsAlg ?? 'unknown'} is not the chain's (${alg ?? 'unknown'})`);
      else if (!record.digestAlgorithms.includes(alg)) problems.push(`${alg} is not among the record's digestAlgorithms`);
      let covered: Uint8Array | undefined;
      if (alg && problems.length === 0) {
        if (i > 0) {
          covered = ersDigest(alg, (chain[i - 1] as ArchiveTimeStamp).timeStamp);
        } else {
          const data = options.dataDigest(alg);
          if (!data) problems.push(`the data's ${alg} hash is needed (give the file, not only its SHA-256)`);
          else covered = c === 0 ? data : ersDigest(alg, data, ersDigest(alg, encodeArchiveTimeStampSequence(record.chains.slice(0, c))));
        }
      }
      let root: Uint8Array | undefined;
      if (covered && alg) {
        if (ats.reducedHashtree) {
          if (!ats.reducedHashtree[0]?.some((h) => bytesEqual(h, covered))) problems.push(`the first hash list does not hold the hash of the ${check.covers}`);
          else root = rootOfReducedTree(alg, ats.reducedHashtree);
        } else {
          root = covered;
        }
      }
      if (root && alg) {
        const v = await verifyTimestampToken(ats.timeStamp, { imprint: root, roots: options.rootsPem, ...(isTsaHash(alg) ? { hashAlgorithm: alg } : {}), ...(options.retired ? { retired: options.retired } : {}) });
        check.genTime = v.genTime;
        // The signer as the verifier parsed it: certificatesFromPem answers this PEM from the
        // verifier's own certificate cache rather than parsing it again (with pkijs, as it did).
        const cert = v.tsaCertificatePem ? certificatesFromPem(v.tsaCertificatePem)[0] : undefined;
        if (cert) {
          check.tsaNotAfter = cert.notAfter;
          // The subject's attribute values, in order (e.g. "Evidence Anchoring Service, Evidence Anchoring TSA").
          check.tsa = nameAttributes(cert.subject)
            .map(([, value]) => (isString(value) ? stringValue(value) : toHex(value.der)))
            .join(', ');
        }
        if (!v.ok) {
          const failed = Object.entries(v.checks).filter(([, o]) => o.result === 'fail').map(([k, o]) => `${k}: ${o.reason}`);
          problems.push(`RFC 3161 token: ${v.malformed ?? failed.join('; ')}`);
        }
      }
      // Continuity (§5.3): a renewal is made after what it renews and while that was still valid.
      if (previous?.genTime && check.genTime) {
        if (check.genTime < previous.genTime) problems.push(`its time ${iso(check.genTime)} is before the archive timestamp it renews (${iso(previous.genTime)})`);
        if (previous.tsaNotAfter && check.genTime > previous.tsaNotAfter) {
          problems.push(`made ${iso(check.genTime)}, after the TSA certificate of the timestamp it renews had expired (${iso(previous.tsaNotAfter)})`);
        }
      }
      check.ok = problems.length === 0;
      check.detail = check.ok
        ? `${alg} hash tree holds the hash of the ${check.covers}; its root is the RFC 3161 imprint; token signed ${iso(check.genTime)} by ${check.tsa ?? 'the TSA'}, chain to a trusted root valid then`
        : problems.join('; ');
      previous = check;
    }
  }
  const ok = checks.length > 0 && checks.every((c) => c.ok);
  const last = checks[checks.length - 1];
  return {
    ok,
    checks,
    record,
    ...(checks[0]?.genTime ? { existedAt: checks[0].genTime } : {}),
    ...(last?.tsaNotAfter ? { protectedUntil: last.tsaNotAfter } : {}),
  };
}

function isTsaHash(alg: ErsHash): alg is 'SHA-256' | 'SHA-384' | 'SHA-512' {
  return alg === 'SHA-256' || alg === 'SHA-384' || alg === 'SHA-512';
}

/** The imprint algorithm of a token (the tree's when the archive timestamp names none). */
function imprintAlgorithm(token: Uint8Array): ErsHash | undefined {
  try {
    const name = parseTimestampToken(token).hashAlgorithm;
    return name === 'SHA-256' || name === 'SHA-384' || name === 'SHA-512' ? name : undefined;
  } catch {
    return undefined;
  }
}

const iso = (d: Date | undefined) => d?.toISOString() ?? '?';
