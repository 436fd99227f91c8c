import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { sha256Hex } from '../crypto/hash.js';
import type { VerifyDeps } from '../evidence/verify.js';
import { getConfig } from './core.js';
import { getEvidenceRepo, getRpcReader } from './evidence.js';
import { lazy } from './lazy.js';

/**
 * What the public verification paths need: trust anchors only. No private key, no signing code,
 * no ethers: the TSA roots come from DATA_DIR (embedded TSA) or TSA_ROOTS_FILE; the ML-DSA public
 * key fingerprints from the public key file written next to the seed (local), PQ_PUBLIC_KEY_FILE,
 * and PQ_TRUSTED_KEY_FINGERPRINTS for keys rotated out.
 */
const tsaRoots = /* @__PURE__ */ lazy(() => loadTsaRoots());
const trustedPqKeys = /* @__PURE__ */ lazy(() => loadPqFingerprints());

export function getVerifyDeps(): VerifyDeps {
  return { repo: getEvidenceRepo(), rpc: getRpcReader(), tsaRoots, trustedPqKeys };
}

/** PEM roots the RFC 3161 tokens must chain to. */
export async function loadTsaRoots(): Promise<string[]> {
  const { tsa } = getConfig();
  // Remote TSA: its roots. Embedded TSA: the root of its certificate (TSA_ROOT_FILE with a KMS key, else DATA_DIR).
  const file = tsa.scheme === 'remote' && tsa.rootsFile ? tsa.rootsFile : (tsa.rootFile ?? path.join(tsa.dir, 'root.pem'));
  return [await readFile(file, 'utf8')];
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
