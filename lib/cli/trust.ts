/**
 * The verifier's trust file: the trust anchors of the services a user decided to trust, fetched
 * once (`evidence trust add <base-url>`) and used by every later `evidence verify` with no flags,
 * like a CA bundle. Trust on first use: `add` prints the fingerprints so that they can be compared
 * with what the operator publishes elsewhere; later runs never contact the service.
 *
 * Location: --trust-file, else EVIDENCE_TRUST_FILE, else $XDG_CONFIG_HOME/evidence/trust.json
 * (~/.config/evidence/trust.json).
 */
import { createHash, X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { rawPublicKeyOf, windowOfJwk } from '../crypto/jwk.js';
import { type ValidityWindow, windowOf } from '../crypto/key-windows.js';
import type { TrustedKey, TrustSnapshot } from '../evidence/verdict.js';
import { CliError } from './client.js';
import { type TsaCertificateEntry, type TsaRetirement, retiredRoots, retirementsOf } from '../crypto/tsa/history.js';
import { certificatesFromPem } from '../crypto/tsa/x509-verify.js';

/** One trusted service. */
export interface TrustedService {
  base_url: string;
  added_at: string;
  tsa_root_pem: string;
  tsa_root_sha256: string;
  tsa_policy_oid: string;
  /** The post-quantum TSA root (ML-DSA-65) and policy, when the service has one. */
  tsa_pq_root_pem?: string;
  tsa_pq_policy_oid?: string;
  /** Every TSA certificate, current and retired, with its validity window (the trust-anchor document's tsa.certificates). */
  tsa_certificates?: TsaCertificateEntry[];
  /** The JWK set as fetched (Ed25519 and ML-DSA-65 keys, retired ones included). */
  jwks: { keys: Record<string, unknown>[] };
  ledger: {
    network: string;
    chain_id: number;
    wallet_address: string;
    /** Every wallet of the service with its validity window (absent in files written before the windows). */
    wallets?: ({ address: string; status: string } & ValidityWindow)[];
  };
  /** The PDF signing certificates with their windows (absent in files written before the windows). */
  pdf_signing?: ({ status: string; certificate_pem: string; sha256: string } & ValidityWindow)[];
}

export interface TrustFile {
  version: 1;
  services: TrustedService[];
}

/** What a verify run pins, from every trusted service together. */
export interface PinnedAnchors {
  /** TSA roots: the current ones and those a rotation retired (anchors for the tokens dated before). */
  roots: string[];
  /** Post-quantum (ML-DSA-65) TSA roots, current and retired. */
  pqRoots: string[];
  /** Retired TSA certificates: a token dated after its certificate's retirement fails. */
  tsaRetirements: TsaRetirement[];
  pqFingerprints: string[];
  /** The same keys with the validity windows the service published (decisions.md "Key validity windows"). */
  pqKeys: TrustedKey[];
  wallets: string[];
  /** The wallets' validity windows, where the service published them. */
  walletWindows: { address: string; window: ValidityWindow }[];
  /** The PDF signing certificates (SHA-256 of the DER) with their windows, where the service published them. */
  pdfSigners: { sha256: string; window: ValidityWindow }[];
  jwks: Record<string, unknown>[];
  /**
   * Each service and when it was pinned: what it pinned is what it had published then, nothing
   * made since. A key not pinned that signed after that is not established, and the report names
   * the refresh (`evidence trust add <url>`); one that signed before fails (lib/evidence/verdict.ts judgeUnpinned).
   */
  snapshots: TrustSnapshot[];
  source: string;
}

export function trustFilePath(explicit: string | undefined, env: NodeJS.ProcessEnv): string {
  if (explicit) return explicit;
  if (env.EVIDENCE_TRUST_FILE) return env.EVIDENCE_TRUST_FILE;
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'evidence', 'trust.json');
}

export async function readTrustFile(file: string): Promise<TrustFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, services: [] };
    throw new CliError(`Cannot read the trust file ${file}.`);
  }
  const parsed = JSON.parse(text) as Partial<TrustFile>;
  if (parsed.version !== 1 || !Array.isArray(parsed.services)) throw new CliError(`${file} is not an evidence trust file.`);
  return parsed as TrustFile;
}

async function writeTrustFile(file: string, trust: TrustFile): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(trust, null, 2)}\n`, { mode: 0o644 });
  await rename(tmp, file);
}

/** The anchors of every trusted service, for a verify run; undefined when the file holds none. */
export function pinnedAnchors(trust: TrustFile, file: string): PinnedAnchors | undefined {
  if (trust.services.length === 0) return undefined;
  const pq: string[] = [];
  const pqKeys: TrustedKey[] = [];
  for (const s of trust.services) {
    for (const k of s.jwks.keys) {
      const raw = rawPublicKeyOf(k);
      if (raw?.algorithm !== 'ML-DSA-65') continue;
      const sha256 = createHash('sha256').update(raw.publicKey).digest('hex');
      pq.push(sha256);
      pqKeys.push({ sha256, window: windowOfJwk(k) });
    }
  }
  const walletWindows = trust.services.flatMap((s) => (s.ledger.wallets ?? []).map((w) => ({ address: w.address, window: windowOf(w) })));
  return {
    roots: trust.services.flatMap((s) => [s.tsa_root_pem, ...retiredRoots(s.tsa_certificates ?? [], 'classic')]),
    pqRoots: trust.services.flatMap((s) => [...(s.tsa_pq_root_pem ? [s.tsa_pq_root_pem] : []), ...retiredRoots(s.tsa_certificates ?? [], 'pq')]),
    tsaRetirements: trust.services.flatMap((s) => retirementsOf(s.tsa_certificates ?? [])),
    pqFingerprints: pq,
    pqKeys,
    wallets: [...new Set([...trust.services.map((s) => s.ledger.wallet_address), ...walletWindows.map((w) => w.address)])],
    walletWindows,
    pdfSigners: trust.services.flatMap((s) => (s.pdf_signing ?? []).map((p) => ({ sha256: p.sha256.toLowerCase(), window: windowOf(p) }))),
    jwks: trust.services.flatMap((s) => s.jwks.keys),
    snapshots: trust.services.map((s) => ({ service: s.base_url, pinned_at: s.added_at })),
    source: `trust file ${file}: ${trust.services.map((s) => s.base_url).join(', ')}`,
  };
}

type Fetch = (url: string) => Promise<Response>;

async function getJson(fetchImpl: Fetch, url: string): Promise<unknown> {
  let res: Response;
  try {
    res = await fetchImpl(url);
  } catch (error) {
    throw new CliError(`Cannot reach ${url}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!res.ok) throw new CliError(`${url} answered ${res.status}.`);
  return res.json();
}

/**
 * Fetches a service's trust anchors (its /.well-known documents) and stores them, replacing an
 * earlier entry for the same base URL. The root is checked to be a certificate whose SHA-256 is
 * the one the document states; every signing key of the document must be in the JWK set.
 */
export async function addTrustedService(file: string, baseUrl: string, fetchImpl: Fetch = fetch, now = new Date()): Promise<TrustedService> {
  const base = baseUrl.replace(/\/+$/, '');
  const doc = (await getJson(fetchImpl, `${base}/.well-known/evidence-trust-anchors.json`)) as {
    tsa?: { root_pem?: string; root_sha256?: string; policy_oid?: string; pq?: { root_pem?: string; root_sha256?: string; policy_oid?: string }; certificates?: TsaCertificateEntry[] };
    jwks_url?: string;
    signing_keys?: { kid: string }[];
    ledger?: { network?: string; chain_id?: number; wallet_address?: string; wallets?: TrustedService['ledger']['wallets'] };
    pdf_signing?: TrustedService['pdf_signing'];
  };
  const rootPem = doc.tsa?.root_pem;
  if (!rootPem || !doc.ledger?.wallet_address || typeof doc.ledger.chain_id !== 'number') throw new CliError(`${base} published no usable trust-anchor document.`);
  let root: X509Certificate;
  try {
    root = new X509Certificate(rootPem);
  } catch {
    throw new CliError(`${base}: the TSA root is not a PEM certificate.`);
  }
  const rootSha256 = createHash('sha256').update(root.raw).digest('hex');
  if (doc.tsa?.root_sha256 && doc.tsa.root_sha256 !== rootSha256) throw new CliError(`${base}: the TSA root's SHA-256 is not the one the document states.`);
  const jwks = (await getJson(fetchImpl, doc.jwks_url ?? `${base}/.well-known/jwks.json`)) as { keys?: Record<string, unknown>[] };
  if (!Array.isArray(jwks.keys)) throw new CliError(`${base}: the JWK set has no keys.`);
  const kids = new Set(jwks.keys.map((k) => k.kid));
  for (const k of doc.signing_keys ?? []) if (!kids.has(k.kid)) throw new CliError(`${base}: signing key ${k.kid} is not in the JWK set.`);
  const service: TrustedService = {
    base_url: base,
    added_at: now.toISOString(),
    tsa_root_pem: rootPem,
    tsa_root_sha256: rootSha256,
    tsa_policy_oid: doc.tsa?.policy_oid ?? '',
    ...tsaExtras(base, doc.tsa),
    jwks: { keys: jwks.keys },
    ledger: {
      network: doc.ledger.network ?? '',
      chain_id: doc.ledger.chain_id,
      wallet_address: doc.ledger.wallet_address,
      ...(Array.isArray(doc.ledger.wallets) ? { wallets: doc.ledger.wallets } : {}),
    },
    ...(Array.isArray(doc.pdf_signing) ? { pdf_signing: pdfSigningOf(base, doc.pdf_signing) } : {}),
  };
  const trust = await readTrustFile(file);
  trust.services = [...trust.services.filter((s) => s.base_url !== base), service];
  await writeTrustFile(file, trust);
  return service;
}

/**
 * The post-quantum root and the TSA certificates' windows of a trust-anchor document, each
 * certificate checked against the SHA-256 the document states for it (as the root is).
 */
function tsaExtras(base: string, tsa: { pq?: { root_pem?: string; root_sha256?: string; policy_oid?: string }; certificates?: TsaCertificateEntry[] } | undefined): Partial<TrustedService> {
  const out: Partial<TrustedService> = {};
  // Our own X.509 reader: the Node running the CLI may have no ML-DSA in its OpenSSL.
  const sha = (pem: string, what: string) => {
    try {
      const cert = certificatesFromPem(pem)[0];
      if (!cert) throw new Error('no certificate');
      return createHash('sha256').update(cert.der).digest('hex');
    } catch {
      throw new CliError(`${base}: the ${what} is not a PEM certificate.`);
    }
  };
  if (tsa?.pq?.root_pem) {
    if (tsa.pq.root_sha256 && sha(tsa.pq.root_pem, 'post-quantum TSA root') !== tsa.pq.root_sha256) throw new CliError(`${base}: the post-quantum TSA root's SHA-256 is not the one the document states.`);
    out.tsa_pq_root_pem = tsa.pq.root_pem;
    out.tsa_pq_policy_oid = tsa.pq.policy_oid ?? '';
  }
  if (Array.isArray(tsa?.certificates)) {
    for (const e of tsa.certificates) {
      if (sha(e.pem, `TSA ${e.kind} ${e.role} certificate`) !== e.sha256) throw new CliError(`${base}: a TSA certificate's SHA-256 is not the one the document states.`);
    }
    out.tsa_certificates = tsa.certificates;
  }
  return out;
}

/**
 * The PDF signing certificates of a trust-anchor document with their windows, each checked against
 * the SHA-256 the document states for it (`evidence verify --certificate` pins them by that hash).
 */
function pdfSigningOf(base: string, entries: NonNullable<TrustedService['pdf_signing']>): NonNullable<TrustedService['pdf_signing']> {
  for (const p of entries) {
    let sha256: string | undefined;
    try {
      const cert = certificatesFromPem(p.certificate_pem)[0];
      sha256 = cert ? createHash('sha256').update(cert.der).digest('hex') : undefined;
    } catch {
      sha256 = undefined;
    }
    if (!sha256) throw new CliError(`${base}: a PDF signing certificate is not a PEM certificate.`);
    if (sha256 !== p.sha256?.toLowerCase()) throw new CliError(`${base}: a PDF signing certificate's SHA-256 is not the one the document states.`);
  }
  return entries;
}

export async function removeTrustedService(file: string, baseUrl: string): Promise<boolean> {
  const base = baseUrl.replace(/\/+$/, '');
  const trust = await readTrustFile(file);
  const before = trust.services.length;
  trust.services = trust.services.filter((s) => s.base_url !== base);
  if (trust.services.length === before) return false;
  await writeTrustFile(file, trust);
  return true;
}

/** Lines describing one trusted service: what to compare with the operator's published values. */
export function describeService(s: TrustedService): string[] {
  const lines = [
    `${s.base_url} (added ${s.added_at})`,
    `  TSA root SHA-256   ${s.tsa_root_sha256}`,
    `  TSA policy         ${s.tsa_policy_oid}`,
    `  ledger             chain ${s.ledger.chain_id} (${s.ledger.network}), wallet ${s.ledger.wallet_address}`,
  ];
  const span = (w: ValidityWindow) => `valid ${w.not_before ?? '…'} – ${w.retired_at ?? w.not_after ?? 'now'}`;
  for (const w of s.ledger.wallets ?? []) if (w.address !== s.ledger.wallet_address || w.retired_at) lines.push(`  wallet ${w.address} ${w.status} ${span(w)}`);
  for (const k of s.jwks.keys) {
    const raw = rawPublicKeyOf(k);
    const fp = raw ? createHash('sha256').update(raw.publicKey).digest('hex') : '?';
    const window = 'not_before' in k ? ` ${span(windowOfJwk(k))}` : '';
    lines.push(`  key ${String(k.kid).padEnd(25)} ${String(k.alg).padEnd(9)} ${String(k.status ?? '')} sha256 ${fp}${window}`);
  }
  for (const p of s.pdf_signing ?? []) lines.push(`  pdf signer ${p.sha256.slice(0, 16)}… ${p.status} ${span(p)}`);
  return lines;
}
