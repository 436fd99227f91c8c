/**
 * The validity windows of the service's keys and the one registry that records them
 * (decisions.md "Key validity windows"). Every reader takes a key's window from here: the JWK set,
 * the trust-anchor document, v1/v2 verify and the verify page (through lib/deps), the CLI's trust
 * file (which stores the windows the service published).
 *
 * A window is `not_before ≤ t`, `t ≤ not_after`, `t < retired_at`, each bound only when set. For
 * X.509 kinds (the PDF signer, the TSA leaf and root) `not_before`/`not_after` are the
 * certificate's own; `retired_at` is the rotation's. Raw keys and wallets have no `not_after`.
 *
 * The pure part (the rule, the rotation of a registry in memory) has no I/O and no clock; the file
 * part reads and writes the registry atomically (temporary file, fsync, rename), mode 0644: it
 * holds public material only.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import { pemToDer } from './tsa/pem.js';

export const KEY_KINDS = ['ml-dsa-65', 'ed25519', 'pdf-signing', 'ledger-wallet', 'tsa-leaf', 'tsa-root'] as const;
export type KeyKind = (typeof KEY_KINDS)[number];

/** When a key may sign. ISO 8601 UTC with milliseconds; null = not bounded on that side. */
export interface ValidityWindow {
  /** First instant it may sign (X.509: notBefore). null: unknown (a key from before the registry). */
  not_before: string | null;
  /** Last instant it may sign (X.509: notAfter); raw keys and wallets: null. */
  not_after: string | null;
  /** When a rotation took it out of service; null while it signs. */
  retired_at: string | null;
}

/** One key of the registry. */
export interface RegistryEntry extends ValidityWindow {
  kind: KeyKind;
  /** The JWK kid (ML-DSA-65, Ed25519); X.509: `x509:<sha256 of the DER certificate>`; wallet: the EIP-55 address. */
  kid: string;
  /** SHA-256 (hex) of the raw public key, of the DER certificate, or of the 20 address bytes. */
  sha256: string;
  /** Raw public key, base64url (ML-DSA-65, Ed25519). */
  public_key?: string;
  /** PEM certificate (X.509 kinds). */
  certificate_pem?: string;
  /** EIP-55 address (ledger-wallet). */
  address?: string;
  /** Where the private half lives in production (a KMS key ARN); never a secret. */
  kms_key_id?: string;
}

export interface KeyRegistry {
  version: 1;
  keys: RegistryEntry[];
}

export type KeyStatus = 'active' | 'retired';

/** A key's status: derived from the window, never stored. */
export function keyStatus(w: ValidityWindow): KeyStatus {
  return w.retired_at === null ? 'active' : 'retired';
}

/** The window of an entry (what the published documents carry). */
export function windowOf(w: ValidityWindow): ValidityWindow {
  return { not_before: w.not_before, not_after: w.not_after, retired_at: w.retired_at };
}

/** No bound on either side: a key whose window nobody recorded (RETIRED_KEYS_FILE, PQ_TRUSTED_KEY_FINGERPRINTS). */
export const UNBOUNDED: ValidityWindow = Object.freeze({ not_before: null, not_after: null, retired_at: null });

export interface WindowVerdict {
  ok: boolean;
  /** In words: "valid as of …" or which bound the time crossed. */
  reason: string;
  /** When it holds for a key retired since: the retirement (readers phrase "as of" their own way, then add it). */
  retiredSince?: string;
}

/** " (retired since …)" after a verdict that holds for a key retired since, else nothing. */
export function retiredSinceNote(v: WindowVerdict): string {
  return v.retiredSince ? ` (retired since ${v.retiredSince})` : '';
}

/**
 * The rule: a signature made at `at` by a key with window `w` is within it when
 * `not_before ≤ at ≤ not_after` and `at < retired_at` (each bound only when set).
 */
export function checkWindow(w: ValidityWindow, at: Date): WindowVerdict {
  const t = at.getTime();
  if (Number.isNaN(t)) return { ok: false, reason: 'the signing time is not a time' };
  const when = at.toISOString();
  if (w.not_before !== null && t < Date.parse(w.not_before)) return { ok: false, reason: `dated ${when}, before the key's validity began (${w.not_before})` };
  if (w.not_after !== null && t > Date.parse(w.not_after)) return { ok: false, reason: `dated ${when}, after the key's validity ended (${w.not_after})` };
  if (w.retired_at !== null && t >= Date.parse(w.retired_at)) return { ok: false, reason: `dated ${when}, after the key's retirement at ${w.retired_at}` };
  const verdict: WindowVerdict = { ok: true, reason: '', ...(w.retired_at !== null ? { retiredSince: w.retired_at } : {}) };
  return { ...verdict, reason: `valid as of ${when}${retiredSinceNote(verdict)}` };
}

/** Validates a parsed registry; throws on a malformed one (a registry is written by us, so a bad one is an operator's error). */
export function parseKeyRegistry(value: unknown, source: string): KeyRegistry {
  const v = value as Partial<KeyRegistry> | null;
  if (!v || v.version !== 1 || !Array.isArray(v.keys)) throw new Error(`${source} is not a key registry ({"version": 1, "keys": [...]})`);
  const iso = (x: unknown) => x === null || (typeof x === 'string' && !Number.isNaN(Date.parse(x)));
  v.keys.forEach((k, i) => {
    const e = k as Partial<RegistryEntry>;
    if (!KEY_KINDS.includes(e.kind as KeyKind) || typeof e.kid !== 'string' || typeof e.sha256 !== 'string') throw new Error(`${source}: keys[${i}] needs kind, kid and sha256`);
    if (!iso(e.not_before) || !iso(e.not_after) || !iso(e.retired_at)) throw new Error(`${source}: keys[${i}] needs not_before, not_after and retired_at (ISO 8601 or null)`);
  });
  return v as KeyRegistry;
}

/** The registry in `file`; a missing file is an empty registry. */
export async function readKeyRegistry(file: string): Promise<KeyRegistry> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, keys: [] };
    throw error;
  }
  return parseKeyRegistry(JSON.parse(text), file);
}

/** Writes the registry atomically: a reader sees the old file or the new one, never a part. */
export async function writeKeyRegistry(file: string, registry: KeyRegistry): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  const handle = await open(tmp, 'w', 0o644);
  try {
    await handle.writeFile(`${JSON.stringify(registry, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
}

/** The entry of a kind with this kid (wallets: the address, case-insensitively). */
export function findEntry(registry: KeyRegistry, kind: KeyKind, kid: string): RegistryEntry | undefined {
  const same = kind === 'ledger-wallet' ? (a: string) => a.toLowerCase() === kid.toLowerCase() : (a: string) => a === kid;
  return registry.keys.find((k) => k.kind === kind && same(k.kid));
}

/**
 * The registry with `entry` recorded if its kid is not there yet (the key in service before the
 * registry existed, or at first start). Pure; returns the same object when nothing changes.
 */
export function withEntry(registry: KeyRegistry, entry: RegistryEntry): KeyRegistry {
  if (findEntry(registry, entry.kind, entry.kid)) return registry;
  return { version: 1, keys: [...registry.keys, entry] };
}

/**
 * One rotation, in memory: every active key of the new key's kind is retired at `at`, and the new
 * key enters with `not_before = at`, or, for an X.509 key, its certificate's notBefore (given).
 * The old active key is recorded first when the registry did not know it (`previous`, its window
 * unknown below). Idempotent: rotating to a kid that is already active changes nothing.
 */
export function rotateRegistry(registry: KeyRegistry, next: Omit<RegistryEntry, 'not_before' | 'retired_at'> & { not_before?: string | null }, at: Date, previous?: RegistryEntry): KeyRegistry {
  const when = at.toISOString();
  const known = previous ? withEntry(registry, previous) : registry;
  const existing = findEntry(known, next.kind, next.kid);
  if (existing && existing.retired_at === null) return known;
  if (existing) throw new Error(`the ${next.kind} key ${next.kid} was retired at ${existing.retired_at}; a retired key never signs again`);
  const notBefore = next.not_before ?? when;
  return {
    version: 1,
    keys: [
      ...known.keys.map((k) => (k.kind === next.kind && k.retired_at === null ? { ...k, retired_at: when } : k)),
      { ...next, not_before: notBefore, retired_at: null },
    ],
  };
}


/**
 * The registry entry of a wallet (its EIP-55 address; its fingerprint is the SHA-256 of the
 * address's 20 bytes). A wallet has no `not_after`; `not_before` is the caller's.
 */
export function walletEntry(address: string): Omit<RegistryEntry, 'not_before' | 'retired_at'> {
  return { kind: 'ledger-wallet', kid: address, sha256: createHash('sha256').update(Buffer.from(address.slice(2), 'hex')).digest('hex'), address, not_after: null };
}

/** The registry entry of an X.509 key: its window is the certificate's notBefore/notAfter. */
export function describeCertificate(kind: 'pdf-signing' | 'tsa-leaf' | 'tsa-root', certPem: string): Omit<RegistryEntry, 'retired_at'> {
  const der = pemToDer(certPem, 'CERTIFICATE');
  const cert = new X509Certificate(Buffer.from(der));
  const sha256 = createHash('sha256').update(der).digest('hex');
  return {
    kind,
    kid: `x509:${sha256}`,
    sha256,
    certificate_pem: cert.toString(),
    not_before: new Date(cert.validFrom).toISOString(),
    not_after: new Date(cert.validTo).toISOString(),
  };
}
