/**
 * Composition of the Starter features' keys and of what the service publishes about them: the
 * Ed25519 signer (scheme `local` or `kms`), the JWK set, the TSA chain and the ledger wallet
 * address, and the trust-anchor document that lists them in one place.
 *
 * Apart from lib/deps/anchoring.ts on purpose: nothing here loads ethers, the ledger sender or an
 * ML-DSA implementation, so the functions that only publish keys stay small. The ML-DSA public key
 * and the TSA certificates are read from the files the service ships (DATA_DIR locally,
 * infra/keys/<stage>/ in AWS), which needs no KMS call.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { readKmsPublicKey } from '../crypto/kms-client.js';
import { KmsEd25519Signer, LocalEd25519Signer } from '../crypto/ed25519-signer.js';
import { addressFromPrivateKey, addressFromSecp256k1Spki } from '../crypto/eth-address.js';
import { sha256Hex } from '../crypto/hash.js';
import { ed25519Jwk, mlDsa65Jwk, type PublishedJwk, rawPublicKeyOf, type ServiceJwk, withWindow } from '../crypto/jwk.js';
import { keyStatus, type ValidityWindow, windowOf } from '../crypto/key-windows.js';
import type { Ed25519Signer } from '../crypto/ports.js';
import { pdfSignerFiles } from '../crypto/pdf-sign/files.js';
import { pqTsaFiles, tsaFiles } from '../crypto/tsa/files.js';
import { type TsaCertificateEntry, tsaCertificateEntry } from '../crypto/tsa/history.js';
import { pemBlocks, derToPem } from '../crypto/tsa/pem.js';
import { getConfig } from './core.js';
import { assertNotRetired, getKeyRegistry, getTsaHistory, otherEntries, windowIn } from './key-registry.js';
import { getKmsClient } from './kms.js';
import { lazy } from './lazy.js';

/** The service's Ed25519 signer, to sign with: {@link loadEd25519Signer}, unless the registry retired its key. */
export async function getEd25519Signer(): Promise<Ed25519Signer> {
  const signer = await loadEd25519Signer();
  // A key the registry retired never signs again (decisions.md "Key validity windows").
  await assertNotRetired('ed25519', signer.keyId);
  return signer;
}

/** The configured Ed25519 key: the seed in DATA_DIR (`local`) or the KMS key (`kms`); publishing its public half needs no guard. */
const loadEd25519Signer: () => Promise<Ed25519Signer> = /* @__PURE__ */ lazy(async () => {
  const { ed25519: cfg } = getConfig();
  let signer: Ed25519Signer;
  if (cfg.scheme === 'kms') signer = await KmsEd25519Signer.connect(getKmsClient(), cfg.kmsKeyId ?? '');
  else {
    const seedHex = (await readFile(cfg.seedFile, 'utf8')).trim();
    if (!/^[0-9a-fA-F]{64}$/.test(seedHex)) throw new Error('the Ed25519 seed file does not hold 32 bytes of hex');
    signer = LocalEd25519Signer.fromSeed(Buffer.from(seedHex, 'hex'));
  }
  return signer;
});

/**
 * Every public key the service signs with, as JWKs, each with its validity window (decisions.md
 * "Key validity windows"): the configured Ed25519 and ML-DSA-65 keys (active unless the registry
 * retired them), the registry's other keys of these kinds, then the keys of RETIRED_KEYS_FILE
 * (retired, window unknown), kept so that old statements still verify.
 */
export async function getPublishedKeys(): Promise<PublishedJwk[]> {
  const config = getConfig();
  const [signer, pqPublicKey, retired, registry] = await Promise.all([
    loadEd25519Signer(),
    readFile(config.signer.publicKeyFile),
    readRetiredKeys(config.retiredKeysFile),
    getKeyRegistry(),
  ]);
  const ed = ed25519Jwk(await signer.publicKey(), 'active');
  const pq = mlDsa65Jwk(Uint8Array.from(pqPublicKey), 'active');
  const configured: PublishedJwk[] = [withWindow(ed, windowIn(registry, 'ed25519', ed.kid)), withWindow(pq, windowIn(registry, 'ml-dsa-65', pq.kid))];
  const recorded: PublishedJwk[] = [...otherEntries(registry, 'ed25519', ed.kid), ...otherEntries(registry, 'ml-dsa-65', pq.kid)].flatMap((e) => {
    const raw = e.public_key ? Buffer.from(e.public_key, 'base64url') : undefined;
    if (!raw) return [];
    const jwk = e.kind === 'ed25519' ? ed25519Jwk(raw, keyStatus(e)) : mlDsa65Jwk(raw, keyStatus(e));
    return [withWindow(jwk, windowOf(e))];
  });
  const seen = new Set<string>();
  return [...configured, ...recorded, ...retired.map((k) => withWindow(k, { not_before: null, not_after: null, retired_at: null }))].filter((k) => {
    if (seen.has(k.kid)) return false;
    seen.add(k.kid);
    return true;
  });
}

/** The retired keys of a JWK set file; a missing file is none, an unreadable one is an error. */
export async function readRetiredKeys(file: string): Promise<ServiceJwk[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const set = JSON.parse(text) as { keys?: unknown };
  if (!Array.isArray(set.keys)) throw new Error('the retired-keys file is not a JWK set ({"keys": [...]})');
  return set.keys.map((jwk, i) => {
    const raw = rawPublicKeyOf(jwk);
    if (!raw) throw new Error(`the retired-keys file: keys[${i}] is neither an Ed25519 (OKP) nor an ML-DSA-65 (AKP) public key`);
    return raw.algorithm === 'Ed25519' ? ed25519Jwk(raw.publicKey, 'retired') : mlDsa65Jwk(raw.publicKey, 'retired');
  });
}

/**
 * The TSA certificate chain the service publishes, PEM, leaf first and root last: the embedded
 * TSA's certificate and root (DATA_DIR/tsa locally, TSA_CERT_FILE and TSA_ROOT_FILE with a KMS
 * key); with a remote TSA, the roots its replies must chain to (TSA_ROOTS_FILE).
 */
export async function getTsaCertificates(): Promise<string[]> {
  const { tsa } = getConfig();
  let files: string[];
  if (tsa.scheme === 'remote') files = [tsa.rootsFile ?? ''];
  else if (tsa.kmsKeyId) files = [tsa.certFile ?? '', tsa.rootFile ?? ''];
  else files = [tsaFiles(tsa.dir).tsaCert, tsaFiles(tsa.dir).rootCert];
  const texts = await Promise.all(files.map((f) => readFile(f, 'utf8')));
  return texts.flatMap((text) => pemBlocks(text, 'CERTIFICATE').map(({ der }) => derToPem(der)));
}

/**
 * The post-quantum TSA's chain (ML-DSA-65, RFC 9881), PEM, leaf first and root last
 * (DATA_DIR/tsa/pq-*.pem locally, TSA_PQ_CERT_FILE and TSA_PQ_ROOT_FILE with a KMS key); undefined
 * when the post-quantum TSA is off.
 */
export async function getPqTsaCertificates(): Promise<string[] | undefined> {
  const { tsa } = getConfig();
  if (!tsa.pq) return undefined;
  const files = tsa.pq.kmsKeyId ? [tsa.pq.certFile ?? '', tsa.pq.rootFile ?? ''] : [pqTsaFiles(tsa.dir).tsaCert, pqTsaFiles(tsa.dir).rootCert];
  const texts = await Promise.all(files.map((f) => readFile(f, 'utf8')));
  return texts.flatMap((text) => pemBlocks(text, 'CERTIFICATE').map(({ der }) => derToPem(der)));
}

/** The ledger wallet's address (EIP-55), without ethers: from the local key, or from the KMS key's public key. */
export const getWalletAddress: () => Promise<string> = /* @__PURE__ */ lazy(async () => {
  const { ledger } = getConfig();
  if (ledger.walletScheme === 'kms') {
    return addressFromSecp256k1Spki(await readKmsPublicKey(getKmsClient(), ledger.walletKmsKeyId ?? '', 'ECC_SECG_P256K1'));
  }
  const key = ledger.walletPrivateKey ?? (await readFile(ledger.walletKeyFile, 'utf8')).trim();
  return addressFromPrivateKey(key);
});

/** Path of the trust-anchor document. */
export const TRUST_ANCHORS_PATH = '/.well-known/evidence-trust-anchors.json';
/** Path of the JWK set. */
export const JWKS_PATH = '/.well-known/jwks.json';

/** The trust anchors of the service in one document (GET /.well-known/evidence-trust-anchors.json). */
export interface TrustAnchors {
  service: string;
  base_url: string;
  tsa: {
    root_pem: string;
    root_sha256: string;
    certificates_url: string;
    policy_oid: string;
    pq?: { root_pem: string; root_sha256: string; certificates_url: string; policy_oid: string };
    certificates: TsaCertificateEntry[];
  };
  jwks_url: string;
  signing_keys: ({ kid: string; alg: string; status: string; sha256: string } & ValidityWindow)[];
  pdf_signing: ({ status: 'active' | 'retired'; certificate_pem: string; sha256: string } & ValidityWindow)[];
  ledger: { network: string; chain_id: number; wallet_address: string; wallets: ({ address: string; status: 'active' | 'retired' } & ValidityWindow)[] };
  c2pa: C2paTrust;
}

/**
 * What a C2PA reader needs to trust our time-stamps (docs/c2pa.md "Trusting our time"): the `tsa`
 * entry of its trust list (our classic TSA roots, current and retired, as one PEM text: the ECDSA
 * TSA, as the reader has no ML-DSA), and a reader context holding just that entry, to which the
 * reader adds a `manifest` entry with the signing roots it trusts.
 */
export interface C2paTrust {
  tsa_url: string;
  tsa_anchor: { trust_kind: 'tsa'; trust_anchors: string };
  reader_context: { trust: { anchors: { trust_kind: 'tsa'; trust_anchors: string }[] } };
}

/** Builds the trust-anchor document from the configuration and the published keys. */
export async function getTrustAnchors(): Promise<TrustAnchors> {
  const config = getConfig();
  const base = config.publicBaseUrl;
  const [chain, keys, wallet, pdf, wallets, pqChain, history] = await Promise.all([
    getTsaCertificates(),
    getPublishedKeys(),
    getWalletAddress(),
    getPdfSigningCertificates(),
    getWallets(),
    getPqTsaCertificates(),
    getTsaHistory(),
  ]);
  const root = chain.at(-1);
  if (!root) throw new Error('no TSA root certificate to publish');
  const rootDer = pemBlocks(root, 'CERTIFICATE')[0]?.der ?? new Uint8Array();
  const pqRoot = pqChain?.at(-1);
  const current = (pems: string[] | undefined, kind: 'classic' | 'pq') =>
    // A remote TSA's roots file has no leaf: only the embedded TSAs list theirs.
    pems && config.tsa.scheme === 'embedded' ? pems.map((pem, i) => tsaCertificateEntry(pem, kind, i === pems.length - 1 ? 'root' : 'leaf', null)) : [];
  return {
    service: 'evidence-anchoring-service',
    base_url: base,
    tsa: {
      root_pem: root,
      root_sha256: sha256Hex(rootDer),
      certificates_url: `${base}/api/v2/tsa/certificates`,
      policy_oid: config.tsa.policyOid,
      ...(pqRoot && config.tsa.pq
        ? {
            pq: {
              root_pem: pqRoot,
              root_sha256: sha256Hex(pemBlocks(pqRoot, 'CERTIFICATE')[0]?.der ?? new Uint8Array()),
              certificates_url: `${base}/api/v2/tsa/certificates?policy=${config.tsa.pq.policyOid}`,
              policy_oid: config.tsa.pq.policyOid,
            },
          }
        : {}),
      certificates: [...current(chain, 'classic'), ...current(pqChain, 'pq'), ...history.retired],
    },
    jwks_url: `${base}${JWKS_PATH}`,
    signing_keys: keys.map((k) => ({
      kid: k.kid,
      alg: k.alg,
      status: k.status,
      // SHA-256 of the raw public key: what `evidence verify --pq-key` pins for ML-DSA-65.
      sha256: sha256Hex(Buffer.from(k.kty === 'OKP' ? k.x : k.pub, 'base64url')),
      not_before: k.not_before,
      not_after: k.not_after,
      retired_at: k.retired_at,
    })),
    pdf_signing: pdf,
    ledger: { network: config.ledger.network, chain_id: config.ledger.chainId, wallet_address: wallet, wallets },
    c2pa: c2paTrust(`${base}/api/v2/tsa`, [root, ...history.retired.filter((e) => e.kind === 'classic' && e.role === 'root').map((e) => e.pem)]),
  };
}

/** The C2PA trust entry of the classic TSA roots (decisions.md "Content Credentials (C2PA)"). */
function c2paTrust(tsaUrl: string, rootsPem: string[]): C2paTrust {
  const anchor = { trust_kind: 'tsa' as const, trust_anchors: rootsPem.map((pem) => (pem.endsWith('\n') ? pem : `${pem}\n`)).join('') };
  return { tsa_url: tsaUrl, tsa_anchor: anchor, reader_context: { trust: { anchors: [anchor] } } };
}

/**
 * The PDF signing certificates, current first, each with its window: the certificate's
 * notBefore/notAfter and the registry's retirement. The current one is the configured certificate
 * (PDF_SIGNER_CERT_FILE, or DATA_DIR/pdf-signer/cert.pem).
 */
export async function getPdfSigningCertificates(): Promise<TrustAnchors['pdf_signing']> {
  const { pdfSigner } = getConfig();
  const [registry, certText] = await Promise.all([getKeyRegistry(), readFile(pdfSigner.certFile ?? pdfSignerFiles(pdfSigner.dir).cert, 'utf8').catch(() => undefined)]);
  const out: TrustAnchors['pdf_signing'] = [];
  let currentKid: string | undefined;
  const der = certText ? pemBlocks(certText, 'CERTIFICATE')[0]?.der : undefined;
  if (certText && der) {
    const sha256 = sha256Hex(der);
    currentKid = `x509:${sha256}`;
    const cert = new X509Certificate(Buffer.from(der));
    const recorded = windowIn(registry, 'pdf-signing', currentKid);
    const window = { not_before: new Date(cert.validFrom).toISOString(), not_after: new Date(cert.validTo).toISOString(), retired_at: recorded.retired_at };
    out.push({ status: keyStatus(window), certificate_pem: derToPem(der), sha256, ...window });
  }
  for (const e of otherEntries(registry, 'pdf-signing', currentKid)) {
    if (e.certificate_pem) out.push({ status: keyStatus(e), certificate_pem: e.certificate_pem, sha256: e.sha256, ...windowOf(e) });
  }
  return out;
}

/** Every wallet that sent or sends anchoring transactions, current first, each with its window. */
export async function getWallets(): Promise<TrustAnchors['ledger']['wallets']> {
  const [registry, current] = await Promise.all([getKeyRegistry(), getWalletAddress()]);
  const window = windowIn(registry, 'ledger-wallet', current);
  return [
    { address: current, status: keyStatus(window), ...window },
    ...otherEntries(registry, 'ledger-wallet', current).map((e) => ({ address: e.address ?? e.kid, status: keyStatus(e), ...windowOf(e) })),
  ];
}
