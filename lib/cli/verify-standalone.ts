/**
 * The offline verifier for the Starter answers, next to receipts (verify-receipt.ts):
 *   - a stand-alone timestamp (POST /api/v2/evidence/timestamp → t.json): the RFC 3161 token
 *     against the file's SHA-256 and the TSA root;
 *   - a signature (POST /api/v2/evidence/sign → s.json): Ed25519 over JCS(statement) with the
 *     service key whose kid the statement names, from a pinned JWK set.
 * Verdicts come from the one checkers (lib/evidence/proof-check.ts, lib/evidence/signature.ts);
 * nothing the file says about itself is believed.
 */
import { isSha256Hex } from '../crypto/hash.js';
import { rawPublicKeyOf } from '../crypto/jwk.js';
import { type CheckOutcome, type TimestampVerification, verifyTimestampResponse } from '../crypto/tsa/verify.js';
import { checkTimestamp } from '../evidence/proof-check.js';
import { checkSignatureResponse } from '../evidence/signature.js';
import type { VerifySubject } from './verify-receipt.js';

export type Result = 'pass' | 'fail' | 'skipped';

export interface StandaloneCheck {
  id: string;
  label: string;
  result: Result;
  reason: string;
}

export interface StandaloneVerification {
  ok: boolean;
  checks: StandaloneCheck[];
  /** Trust notes, e.g. `root: pinned (trust file)` or a warning that an anchor is not pinned. */
  notes: string[];
}

const hashOf = (subject: VerifySubject) => (subject.kind === 'file' ? subject.sha256 : subject.hash.toLowerCase());
const what = (subject: VerifySubject) => (subject.kind === 'file' ? `SHA-256 of ${subject.name}` : 'the given hash');

function finish(checks: StandaloneCheck[], notes: string[]): StandaloneVerification {
  return { ok: checks.every((c) => c.result !== 'fail'), checks, notes };
}

function fileCheck(subject: VerifySubject, stated: unknown): StandaloneCheck {
  const label = 'file SHA-256';
  if (typeof stated !== 'string' || !isSha256Hex(stated)) return { id: 'file', label, result: 'fail', reason: 'the answer has no sha256_hash' };
  const expected = hashOf(subject);
  return stated.toLowerCase() === expected
    ? { id: 'file', label, result: 'pass', reason: `${what(subject)} is the answer's sha256_hash ${expected.slice(0, 12)}…` }
    : { id: 'file', label, result: 'fail', reason: `${what(subject)} is ${expected}, the answer is for ${stated}: not the same file` };
}

export interface VerifyTimestampFileOptions {
  /** The parsed answer of POST /api/v2/evidence/timestamp. */
  response: unknown;
  subject: VerifySubject;
  /** Pinned TSA roots (PEM). Without any, the root inside the answer is used (not pinned). */
  rootsPem: string[];
  rootSource?: string;
}

/** Checks a stand-alone RFC 3161 timestamp answer against the file and the TSA root. Never throws. */
export async function verifyTimestampFile(options: VerifyTimestampFileOptions): Promise<StandaloneVerification> {
  const r = (typeof options.response === 'object' && options.response !== null ? options.response : {}) as Record<string, unknown>;
  const checks: StandaloneCheck[] = [fileCheck(options.subject, r.sha256_hash)];
  const notes: string[] = [];
  const certificates = Array.isArray(r.tsa_certificates) ? r.tsa_certificates.filter((c): c is string => typeof c === 'string') : [];
  let roots = options.rootsPem;
  if (roots.length > 0) notes.push(`root: pinned${options.rootSource ? ` (${options.rootSource})` : ''}`);
  else if (certificates.length > 0) {
    roots = [certificates[certificates.length - 1] ?? ''];
    notes.push('root: from the answer (not pinned): proves internal consistency only; pin the TSA root with --root or evidence trust add <url>');
  } else notes.push('root: none: pass --root or evidence trust add <url>');
  let result: TimestampVerification | null = null;
  let failure: string | undefined;
  if (typeof r.timestamp_token !== 'string' || r.timestamp_token === '') failure = 'the answer has no timestamp_token';
  else {
    try {
      result = await verifyTimestampResponse(Buffer.from(r.timestamp_token, 'base64'), {
        imprint: Buffer.from(hashOf(options.subject), 'hex'),
        roots,
        untrusted: certificates,
        hashAlgorithm: 'SHA-256',
        ...(typeof r.policy === 'string' ? { policy: r.policy } : {}),
      });
    } catch (error) {
      failure = `cannot be checked: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  const verdict = checkTimestamp(result, failure);
  const add = (id: string, label: string, outcome: CheckOutcome) => checks.push({ id, label, result: outcome.result, reason: outcome.reason });
  add('timestamp_status', 'timestamp status', verdict.checks.status);
  add('timestamp_imprint', 'timestamp imprint', verdict.checks.imprint);
  add('timestamp_signature', 'timestamp signature', verdict.checks.signature);
  add('timestamp_ess_cert_id', 'timestamp ESSCertIDv2', verdict.checks.essCertIdV2);
  add('timestamp_eku', 'timestamp EKU', verdict.checks.eku);
  add('timestamp_policy', 'timestamp policy', verdict.checks.policy);
  add('timestamp_chain', 'timestamp chain to root', roots.length === 0 ? { result: 'fail', reason: 'no TSA root to check the chain against' } : verdict.checks.chain);
  if (result?.genTime) notes.push(`time-stamped: ${result.genTime.toISOString()}`);
  return finish(checks, notes);
}

export interface VerifySignatureFileOptions {
  /** The parsed answer of POST /api/v2/evidence/sign. */
  response: unknown;
  subject: VerifySubject;
  /** The pinned JWK sets' keys (trust file or --jwks). */
  jwks: unknown[];
  jwksSource?: string;
}

/** Checks an Ed25519 signature answer against the file and the pinned JWK set. Never throws. */
export function verifySignatureFile(options: VerifySignatureFileOptions): StandaloneVerification {
  const r = (typeof options.response === 'object' && options.response !== null ? options.response : {}) as Record<string, unknown>;
  const st = (typeof r.statement === 'object' && r.statement !== null ? r.statement : {}) as Record<string, unknown>;
  const checks: StandaloneCheck[] = [fileCheck(options.subject, st.sha256_hash)];
  const notes: string[] = [];
  const kid = typeof st.key_id === 'string' ? st.key_id : undefined;
  const jwk = options.jwks.find((k) => typeof k === 'object' && k !== null && (k as { kid?: unknown }).kid === kid) as Record<string, unknown> | undefined;
  const raw = jwk ? rawPublicKeyOf(jwk) : undefined;
  const publicKey = raw?.algorithm === 'Ed25519' ? raw.publicKey : undefined;
  if (options.jwks.length === 0) notes.push('signing key: none pinned: evidence trust add <url>, or --jwks jwks.json');
  else notes.push(`signing key: pinned${options.jwksSource ? ` (${options.jwksSource})` : ''}`);
  const verdict = checkSignatureResponse(options.response, hashOf(options.subject), publicKey);
  checks.push({ id: 'signature_statement', label: 'signed statement', result: verdict.statement.ok ? 'pass' : 'fail', reason: verdict.statement.reason });
  checks.push({
    id: 'signature_key',
    label: 'Ed25519 key pinned',
    result: publicKey ? 'pass' : 'fail',
    reason: publicKey
      ? `${kid} is in the pinned JWK set${jwk?.status === 'retired' ? ' (retired: it no longer signs, its statements still verify)' : ''}`
      : options.jwks.length === 0
        ? 'no JWK set pinned'
        : `no Ed25519 key with kid ${String(kid)} in the pinned JWK set`,
  });
  checks.push({ id: 'signature', label: 'Ed25519 signature', result: verdict.signature.ok ? 'pass' : 'fail', reason: verdict.signature.reason });
  checks.push(
    verdict.device
      ? { id: 'device_signature', label: 'device signature (Ed25519)', result: verdict.device.ok ? 'pass' : 'fail', reason: verdict.device.reason }
      : { id: 'device_signature', label: 'device signature (Ed25519)', result: 'skipped', reason: 'the statement names no device signature' },
  );
  if (typeof st.signed_at === 'string') notes.push(`signed: ${st.signed_at} by ${String(kid)}`);
  return finish(checks, notes);
}

/** The report as text lines, like formatReport for receipts. */
export function formatStandalone(report: StandaloneVerification): string[] {
  const width = Math.max(...report.checks.map((c) => c.label.length));
  const lines = report.checks.map((c) => `  ${c.result.padEnd(7)}  ${c.label.padEnd(width)}  ${c.reason}`);
  lines.push('');
  lines.push(...report.notes);
  const failed = report.checks.filter((c) => c.result === 'fail');
  const passed = report.checks.filter((c) => c.result === 'pass').length;
  const skipped = report.checks.filter((c) => c.result === 'skipped').length;
  lines.push(
    failed.length === 0
      ? `VERIFIED: ${passed} checks passed, ${skipped} skipped, none failed.`
      : `NOT VERIFIED: ${failed.length} check${failed.length === 1 ? '' : 's'} failed (${failed.map((c) => c.id).join(', ')}); ${passed} passed, ${skipped} skipped.`,
  );
  return lines;
}
