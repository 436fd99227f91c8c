/**
 * The key registry as every reader of the service sees it (decisions.md "Key validity windows"):
 * KEY_REGISTRY_FILE, read once per process. The keys the configuration names (the ML-DSA-65 and
 * Ed25519 signers, the PDF signing certificate, the wallet) are the active ones; the registry
 * gives each its window, and keeps the retired ones with theirs. A configured key the registry
 * does not know (a data directory or stage from before the registry) is active with an unbounded
 * window; RETIRED_KEYS_FILE and PQ_TRUSTED_KEY_FINGERPRINTS add retired keys with unknown windows.
 *
 * No ethers, no signer, no ML-DSA code: the publishing and verifying functions import this.
 */
import { type KeyKind, type KeyRegistry, type RegistryEntry, UNBOUNDED, type ValidityWindow, findEntry, readKeyRegistry, windowOf } from '../crypto/key-windows.js';
import { type TsaHistory, readTsaHistory } from '../crypto/tsa/history.js';
import { unavailable } from '../errors.js';
import { log } from '../log.js';
import { getConfig } from './core.js';
import { lazy } from './lazy.js';

/** The registry file as written (one read per process; a rotation restarts the service). */
export const getKeyRegistry: () => Promise<KeyRegistry> = /* @__PURE__ */ lazy(() => readKeyRegistry(getConfig().keyRegistryFile));

/** The TSA history (retired TSA certificates, lib/crypto/tsa/history.ts), read once per process like the registry. */
export const getTsaHistory: () => Promise<TsaHistory> = /* @__PURE__ */ lazy(() => readTsaHistory(getConfig().tsa.historyFile));

/** The window the registry records for a key, or none (unbounded) when it does not know it. */
export function windowIn(registry: KeyRegistry, kind: KeyKind, kid: string): ValidityWindow {
  const entry = findEntry(registry, kind, kid);
  return entry ? windowOf(entry) : UNBOUNDED;
}

/** The registry's entries of a kind other than `activeKid` (the retired ones, and any the configuration does not name). */
export function otherEntries(registry: KeyRegistry, kind: KeyKind, activeKid: string | undefined): RegistryEntry[] {
  const same = (kid: string) => (kind === 'ledger-wallet' ? kid.toLowerCase() === activeKid?.toLowerCase() : kid === activeKid);
  return registry.keys.filter((k) => k.kind === kind && !same(k.kid));
}

/**
 * The guard of every signer the composition root builds: a key the registry retired never signs
 * again (a signature dated after its retirement fails verification, decisions.md "Key validity
 * windows"). A configured retired key is an operator's error: 503 `signer_unavailable` (nothing
 * is signed or recorded), and the log says which key and what to do. A key the registry does not
 * know passes.
 */
export async function assertNotRetired(kind: KeyKind, kid: string): Promise<void> {
  const entry = findEntry(await getKeyRegistry(), kind, kid);
  if (!entry?.retired_at) return;
  log.error('a retired key is configured: point the configuration at the active key, or finish a local rotation (npm run admin -- rotate-key)', {
    kind,
    kid,
    retired_at: entry.retired_at,
  });
  throw unavailable('signer_unavailable', `The configured ${kind} key was retired at ${entry.retired_at}; it signs nothing any more, so nothing was signed or recorded.`);
}
