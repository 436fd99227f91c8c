/**
 * `npm run admin -- rotate-key <kind>`: one command per key of the local stack (decisions.md "Key
 * validity windows"; production: docs/runbook.md "Rotating keys"). It makes the new key, records
 * it in the key registry with `not_before` = the rotation time and retires the old one at that
 * same instant, then puts the new key where the stack loads it. The old private key is not kept:
 * its public half, in the registry, is all a verifier needs.
 *
 * A resumable state machine over files, safe to run again after a crash at any point:
 *
 *   idle ──make <key>.next (0600, O_EXCL)──▶ prepared ──registry rewritten (atomic)──▶ recorded ──rename──▶ idle
 *
 * `prepared` and `recorded` both leave `<key>.next` behind; a second run takes that key (never a
 * third one), records it if the registry does not yet, and finishes the rename. Run it with the
 * stack stopped: a running stack keeps signing with the key it loaded until it restarts.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.js';
import { ed25519KeyId, ed25519PublicKeyFingerprint, ed25519PublicKeyFromSpki, LocalEd25519Signer } from '../crypto/ed25519-signer.js';
import { describeCertificate, findEntry, type KeyRegistry, readKeyRegistry, type RegistryEntry, rotateRegistry, walletEntry, withEntry, writeKeyRegistry } from '../crypto/key-windows.js';
import { LocalMlDsaSigner, mlDsaKeyId, mlDsaPublicKeyFingerprint } from '../crypto/ml-dsa.js';
import { pdfSignerFiles } from '../crypto/pdf-sign/files.js';
import { issueDocumentSigningCertificate } from '../crypto/tsa/certificates.js';
import { tsaFiles } from '../crypto/tsa/files.js';
import { pemToDer } from '../crypto/tsa/pem.js';
import { keepKeyAs, loadOrCreateLocalWallet, localWalletFiles, readLocalWalletKey } from '../ledger/local-wallet.js';

/** The kinds `rotate-key` handles (the TSA leaf and root are the TSA's: lib/crypto/tsa/). */
export const ROTATABLE_KINDS = ['ml-dsa-65', 'ed25519', 'pdf-signing'] as const;
export type RotatableKind = (typeof ROTATABLE_KINDS)[number];

export function isRotatableKind(kind: string): kind is RotatableKind {
  return (ROTATABLE_KINDS as readonly string[]).includes(kind);
}

/** What a rotation did (printed as JSON by the admin CLI; public material only). */
export interface RotationResult {
  kind: RotatableKind;
  retired: { kid: string; sha256: string; retired_at: string } | null;
  active: { kid: string; sha256: string; not_before: string | null; not_after: string | null };
  registry: string;
  /** true when this run found a rotation a crashed run had begun and finished it. */
  resumed: boolean;
}

/** Thrown when the configuration does not let this machine rotate the key (a KMS key, a seed in the environment). */
export class RotationRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RotationRefused';
  }
}

/**
 * One kind's key files and how to describe a key from them. A new kind (the TSA leaf and root)
 * adds its slot in {@link slotOf} and its name in {@link ROTATABLE_KINDS}; the state machine of
 * {@link rotateLocalKey} is the same for every kind.
 */
interface KeySlot {
  /** The file(s) the stack loads, and their `.next` twins, in the order they are renamed (the last one marks done). */
  files: { live: string; next: string; mode: number }[];
  /** Makes the new key's file contents (same order as `files`). */
  make(): Promise<string[]>;
  /** The registry entry of the key in these file contents (undefined: no key there). */
  describe(contents: string[]): Promise<Omit<RegistryEntry, 'retired_at'>>;
  /** Written after the rename (derived public files). */
  after?(contents: string[]): Promise<void>;
}

function slotOf(config: Config, kind: RotatableKind): KeySlot {
  const next = (file: string, mode: number) => ({ live: file, next: `${file}.next`, mode });
  switch (kind) {
    case 'ml-dsa-65': {
      if (config.signer.scheme !== 'local') throw new RotationRefused('the ML-DSA-65 signer is a KMS key: rotate it as docs/runbook.md "Rotating keys" says');
      if (config.signer.seedHex) throw new RotationRefused('the ML-DSA-65 seed comes from PQ_SIGNER_SEED: rotate by changing it, or unset it to use DATA_DIR/keys/ml-dsa-65.seed');
      return {
        files: [next(config.signer.seedFile, 0o600)],
        make: async () => [randomBytes(32).toString('hex')],
        describe: async ([seed]) => {
          const publicKey = await LocalMlDsaSigner.fromSeed(Buffer.from((seed ?? '').trim(), 'hex')).publicKey();
          return { kind, kid: mlDsaKeyId(publicKey), sha256: mlDsaPublicKeyFingerprint(publicKey), public_key: Buffer.from(publicKey).toString('base64url'), not_before: null, not_after: null };
        },
        after: async ([seed]) => {
          const publicKey = await LocalMlDsaSigner.fromSeed(Buffer.from((seed ?? '').trim(), 'hex')).publicKey();
          await mkdir(path.dirname(config.signer.publicKeyFile), { recursive: true, mode: 0o700 });
          await writeFile(config.signer.publicKeyFile, publicKey, { mode: 0o644 });
        },
      };
    }
    case 'ed25519': {
      if (config.ed25519.scheme !== 'local') throw new RotationRefused('the Ed25519 signer is a KMS key: rotate it as docs/runbook.md "Rotating keys" says');
      return {
        files: [next(config.ed25519.seedFile, 0o600)],
        make: async () => [randomBytes(32).toString('hex')],
        describe: async ([seed]) => {
          const publicKey = await LocalEd25519Signer.fromSeed(Buffer.from((seed ?? '').trim(), 'hex')).publicKey();
          return { kind, kid: ed25519KeyId(publicKey), sha256: ed25519PublicKeyFingerprint(publicKey), public_key: Buffer.from(publicKey).toString('base64url'), not_before: null, not_after: null };
        },
      };
    }
    case 'pdf-signing': {
      if (config.pdfSigner.kmsKeyId) throw new RotationRefused('the PDF signing key is a KMS key: rotate it as docs/runbook.md "Rotating keys" says');
      if (config.tsa.scheme !== 'embedded' || config.tsa.kmsKeyId) throw new RotationRefused('the PDF signing certificate is issued by the embedded TSA\'s local root; this stack has none');
      const files = pdfSignerFiles(config.pdfSigner.dir);
      const tsa = tsaFiles(config.tsa.dir);
      // The certificate is renamed last: a certificate in place always has its key in place.
      return {
        files: [next(files.key, 0o600), next(files.cert, 0o644)],
        make: async () => {
          const issued = await issueDocumentSigningCertificate({ rootCertPem: await readFile(tsa.rootCert, 'utf8'), rootKeyPkcs8Pem: await readFile(tsa.rootKey, 'utf8') });
          return [issued.keyPkcs8Pem, issued.certPem];
        },
        describe: async ([, certPem]) => describeCertificate(kind, certPem ?? ''),
      };
    }
  }
}

async function readOne(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function readAll(files: readonly string[]): Promise<string[] | undefined> {
  try {
    return await Promise.all(files.map((f) => readFile(f, 'utf8')));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Rotates one kind of key of the local stack (see the module comment). `clock` is the rotation
 * time (tests inject it); the registry is KEY_REGISTRY_FILE.
 */
export async function rotateLocalKey(config: Config, kind: RotatableKind, clock: () => Date = () => new Date()): Promise<RotationResult> {
  const slot = slotOf(config, kind);
  const live = await readAll(slot.files.map((f) => f.live));
  if (!live) throw new RotationRefused(`there is no ${kind} key in ${path.dirname(slot.files[0]?.live ?? '')} to rotate: start the stack once (npm start) first`);
  const old = await slot.describe(live);

  // prepared: the new key's files, made once; a rerun takes the ones a crashed run left (a file
  // already renamed into place is the new one: the live file that has no `.next` any more).
  const pending = await Promise.all(slot.files.map((f) => readOne(f.next)));
  const resumed = pending.some((c) => c !== undefined);
  let nextContents: string[];
  if (resumed) {
    nextContents = pending.map((c, i) => c ?? live[i] ?? '');
  } else {
    nextContents = await slot.make();
    for (const [i, f] of slot.files.entries()) {
      await mkdir(path.dirname(f.next), { recursive: true, mode: 0o700 });
      const tmp = `${f.next}.${process.pid}.tmp`;
      await writeFile(tmp, nextContents[i] ?? '', { mode: f.mode });
      await rename(tmp, f.next);
    }
  }
  const fresh = await slot.describe(nextContents);
  if (fresh.kid === old.kid) throw new Error(`the new ${kind} key is the old one`);

  // recorded: the registry says the old key retired now and the new one active from now (atomic).
  const registry: KeyRegistry = await readKeyRegistry(config.keyRegistryFile);
  const at = clock();
  const updated = rotateRegistry(registry, fresh, at, { ...old, retired_at: null });
  if (updated !== registry) await writeKeyRegistry(config.keyRegistryFile, updated);

  // done: the new key where the stack loads it (the last rename is the one that switches).
  for (const [i, f] of slot.files.entries()) if (pending[i] !== undefined || !resumed) await rename(f.next, f.live);
  await slot.after?.(nextContents);

  const retired = findEntry(updated, kind, old.kid);
  const active = findEntry(updated, kind, fresh.kid);
  return {
    kind,
    retired: retired?.retired_at ? { kid: retired.kid, sha256: retired.sha256, retired_at: retired.retired_at } : null,
    active: { kid: fresh.kid, sha256: fresh.sha256, not_before: active?.not_before ?? null, not_after: active?.not_after ?? null },
    registry: config.keyRegistryFile,
    resumed,
  };
}

/** The kinds the registry-only commands take (production: the keys live in KMS). */
export const REGISTRY_KINDS = ['ml-dsa-65', 'ed25519', 'pdf-signing', 'ledger-wallet'] as const;
export type RegistryKind = (typeof REGISTRY_KINDS)[number];

export function isRegistryKind(kind: string): kind is RegistryKind {
  return (REGISTRY_KINDS as readonly string[]).includes(kind);
}

/**
 * The registry entry of a new key from its public material: the raw ML-DSA-65 public key file
 * (1952 bytes, as docs/runbook.md exports it), the Ed25519 key as raw 32 bytes or the SPKI that
 * `aws kms get-public-key` gives (DER or PEM), the PDF signing certificate (PEM), or the wallet's
 * address (0x…).
 */
export async function entryFromMaterial(kind: RegistryKind, material: string): Promise<Omit<RegistryEntry, 'retired_at'>> {
  if (kind === 'ledger-wallet') {
    if (!/^0x[0-9a-fA-F]{40}$/.test(material)) throw new RotationRefused(`a wallet is named by its address (0x and 40 hex characters), not "${material}"`);
    const { getAddress } = await import('ethers');
    const address = getAddress(material.toLowerCase());
    return { ...walletEntry(address), not_before: null };
  }
  let bytes: Buffer;
  try {
    bytes = await readFile(material);
  } catch {
    throw new RotationRefused(`cannot read ${material}`);
  }
  if (kind === 'pdf-signing') return describeCertificate(kind, bytes.toString('utf8'));
  if (kind === 'ml-dsa-65') {
    if (bytes.length !== 1952) throw new RotationRefused(`${material} is not a raw ML-DSA-65 public key (1952 bytes)`);
    return { kind, kid: mlDsaKeyId(bytes), sha256: mlDsaPublicKeyFingerprint(bytes), public_key: bytes.toString('base64url'), not_before: null, not_after: null };
  }
  const text = bytes.toString('utf8');
  const der = text.includes('-----BEGIN PUBLIC KEY-----') ? pemToDer(text, 'PUBLIC KEY') : bytes;
  const raw = der.length === 32 ? Uint8Array.from(der) : ed25519PublicKeyFromSpki(Uint8Array.from(der));
  return { kind, kid: ed25519KeyId(raw), sha256: ed25519PublicKeyFingerprint(raw), public_key: Buffer.from(raw).toString('base64url'), not_before: null, not_after: null };
}

/**
 * Production, step 1 of a rotation (docs/runbook.md "Rotating keys"): records the new key as
 * active from now. The old key stays active too (the windows overlap) until {@link retireKey}:
 * functions deployed with the old configuration may still sign with it until the deployment ends.
 */
export async function addKey(file: string, kind: RegistryKind, material: string, options: { kmsKeyId?: string; previous?: string; clock?: () => Date } = {}): Promise<RegistryEntry> {
  const fresh = await entryFromMaterial(kind, material);
  let registry = await readKeyRegistry(file);
  if (options.previous !== undefined) {
    // The key in service until now, recorded when the registry does not know it yet (its window
    // unknown below: it signed before there was a registry).
    const previous = await entryFromMaterial(kind, options.previous);
    registry = withEntry(registry, { ...previous, retired_at: null });
  }
  const known = findEntry(registry, kind, fresh.kid);
  if (known) {
    if (options.previous !== undefined) await writeKeyRegistry(file, registry);
    return known;
  }
  const entry: RegistryEntry = { ...fresh, not_before: fresh.not_before ?? (options.clock ?? (() => new Date()))().toISOString(), retired_at: null, ...(options.kmsKeyId ? { kms_key_id: options.kmsKeyId } : {}) };
  await writeKeyRegistry(file, { version: 1, keys: [...registry.keys, entry] });
  return entry;
}

/**
 * Production, step 2: the old key's window ends now (after the deployment that stopped using it,
 * and after its KMS key was disabled, so that it cannot sign later). A key the registry does not
 * know yet is recorded from its public material first (`material`), with its window unknown below.
 * For a wallet, `unfinished` says how many of its transactions are not final yet: the drain rule
 * refuses the retirement while there are any (their replacement and resending are keyed by wallet).
 */
export async function retireKey(
  file: string,
  kind: RegistryKind,
  kidOrMaterial: string,
  options: { clock?: () => Date; unfinished?: (address: string) => Promise<number> } = {},
): Promise<RegistryEntry> {
  let registry = await readKeyRegistry(file);
  let entry = findEntry(registry, kind, kidOrMaterial);
  if (!entry) {
    const described = await entryFromMaterial(kind, kidOrMaterial);
    entry = findEntry(registry, kind, described.kid) ?? { ...described, retired_at: null };
    registry = withEntry(registry, entry);
  }
  if (entry.retired_at !== null) return entry;
  if (kind === 'ledger-wallet' && options.unfinished) {
    const open = await options.unfinished(entry.address ?? entry.kid);
    if (open > 0) throw new RotationRefused(`the wallet ${entry.kid} still has ${open} transaction(s) that are not final: let them finish (GET /api/v1/ledger/status) and retry`);
  }
  const retired: RegistryEntry = { ...entry, retired_at: (options.clock ?? (() => new Date()))().toISOString() };
  await writeKeyRegistry(file, { version: 1, keys: registry.keys.map((k) => (k === entry ? retired : k)) });
  return retired;
}

/** What `rotate-key ledger-wallet` did: the new wallet made, to be funded and switched to by the next start. */
export interface WalletRotationPrepared {
  kind: 'ledger-wallet';
  from: string;
  to: string;
  /** true when a rotation begun earlier was found (the same new wallet, never a third one). */
  resumed: boolean;
  next: string;
}

/**
 * `npm run admin -- rotate-key ledger-wallet` (local): the first half of the wallet's rotation,
 * files only (the chain is not running while the stack is stopped). It keeps the key of the
 * wallet the local chain's genesis funds (`ledger-wallet.genesis.key`, a hard link, unless the
 * first rotation kept it already) and makes the new key, `ledger-wallet.key.next` (0600, made
 * once: a rerun takes the same one). The next `npm start` finishes it (lib/local/wallet-rotation.ts):
 * it drains the old wallet, funds the new one from it with a value transfer through the ledger's
 * own nonce slots, records the new wallet active and the old one retired, and switches.
 */
export async function prepareLocalWalletRotation(config: Config): Promise<WalletRotationPrepared> {
  if (config.ledger.walletScheme !== 'local') throw new RotationRefused('the ledger wallet is a KMS key: rotate it as docs/runbook.md "Rotating keys" (Wallet) says');
  if (config.ledger.walletPrivateKey) throw new RotationRefused('the ledger wallet comes from LEDGER_PRIVATE_KEY: rotate by changing it (and funding the new address), or unset it to use DATA_DIR/keys/ledger-wallet.key');
  const files = localWalletFiles(config.ledger.walletKeyFile);
  const live = await readLocalWalletKey(files.live);
  if (!live) throw new RotationRefused(`there is no ledger wallet in ${path.dirname(files.live)} to rotate: start the stack once (npm start) first`);
  // Before the new key exists: a wallet that was never rotated is the one the genesis funds.
  await keepKeyAs(files.live, files.genesis);
  const next = await loadOrCreateLocalWallet(files.next);
  const { Wallet } = await import('ethers');
  return {
    kind: 'ledger-wallet',
    from: new Wallet(live).address,
    to: next.address,
    resumed: !next.created,
    next: 'npm start finishes the rotation: it funds the new wallet from the old one once the old one has nothing pending, retires the old one and sends from the new one',
  };
}
