/**
 * The TSA certificates that no longer sign: what a rotation of the TSA leaf or root leaves behind
 * (`npm run admin -- rotate-tsa-leaf | rotate-tsa-root`, docs/runbook.md "Rotating the TSA keys").
 * The current certificates are the TSA's own files; this history keeps every retired one with its
 * validity window and the moment it was retired, because every token it signed must still verify:
 *
 * - a retired root stays a trust anchor for the tokens dated before its retirement;
 * - a token is judged as of its genTime (RFC 3161 §2.4.2; the path is validated then, RFC 5280
 *   §6.1 at that time): its certificates must have been valid then, and not retired before it.
 *   A token dated after its certificate's notAfter, or after the certificate was retired, fails.
 *
 * The file is JSON, written whole (temp file and rename) by the admin CLI; locally
 * DATA_DIR/tsa/history.json, in production TSA_HISTORY_FILE shipped with the functions.
 */
import { createHash } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { certificatesFromPem, nameToString } from './x509-verify.js';

/** Which of the service's TSAs: ECDSA (classic) or ML-DSA-65 (post-quantum, RFC 9882). */
export type TsaKind = 'classic' | 'pq';

/** One TSA certificate with its validity window (the trust-anchor document and the trust file list these). */
export interface TsaCertificateEntry {
  kind: TsaKind;
  role: 'root' | 'leaf';
  status: 'active' | 'retired';
  /** SHA-256 of the certificate's DER, hex. */
  sha256: string;
  subject: string;
  not_before: string;
  not_after: string;
  /** When it stopped signing; tokens dated after it fail. null while current. */
  retired_at: string | null;
  pem: string;
}

export interface TsaHistory {
  version: 1;
  /** Retired certificates, oldest first. */
  retired: TsaCertificateEntry[];
}

/** A retirement as the verifier takes it (verify.ts `retired`). */
export interface TsaRetirement {
  sha256: string;
  retiredAt: Date;
}

/** The entry of one PEM certificate. @throws Error when the PEM holds no certificate. */
export function tsaCertificateEntry(pem: string, kind: TsaKind, role: 'root' | 'leaf', retiredAt: Date | null): TsaCertificateEntry {
  const cert = certificatesFromPem(pem)[0];
  if (!cert) throw new Error(`no certificate in the ${kind} TSA ${role} PEM`);
  return {
    kind,
    role,
    status: retiredAt ? 'retired' : 'active',
    sha256: createHash('sha256').update(cert.der).digest('hex'),
    subject: nameToString(cert.subject),
    not_before: cert.notBefore.toISOString(),
    not_after: cert.notAfter.toISOString(),
    retired_at: retiredAt ? retiredAt.toISOString() : null,
    pem: pem.endsWith('\n') ? pem : `${pem}\n`,
  };
}

/** Reads the history; a missing file is an empty one. @throws Error when the file is not a TSA history. */
export async function readTsaHistory(file: string): Promise<TsaHistory> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, retired: [] };
    throw error;
  }
  const parsed = JSON.parse(text) as Partial<TsaHistory>;
  if (parsed.version !== 1 || !Array.isArray(parsed.retired)) throw new Error(`${file} is not a TSA history ({"version": 1, "retired": [...]})`);
  for (const e of parsed.retired) {
    if ((e.kind !== 'classic' && e.kind !== 'pq') || (e.role !== 'root' && e.role !== 'leaf') || typeof e.pem !== 'string' || typeof e.retired_at !== 'string' || Number.isNaN(Date.parse(e.retired_at))) {
      throw new Error(`${file}: an entry is not a retired TSA certificate`);
    }
  }
  return parsed as TsaHistory;
}

/** Writes the history whole (a temp file renamed over it: readers see the old or the new file). */
export async function writeTsaHistory(file: string, history: TsaHistory): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(history, null, 2)}\n`, { mode: 0o644 });
  await rename(tmp, file);
}

/** The history with these certificates retired at `at` (a certificate already in it is not added twice). */
export function retire(history: TsaHistory, entries: { pem: string; kind: TsaKind; role: 'root' | 'leaf' }[], at: Date): TsaHistory {
  const retired = [...history.retired];
  for (const e of entries) {
    const entry = tsaCertificateEntry(e.pem, e.kind, e.role, at);
    if (!retired.some((r) => r.sha256 === entry.sha256)) retired.push(entry);
  }
  return { version: 1, retired };
}

/**
 * The retired roots of one kind, PEM: still trust anchors for the tokens dated before their
 * retirement. From a history, or from the entries a trust-anchor document lists (current ones too).
 */
export function retiredRoots(from: TsaHistory | readonly TsaCertificateEntry[], kind: TsaKind): string[] {
  const entries = 'retired' in from ? from.retired : from.filter((e) => e.status === 'retired');
  return entries.filter((e) => e.kind === kind && e.role === 'root').map((e) => e.pem);
}

/** The retirements the verifier enforces (every kind and role). */
export function retirementsOf(entries: readonly Pick<TsaCertificateEntry, 'sha256' | 'retired_at'>[]): TsaRetirement[] {
  return entries.filter((e) => e.retired_at !== null).map((e) => ({ sha256: e.sha256.toLowerCase(), retiredAt: new Date(e.retired_at as string) }));
}
