import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.js';
import { ed25519KeyId, ed25519PublicKeyFingerprint, LocalEd25519Signer } from '../crypto/ed25519-signer.js';
import { describeCertificate, readKeyRegistry, type RegistryEntry, walletEntry, withEntry, writeKeyRegistry } from '../crypto/key-windows.js';
import { LocalMlDsaSigner, mlDsaKeyId, mlDsaPublicKeyFingerprint } from '../crypto/ml-dsa.js';
import { pdfSignerFiles } from '../crypto/pdf-sign/files.js';
import { generateTsaCertificates, issueDocumentSigningCertificate } from '../crypto/tsa/certificates.js';
import { pqTsaFiles, tsaFiles } from '../crypto/tsa/files.js';
import { generatePqTsaCertificates } from '../crypto/tsa/pq-certificates.js';
import { loadOrCreateLocalWallet, localWalletFiles, readLocalWalletKey } from '../ledger/local-wallet.js';
import { lazy } from '../memo.js';

/** What the local stack needs to know after bootstrapping (never the secrets themselves). */
export interface LocalSecrets {
  created: string[];
  walletAddress: string;
  walletPrivateKey: string;
  /** The key of the wallet the local chain's genesis funds: the wallet's own until its first rotation (lib/ledger/local-wallet.ts). */
  genesisPrivateKey: string;
}

/**
 * Local secrets live in DATA_DIR, generated on first start and reused after: the JWT secret,
 * the ML-DSA-65 seed (and its public key, which verification reads), the Ed25519 signing seed, the ledger wallet key and
 * the embedded TSA's root and certificate. Files are owner-only (0600) and never logged.
 * Production takes keys from KMS instead (config schemes `kms`).
 */
export async function ensureLocalSecrets(config: Config): Promise<LocalSecrets> {
  const created: string[] = [];
  // The keys made now, recorded in the key registry with their windows starting now
  // (decisions.md "Key validity windows"); keys made before the registry stay unbounded.
  const recorded: Omit<RegistryEntry, 'not_before' | 'retired_at'>[] = [];
  const x509: Omit<RegistryEntry, 'retired_at'>[] = [];
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  if (config.jwt.source === 'file' && (await writeIfMissing(config.jwt.file, () => randomBytes(32).toString('base64url')))) {
    created.push('JWT secret');
  }
  if (config.signer.scheme === 'local') {
    const madeSeed = !config.signer.seedHex && (await writeIfMissing(config.signer.seedFile, () => randomBytes(32).toString('hex')));
    if (madeSeed) created.push('ML-DSA-65 seed');
    const seedHex = config.signer.seedHex ?? (await readFile(config.signer.seedFile, 'utf8')).trim();
    const publicKey = await LocalMlDsaSigner.fromSeed(Buffer.from(seedHex, 'hex')).publicKey();
    if (madeSeed) recorded.push({ kind: 'ml-dsa-65', kid: mlDsaKeyId(publicKey), sha256: mlDsaPublicKeyFingerprint(publicKey), public_key: Buffer.from(publicKey).toString('base64url'), not_after: null });
    // Rewritten every start: a changed seed must never leave a stale trusted public key behind.
    await mkdir(path.dirname(config.signer.publicKeyFile), { recursive: true, mode: 0o700 });
    await writeFile(config.signer.publicKeyFile, publicKey, { mode: 0o644 });
  }
  // The service's Ed25519 key (POST /api/v2/evidence/sign): a 32-byte seed, hex, mode 0600.
  if (config.ed25519.scheme === 'local' && (await writeIfMissing(config.ed25519.seedFile, () => randomBytes(32).toString('hex')))) {
    created.push('Ed25519 signing key');
    const publicKey = await LocalEd25519Signer.fromSeed(Buffer.from((await readFile(config.ed25519.seedFile, 'utf8')).trim(), 'hex')).publicKey();
    recorded.push({ kind: 'ed25519', kid: ed25519KeyId(publicKey), sha256: ed25519PublicKeyFingerprint(publicKey), public_key: Buffer.from(publicKey).toString('base64url'), not_after: null });
  }
  if (config.tsa.scheme === 'embedded') {
    const files = tsaFiles(config.tsa.dir);
    const make = lazy(() => generateTsaCertificates());
    let wrote = false;
    wrote = (await writeIfMissing(files.rootKey, async () => (await make()).rootKeyPkcs8Pem)) || wrote;
    if (wrote) {
      // A new root: the certificate files must come from the same generation.
      await writeFile(files.rootCert, (await make()).rootCertPem, { mode: 0o644 });
      await writeFile(files.tsaCert, (await make()).tsaCertPem, { mode: 0o644 });
      await writeFile(files.tsaKey, (await make()).tsaKeyPkcs8Pem, { mode: 0o600 });
      created.push('TSA root and certificate');
    }
    if (!config.pdfSigner.kmsKeyId) {
      // The PDF signing key (PAdES) gets its certificate from the same root; a new root needs a new one.
      const pdf = pdfSignerFiles(config.pdfSigner.dir);
      if (wrote || !(await exists(pdf.key)) || !(await exists(pdf.cert))) {
        const issued = await issueDocumentSigningCertificate({
          rootCertPem: await readFile(files.rootCert, 'utf8'),
          rootKeyPkcs8Pem: await readFile(files.rootKey, 'utf8'),
        });
        await mkdir(config.pdfSigner.dir, { recursive: true, mode: 0o700 });
        await writeFile(pdf.key, issued.keyPkcs8Pem, { mode: 0o600 });
        await writeFile(pdf.cert, issued.certPem, { mode: 0o644 });
        created.push('PDF signing key and certificate');
        x509.push(describeCertificate('pdf-signing', issued.certPem));
      }
    }
  }
  if (config.tsa.pq && !config.tsa.pq.kmsKeyId) {
    // The post-quantum TSA (ML-DSA-65 root and leaf), generated once like the classic one.
    const files = pqTsaFiles(config.tsa.dir);
    const make = lazy(() => generatePqTsaCertificates());
    if (await writeIfMissing(files.rootKey, async () => (await make()).rootKeyPkcs8Pem)) {
      await writeFile(files.rootCert, (await make()).rootCertPem, { mode: 0o644 });
      await writeFile(files.tsaCert, (await make()).tsaCertPem, { mode: 0o644 });
      await writeFile(files.tsaKey, (await make()).tsaKeyPkcs8Pem, { mode: 0o600 });
      created.push('post-quantum TSA root and certificate (ML-DSA-65)');
    }
  }
  let wallet = { address: '', privateKey: '' };
  if (config.ledger.walletScheme === 'local') {
    if (config.ledger.walletPrivateKey) {
      const { Wallet } = await import('ethers');
      const w = new Wallet(config.ledger.walletPrivateKey);
      wallet = { address: w.address, privateKey: w.privateKey };
    } else {
      const w = await loadOrCreateLocalWallet(config.ledger.walletKeyFile);
      if (w.created) {
        created.push('ledger wallet key');
        recorded.push(walletEntry(w.address));
      }
      wallet = { address: w.address, privateKey: w.privateKey };
    }
  }
  if (recorded.length + x509.length > 0) {
    const now = new Date().toISOString();
    let registry = await readKeyRegistry(config.keyRegistryFile);
    for (const e of [...recorded.map((r) => ({ ...r, not_before: now })), ...x509]) registry = withEntry(registry, { ...e, retired_at: null });
    await writeKeyRegistry(config.keyRegistryFile, registry);
  }
  const genesis = config.ledger.walletScheme === 'local' && !config.ledger.walletPrivateKey ? await readLocalWalletKey(localWalletFiles(config.ledger.walletKeyFile).genesis) : null;
  return { created, walletAddress: wallet.address, walletPrivateKey: wallet.privateKey, genesisPrivateKey: genesis ?? wallet.privateKey };
}

async function exists(file: string): Promise<boolean> {
  return readFile(file).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return false;
      throw error;
    },
  );
}

/** Writes `make()` to `file` (0600) unless it exists; true when it wrote. */
export async function writeIfMissing(file: string, make: () => string | Promise<string>): Promise<boolean> {
  try {
    await readFile(file);
    return false;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(file, await make(), { mode: 0o600, flag: 'wx' });
  return true;
}
