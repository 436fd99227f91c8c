import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { sha256Hex } from '../crypto/hash.js';
import { type ValidityWindow, windowOf } from '../crypto/key-windows.js';
import { pqTsaFiles } from '../crypto/tsa/files.js';
import type { TrustedKey } from '../evidence/verdict.js';
import { retiredRoots, retirementsOf } from '../crypto/tsa/history.js';
import type { VerifyDeps } from '../evidence/verify.js';
import { getConfig } from './core.js';
import { getEvidenceRepo, getRpcReader } from './evidence.js';
import { getKeyRegistry, getTsaHistory } from './key-registry.js';
import { lazy } from './lazy.js';

/**
 * What the public verification paths need: trust anchors only. No private key, no signing code,
 * no ethers: the TSA roots come from DATA_DIR (embedded TSA) or TSA_ROOTS_FILE; the ML-DSA public
 * key fingerprints from the public key file written next to the seed (local), PQ_PUBLIC_KEY_FILE,
 * and PQ_TRUSTED_KEY_FINGERPRINTS for keys rotated out.
 */
const tsaRoots = /* @__PURE__ */ lazy(() => loadTsaRoots());
const trustedPqKeys = /* @__PURE__ */ lazy(() => loadTrustedPqKeys());
const walletWindows = /* @__PURE__ */ lazy(() => loadWalletWindows());
const tsaPqRoots = /* @__PURE__ */ lazy(() => loadTsaPqRoots());
const tsaRetirements = /* @__PURE__ */ lazy(async () => retirementsOf((await getTsaHistory()).retired));

export function getVerifyDeps(): VerifyDeps {
  return { repo: getEvidenceRepo(), rpc: getRpcReader(), tsaRoots, trustedPqKeys, walletWindows, tsaPqRoots, tsaRetirements };
}

/** The wallets the key registry records, with their windows (decisions.md "Key validity windows"). */
export async function loadWalletWindows(): Promise<{ address: string; window: ValidityWindow }[]> {
  const registry = await getKeyRegistry();
  return registry.keys.filter((k) => k.kind === 'ledger-wallet').map((k) => ({ address: k.address ?? k.kid, window: windowOf(k) }));
}

/**
 * PEM roots the post-quantum (ML-DSA-65) tokens must chain to: the post-quantum TSA's root
 * (TSA_PQ_ROOT_FILE with a KMS key, else DATA_DIR/tsa/pq-root.pem); none when there is no such
 * file (the post-quantum TSA never ran here).
 */
export async function loadTsaPqRoots(): Promise<string[]> {
  const { tsa } = getConfig();
  const file = tsa.pq?.rootFile ?? pqTsaFiles(tsa.dir).rootCert;
  const retired = retiredRoots(await getTsaHistory(), 'pq');
  try {
    return [await readFile(file, 'utf8'), ...retired];
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return retired;
    throw error;
  }
}

/** PEM roots the RFC 3161 tokens must chain to. */
export async function loadTsaRoots(): Promise<string[]> {
  const { tsa } = getConfig();
  // Remote TSA: its roots. Embedded TSA: the root of its certificate (TSA_ROOT_FILE with a KMS key, else DATA_DIR).
  const file = tsa.scheme === 'remote' && tsa.rootsFile ? tsa.rootsFile : (tsa.rootFile ?? path.join(tsa.dir, 'root.pem'));
  // And the roots a rotation retired: still anchors for the tokens dated before their retirement.
  return [await readFile(file, 'utf8'), ...retiredRoots(await getTsaHistory(), 'classic')];
}

/** SHA-256 fingerprints of the ML-DSA-65 public keys whose signatures we vouch for. */
export async function loadPqFingerprints(): Promise<string[]> {
  const config = getConfig();
  const out = new Set<string>(config.signer.trustedFingerprints);
  try {
    out.add(sha256Hex(await readFile(config.signer.publicKeyFile)));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return [...out];
}

/**
 * The ML-DSA-65 keys whose signatures we vouch for, each with its validity window (decisions.md
 * "Key validity windows"): the configured key (its registry window, or unbounded), every ML-DSA-65
 * key of the registry with its window, and PQ_TRUSTED_KEY_FINGERPRINTS (unbounded: windows unknown).
 */
export async function loadTrustedPqKeys(): Promise<TrustedKey[]> {
  const registry = await getKeyRegistry();
  const out: TrustedKey[] = registry.keys.filter((k) => k.kind === 'ml-dsa-65').map((k) => ({ sha256: k.sha256, window: windowOf(k) }));
  const recorded = new Set(out.map((k) => (typeof k === 'string' ? k : k.sha256)));
  // The configured key and PQ_TRUSTED_KEY_FINGERPRINTS that the registry does not know: unbounded.
  for (const fp of await loadPqFingerprints()) if (!recorded.has(fp)) out.push(fp);
  return out;
}
