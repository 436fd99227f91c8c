/**
 * The offline verifier for the Starter answers, next to receipts (verify-receipt.ts):
 *   - a stand-alone timestamp (POST /api/v2/evidence/timestamp → t.json): the RFC 3161 token
 *     against the file's SHA-256 and the TSA root;
 *   - a signature (POST /api/v2/evidence/sign → s.json): Ed25519 over JCS(statement) with the
 *     service key whose kid the statement names, from a pinned JWK set.
 * The verdicts are lib/evidence/standalone-verdict.ts's (the PDF certificate gives the same);
 * this file picks the trust anchors and reports.
 */
import { rawPublicKeyOf, windowOfJwk } from '../crypto/jwk.js';
import { TIMESTAMP_CHECKS } from '../evidence/proof-check.js';
import { judgeStandaloneSignature, verifyStandaloneTimestamp } from '../evidence/standalone-verdict.js';
import { describeSigningTime, foldProofs, judgeUnpinned } from '../evidence/verdict.js';
import type { EvidenceStatus, ProofState, TrustSnapshot } from '../evidence/verdict.js';
import { STATUS_WORD } from './receipt-report.js';
import type { VerifySubject } from './verify-receipt.js';

/** One line of the report, in the one verdict's words. */
export interface StandaloneProof {
  id: string;
  label: string;
  state: ProofState;
  reason: string;
}

export interface StandaloneVerification {
  status: EvidenceStatus;
  /** status === 'verified'. */
  ok: boolean;
  proofs: StandaloneProof[];
  /** Trust notes, e.g. `root: pinned (trust file)` or a warning that an anchor is not pinned. */
  notes: string[];
}

const hashOf = (subject: VerifySubject) => (subject.kind === 'file' ? subject.sha256 : subject.hash.toLowerCase());
const what = (subject: VerifySubject) => (subject.kind === 'file' ? `SHA-256 of ${subject.name}` : 'the given hash');

/** The report of proofs: failed if one fails, not established (pending) if one is unchecked or pending, else verified. */
export function finish(proofs: StandaloneProof[], notes: string[]): StandaloneVerification {
  const { status } = foldProofs(proofs.map((p) => [p.id, p.state] as const));
  return { status, ok: status === 'verified', proofs, notes };
}

function fileProof(subject: VerifySubject, stated: unknown): StandaloneProof {
  const label = 'file: SHA-256 = the answer\'s sha256_hash';
  if (typeof stated !== 'string') return { id: 'file', label, state: 'fails', reason: 'the answer has no sha256_hash' };
  const expected = hashOf(subject);
  return stated.toLowerCase() === expected
    ? { id: 'file', label, state: 'holds', reason: `${what(subject)} is the answer's sha256_hash ${expected.slice(0, 12)}…` }
    : { id: 'file', label, state: 'fails', reason: `${what(subject)} is ${expected}, the answer is for ${stated}: not the same file` };
}

const fieldOf = (o: unknown, key: string): unknown => (typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[key] : undefined);

export interface VerifyTimestampFileOptions {
  /** The parsed answer of POST /api/v2/evidence/timestamp. */
  response: unknown;
  subject: VerifySubject;
  /** Pinned TSA roots (PEM). Without any, the root inside the answer is used (not pinned: at most unchecked). */
  rootsPem: string[];
  rootSource?: string;
  /** The trust file's TSA retirements: a token dated after its certificate's retirement fails. */
  tsaRetirements?: readonly { sha256: string; retiredAt: Date }[];
}

/** Checks a stand-alone RFC 3161 timestamp answer against the file and the TSA root. Never throws. */
export async function verifyTimestampFile(options: VerifyTimestampFileOptions): Promise<StandaloneVerification> {
  const certificates = fieldOf(options.response, 'tsa_certificates');
  const own = Array.isArray(certificates) && typeof certificates[certificates.length - 1] === 'string' ? (certificates[certificates.length - 1] as string) : undefined;
  const pinned = options.rootsPem.length > 0;
  const notes = [
    pinned
      ? `root: pinned${options.rootSource ? ` (${options.rootSource})` : ''}`
      : own
        ? 'root: from the answer (not pinned): proves internal consistency only; pin the TSA root with --root or evidence trust add <url>'
        : 'root: none: pass --root or evidence trust add <url>',
  ];
  const v = await verifyStandaloneTimestamp(options.response, hashOf(options.subject), pinned ? options.rootsPem : own ? [own] : [], pinned, options.tsaRetirements ?? []);
  const proofs = [fileProof(options.subject, fieldOf(options.response, 'sha256_hash')), { id: 'timestamp', label: 'RFC 3161 timestamp', state: v.state, reason: v.reason }];
  if (v.state !== 'holds') {
    for (const id of TIMESTAMP_CHECKS) {
      const c = v.token.checks[id];
      notes.push(`  timestamp ${id}: ${c.result}: ${c.reason}`);
    }
  }
  if (v.gen_time) notes.push(`time-stamped: ${v.gen_time}${v.tsa_name ? ` by ${v.tsa_name}` : ''}`);
  return finish(proofs, notes);
}

export interface VerifySignatureFileOptions {
  /** The parsed answer of POST /api/v2/evidence/sign. */
  response: unknown;
  subject: VerifySubject;
  /** The pinned JWK sets' keys (trust file or --jwks). */
  jwks: unknown[];
  jwksSource?: string;
  /** The JWK sets come from a trust file, pinned from these services then (a key made since is not established; verdict.ts judgeUnpinned). */
  jwksPinnedBy?: TrustSnapshot[];
}

/** Checks an Ed25519 signature answer against the file and the pinned JWK set. Never throws. */
export function verifySignatureFile(options: VerifySignatureFileOptions): StandaloneVerification {
  const st = fieldOf(options.response, 'statement');
  const kid = fieldOf(st, 'key_id');
  const jwk = options.jwks.find((k) => typeof k === 'object' && k !== null && (k as { kid?: unknown }).kid === kid) as Record<string, unknown> | undefined;
  const raw = jwk ? rawPublicKeyOf(jwk) : undefined;
  const publicKey = raw?.algorithm === 'Ed25519' ? raw.publicKey : undefined;
  const notes = [options.jwks.length === 0 ? 'signing key: none pinned: evidence trust add <url>, or --jwks jwks.json' : `signing key: pinned${options.jwksSource ? ` (${options.jwksSource})` : ''}`];
  const v = judgeStandaloneSignature(options.response, hashOf(options.subject), publicKey, jwk ? windowOfJwk(jwk) : undefined);
  const proofs: StandaloneProof[] = [fileProof(options.subject, fieldOf(st, 'sha256_hash'))];
  proofs.push({ id: 'signature_statement', label: 'signed statement names this hash', state: v.checks.statement.ok ? 'holds' : 'fails', reason: v.checks.statement.reason });
  const keyProof = (state: ProofState, reason: string): StandaloneProof => ({ id: 'signature_key', label: 'Ed25519 key pinned', state, reason });
  if (publicKey) {
    proofs.push(
      v.window && !v.window.ok
        ? keyProof('fails', `${String(kid)} is in the pinned JWK set, but signed outside its validity window: ${v.window.reason}`)
        : keyProof('holds', `${String(kid)} is in the pinned JWK set${jwk?.status === 'retired' ? ' (retired: it no longer signs, its statements still verify)' : ''}${v.window && v.as_of ? `; valid ${describeSigningTime(v.as_of)}` : ''}`),
    );
  } else if (options.jwks.length === 0) {
    proofs.push(keyProof('unchecked', 'no JWK set pinned: the signature cannot be checked'));
  } else {
    const unpinned = judgeUnpinned(
      { subject: `the Ed25519 key ${String(kid)}`, among: 'the keys of the JWK set', failure: `no Ed25519 key with kid ${String(kid)} in the pinned JWK set` },
      v.as_of,
      options.jwksPinnedBy,
    );
    proofs.push(keyProof(unpinned.state, unpinned.reason));
  }
  proofs.push({ id: 'signature', label: 'Ed25519 signature over JCS(statement)', state: publicKey ? (v.checks.signature.ok ? 'holds' : 'fails') : 'unchecked', reason: v.checks.signature.reason });
  proofs.push(
    v.checks.device
      ? { id: 'device_signature', label: "device's Ed25519 signature", state: v.checks.device.ok ? 'holds' : 'fails', reason: v.checks.device.reason }
      : { id: 'device_signature', label: "device's Ed25519 signature", state: 'absent', reason: 'the statement names no device signature' },
  );
  const signedAt = fieldOf(st, 'signed_at');
  if (typeof signedAt === 'string') notes.push(`signed: ${signedAt} by ${String(kid)}`);
  return finish(proofs, notes);
}

/** The report as text lines, like the receipt's (receipt-report.ts). */
export function formatStandalone(report: StandaloneVerification): string[] {
  const width = Math.max(...report.proofs.map((c) => c.label.length));
  const lines = report.proofs.map((c) => `  ${c.state.padEnd(9)}  ${c.label.padEnd(width)}  ${c.reason}`);
  lines.push('');
  lines.push(...report.notes);
  const { failed, open } = foldProofs(report.proofs.map((p) => [p.id, p.state] as const));
  const summary =
    report.status === 'verified'
      ? 'every proof was checked and holds.'
      : report.status === 'failed'
        ? `${failed.join(', ')} did not check out.`
        : `nothing failed, but ${open.join(', ')} ${open.length === 1 ? 'is' : 'are'} not established.`;
  lines.push(`${STATUS_WORD[report.status]}: ${summary}`);
  return lines;
}
