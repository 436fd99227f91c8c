/**
 * Certificates of the post-quantum time-stamping authority: an ML-DSA-65 root CA and an ML-DSA-65
 * TSA leaf (RFC 9881: algorithm id-ml-dsa-65, 2.16.840.1.101.3.4.3.18, parameters absent, in both
 * subjectPublicKeyInfo and signatureAlgorithm; the public key is the raw 1952-byte pkEncode
 * output in the BIT STRING; the signature is pure ML-DSA-65 over the DER of tbsCertificate with an
 * empty context).
 *
 * A post-quantum token needs a post-quantum path: a leaf signed by an ECDSA root would fall with
 * the root's key, so this TSA has its own ML-DSA-65 root.
 *
 * The certificates are built with pkijs (as certificates.ts builds the classic ones); only the
 * signing step differs, because pkijs signs through WebCrypto, whose algorithm table has no
 * ML-DSA: the TBSCertificate pkijs encodes is signed by a {@link PqSigner} (a local seed, or an AWS
 * KMS key of key spec ML_DSA_65 for the root in production: a TBSCertificate of this profile is
 * about 2.4 KB, within KMS's 4096-byte RAW limit).
 */
import { randomBytes } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { LocalMlDsaSigner, ID_ML_DSA_65, ML_DSA_65_SEED_BYTES, mlDsa65Pkcs8FromSeed, mlDsa65SeedFromPkcs8 } from '../ml-dsa.js';
import type { PqSigner } from '../ports.js';
import { integerFromBigInt, randomPositiveBigInt, toArrayBuffer } from './asn1.js';
import {
  type DistinguishedName,
  addYears,
  backdate,
  buildName,
  certificateDer,
  keyIdentifier,
  minDate,
  parseCertificate,
  rootCaExtensions,
  subjectKeyIdentifier,
  tsaLeafExtensions,
  timeOf,
} from './certificates.js';
import { derToPem, pemToDer } from './pem.js';

const DEFAULT_ORG = 'Evidence Anchoring Service';

/** The four PEM documents of the post-quantum TSA: root and leaf, each with its PKCS#8 seed (RFC 9881 §6). */
export interface PqTsaCertificateBundle {
  rootCertPem: string;
  rootKeyPkcs8Pem: string;
  tsaCertPem: string;
  tsaKeyPkcs8Pem: string;
}

/** Options of {@link generatePqTsaCertificates}. */
export interface GeneratePqTsaCertificatesOptions {
  /** Default `O=Evidence Anchoring Service, CN=Evidence Anchoring PQ Root CA (ML-DSA-65)`. */
  rootName?: DistinguishedName;
  /** Default `O=Evidence Anchoring Service, CN=Evidence Anchoring PQ TSA (ML-DSA-65)`. */
  tsaName?: DistinguishedName;
  /** Start of validity (default: now). */
  now?: Date;
  /** Root validity in years (default 20). */
  rootValidityYears?: number;
  /** Leaf validity in years (default 10, never past the root's). */
  tsaValidityYears?: number;
}

/** Options of {@link issuePqTsaCertificate}. */
export interface IssuePqTsaCertificateOptions extends Pick<GeneratePqTsaCertificatesOptions, 'tsaName' | 'now' | 'tsaValidityYears'> {
  rootCertPem: string;
  /** The root's key: a PKCS#8 seed PEM (local), or a signer (e.g. a KMS key). */
  rootKey: string | PqSigner;
  /** The leaf's key pair from this seed (default: 32 fresh random bytes); the leaf's own KMS key gives its public key instead. */
  tsaPublicKey?: Uint8Array;
}

/** A local ML-DSA-65 signer from a PKCS#8 seed PEM (RFC 9881 §6 seed form). */
export function pqSignerFromPkcs8Pem(pem: string): LocalMlDsaSigner {
  return LocalMlDsaSigner.fromSeed(mlDsa65SeedFromPkcs8(pemToDer(pem, 'PRIVATE KEY')));
}

function newSeedPem(): { seed: Uint8Array; pem: string } {
  const seed = new Uint8Array(randomBytes(ML_DSA_65_SEED_BYTES));
  return { seed, pem: derToPem(mlDsa65Pkcs8FromSeed(seed), 'PRIVATE KEY') };
}

/** Generates an ML-DSA-65 root CA and an ML-DSA-65 TSA leaf it signs, each from a fresh seed. */
export async function generatePqTsaCertificates(options: GeneratePqTsaCertificatesOptions = {}): Promise<PqTsaCertificateBundle> {
  const now = options.now ?? new Date();
  const rootSeed = newSeedPem();
  const rootSigner = LocalMlDsaSigner.fromSeed(rootSeed.seed);
  const rootName = buildName(options.rootName ?? { organization: DEFAULT_ORG, commonName: 'Evidence Anchoring PQ Root CA (ML-DSA-65)' });
  const root = await buildPqCertificate({
    subject: rootName,
    issuer: rootName,
    publicKey: await rootSigner.publicKey(),
    signer: rootSigner,
    notBefore: backdate(now),
    notAfter: addYears(now, options.rootValidityYears ?? 20),
    extensions: rootCaExtensions,
  });
  const rootCertPem = derToPem(certificateDer(root));
  const leaf = await issuePqTsaCertificate({ rootCertPem, rootKey: rootSigner, ...pick(options) });
  return { rootCertPem, rootKeyPkcs8Pem: rootSeed.pem, tsaCertPem: leaf.tsaCertPem, tsaKeyPkcs8Pem: leaf.tsaKeyPkcs8Pem ?? '' };
}

function pick(options: GeneratePqTsaCertificatesOptions): Pick<GeneratePqTsaCertificatesOptions, 'tsaName' | 'now' | 'tsaValidityYears'> {
  return {
    ...(options.tsaName ? { tsaName: options.tsaName } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.tsaValidityYears !== undefined ? { tsaValidityYears: options.tsaValidityYears } : {}),
  };
}

/**
 * Issues an ML-DSA-65 TSA leaf under an ML-DSA-65 root: with a fresh local seed (returned as
 * PKCS#8 PEM), or for a given public key (the leaf's key lives in KMS; no key is returned).
 * Its profile is the classic leaf's (RFC 3161 §2.3): critical EKU id-kp-timeStamping only,
 * KeyUsage digitalSignature and nonRepudiation, not a CA.
 */
export async function issuePqTsaCertificate(options: IssuePqTsaCertificateOptions): Promise<{ tsaCertPem: string; tsaKeyPkcs8Pem?: string }> {
  const now = options.now ?? new Date();
  const root = parseCertificate(options.rootCertPem);
  if (root.subjectPublicKeyInfo.algorithm.algorithmId !== ID_ML_DSA_65) throw new Error('the root certificate is not an ML-DSA-65 certificate');
  const rootSigner = typeof options.rootKey === 'string' ? pqSignerFromPkcs8Pem(options.rootKey) : options.rootKey;
  const rootSki = subjectKeyIdentifier(root) ?? keyIdentifier(root);
  let publicKey = options.tsaPublicKey;
  let keyPem: string | undefined;
  if (!publicKey) {
    const fresh = newSeedPem();
    keyPem = fresh.pem;
    publicKey = await LocalMlDsaSigner.fromSeed(fresh.seed).publicKey();
  }
  const leaf = await buildPqCertificate({
    subject: buildName(options.tsaName ?? { organization: DEFAULT_ORG, commonName: 'Evidence Anchoring PQ TSA (ML-DSA-65)' }),
    issuer: root.subject,
    publicKey,
    signer: rootSigner,
    notBefore: backdate(now),
    notAfter: minDate(addYears(now, options.tsaValidityYears ?? 10), root.notAfter.value),
    // The classic leaf's profile (RFC 3161 §2.3; RFC 9881 §5 allows an ML-DSA key the same KeyUsage).
    extensions: (ski) => tsaLeafExtensions(ski, rootSki),
  });
  return { tsaCertPem: derToPem(certificateDer(leaf)), ...(keyPem ? { tsaKeyPkcs8Pem: keyPem } : {}) };
}

interface PqCertificateSpec {
  subject: pkijs.RelativeDistinguishedNames;
  issuer: pkijs.RelativeDistinguishedNames;
  /** Raw ML-DSA-65 public key (1952 bytes). */
  publicKey: Uint8Array;
  signer: PqSigner;
  notBefore: Date;
  notAfter: Date;
  extensions: (subjectKeyId: Uint8Array) => pkijs.Extension[];
}

/** AlgorithmIdentifier { id-ml-dsa-65 } with the parameters absent (RFC 9881 §2). */
function mlDsaAlgorithm(): pkijs.AlgorithmIdentifier {
  return new pkijs.AlgorithmIdentifier({ algorithmId: ID_ML_DSA_65 });
}

async function buildPqCertificate(spec: PqCertificateSpec): Promise<pkijs.Certificate> {
  const cert = new pkijs.Certificate();
  cert.version = 2;
  cert.serialNumber = integerFromBigInt(randomPositiveBigInt(128));
  cert.issuer = spec.issuer;
  cert.subject = spec.subject;
  cert.notBefore = timeOf(spec.notBefore);
  cert.notAfter = timeOf(spec.notAfter);
  // RFC 9881 §4: the BIT STRING holds pkEncode(pk) as it is, no further wrapping.
  cert.subjectPublicKeyInfo = new pkijs.PublicKeyInfo({
    algorithm: mlDsaAlgorithm(),
    subjectPublicKey: new asn1js.BitString({ valueHex: toArrayBuffer(spec.publicKey) }),
  });
  cert.extensions = spec.extensions(keyIdentifier(cert));
  // RFC 5280 §4.1.1.2: signatureAlgorithm equals tbsCertificate.signature.
  cert.signature = mlDsaAlgorithm();
  cert.signatureAlgorithm = mlDsaAlgorithm();
  cert.tbsView = new Uint8Array(cert.encodeTBS().toBER());
  const signature = await spec.signer.sign(cert.tbsView);
  cert.signatureValue = new asn1js.BitString({ valueHex: toArrayBuffer(signature) });
  // Parsed back from its bytes, so that certificateDer() is exactly what was signed and shipped.
  return parseCertificate(new Uint8Array(cert.toSchema().toBER()));
}
