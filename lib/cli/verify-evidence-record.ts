/**
 * `evidence verify <photo|hash> --evidence-record <file>.ers`: an RFC 4998 evidence record
 * (GET /api/v2/evidence/evidence-record/{image_hash}) checked offline against the photo
 * (lib/crypto/ers-verify.ts): each archive timestamp's hash tree and RFC 3161 token, as of its
 * genTime, against the pinned TSA roots (--root or the trust file), and the chains' continuity.
 */
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { type ErsHash, algorithmsOf, ersHasher, parseEvidenceRecord } from '../crypto/ers.js';
import { type EvidenceRecordVerification, verifyEvidenceRecord } from '../crypto/ers-verify.js';
import type { EvidenceStatus } from '../evidence/verdict.js';
import { CliError } from './client.js';
import { STATUS_WORD } from './receipt-report.js';
import type { VerifySubject } from './verify-receipt.js';


export interface EvidenceRecordReport {
  status: EvidenceStatus;
  ok: boolean;
  existed_at?: string;
  protected_until?: string;
  checks: { chain: number; index: number; algorithm: string; covers: string; gen_time?: string; ok: boolean; detail: string }[];
  lines: string[];
}

export async function verifyEvidenceRecordFile(options: {
  file: string;
  subject: VerifySubject;
  /** The photo's path when the subject is a file: the digests of other algorithms are computed from it. */
  dataPath?: string;
  rootsPem: string[];
  rootSource?: string;
  /** The trust file's TSA retirements: an archive timestamp dated after its certificate's retirement fails. */
  tsaRetirements?: readonly { sha256: string; retiredAt: Date }[];
}): Promise<EvidenceRecordReport> {
  let der: Uint8Array;
  try {
    der = new Uint8Array(await readFile(options.file));
  } catch {
    throw new CliError(`Cannot read the evidence record ${options.file}. Download it from GET /api/v2/evidence/evidence-record/<sha256>.`);
  }
  const sha256 = options.subject.kind === 'file' ? options.subject.sha256 : options.subject.hash;
  // The photo's digests with each algorithm the record uses (SHA-256: the one already computed).
  const digests = new Map<ErsHash, Uint8Array>([['SHA-256', Buffer.from(sha256, 'hex')]]);
  if (options.dataPath) {
    let algorithms: ErsHash[] = [];
    try {
      algorithms = algorithmsOf(parseEvidenceRecord(der).chains);
    } catch {
      // Malformed: the verifier says why.
    }
    for (const alg of algorithms) if (!digests.has(alg)) digests.set(alg, await digestFile(options.dataPath, alg));
  }
  if (options.rootsPem.length === 0) {
    return {
      status: 'pending',
      ok: false,
      checks: [],
      lines: [
        '  unchecked  evidence record  no TSA root is pinned: pass --root tsa-root.pem or run evidence trust add <base-url>',
        '',
        `${STATUS_WORD.pending}: nothing failed, but the evidence record is not established.`,
      ],
    };
  }
  const v = await verifyEvidenceRecord(der, { dataDigest: (alg) => digests.get(alg), rootsPem: options.rootsPem, ...(options.tsaRetirements ? { retired: options.tsaRetirements } : {}) });
  return toReport(v, options.rootSource, der.length);
}

function toReport(v: EvidenceRecordVerification, rootSource: string | undefined, size: number): EvidenceRecordReport {
  const status: EvidenceStatus = v.ok ? 'verified' : 'failed';
  const lines: string[] = [];
  if (v.malformed) lines.push(`  fails      evidence record  ${v.malformed}`);
  const chains = new Set(v.checks.map((c) => c.chain)).size;
  for (const c of v.checks) {
    const label = `chain ${c.chain + 1}/${chains}, archive timestamp ${c.index + 1}`;
    lines.push(`  ${(c.ok ? 'holds' : 'fails').padEnd(9)}  ${label}  ${c.detail}`);
  }
  lines.push('');
  lines.push(`Checked: a DER RFC 4998 EvidenceRecord (${size} bytes) whose data object is the file; each archive timestamp's reduced hash tree and RFC 3161 token (signature, ESSCertIDv2, EKU, the TSA chain to the root${rootSource ? ` from ${rootSource}` : ''} as of its genTime); each renewal made while what it renews was valid.`);
  if (v.ok && v.existedAt) lines.push(`The file existed at ${v.existedAt.toISOString()} (the first archive timestamp).`);
  if (v.ok && v.protectedUntil) lines.push(`The record is protected until ${v.protectedUntil.toISOString()} (its last TSA certificate's notAfter); the service renews it before then: fetch it again later.`);
  lines.push(`${STATUS_WORD[status]}: ${v.ok ? 'every archive timestamp was checked and holds.' : 'the evidence record did not check out.'}`);
  return {
    status,
    ok: v.ok,
    ...(v.existedAt ? { existed_at: v.existedAt.toISOString() } : {}),
    ...(v.protectedUntil ? { protected_until: v.protectedUntil.toISOString() } : {}),
    checks: v.checks.map((c) => ({ chain: c.chain, index: c.index, algorithm: c.algorithm, covers: c.covers, ...(c.genTime ? { gen_time: c.genTime.toISOString() } : {}), ok: c.ok, detail: c.detail })),
    lines,
  };
}

function digestFile(file: string, alg: ErsHash): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const h = ersHasher(alg);
    createReadStream(file)
      .on('data', (chunk) => h.update(chunk))
      .on('end', () => resolve(Uint8Array.from(h.digest())))
      .on('error', reject);
  });
}
