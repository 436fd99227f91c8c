/**
 * Certificates for the embedded time-stamping authority: generation of a self-signed root CA and a
 * TSA leaf (ECDSA P-256, SHA-256) with pkijs over WebCrypto, loading them back from PEM, and the
 * checks RFC 3161 §2.3 asks of a TSA certificate.
 */
import { randomBytes } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import {
  OID,
  digest,
  integerFromBigInt,
  namedBitString,
  parseAsn1,
  randomPositiveBigInt,
  toArrayBuffer,
} from './asn1.js';
import { derToPem, pemBlocks, pemToDer } from './pem.js';
import { validatePath } from './path.js';
import { certificateFromDer, timeStampingUsageProblem } from './x509-verify.js';
import { ProcessCache } from '../../memo.js';

const subtle = globalThis.crypto.subtle;

/** The four PEM documents of an embedded TSA: root CA and TSA leaf, each with its PKCS#8 key. */
export interface TsaCertificateBundle {
  rootCertPem: string;
  rootKeyPkcs8Pem: string;
  tsaCertPem: string;
  tsaKeyPkcs8Pem: string;
}

/** Names used in generated certificates; each attribute becomes its own RDN. */
export interface DistinguishedName {
  commonName: string;
  organization?: string;
  /** Two-letter ISO 3166 code. */
  country?: string;
}

/** Options of {@link generateTsaCertificates}. All are optional. */
export interface GenerateTsaCertificatesOptions {
  /** Subject of the root CA. Default `O=Evidence Anchoring Service, CN=Evidence Anchoring Root CA`. */
  rootName?: DistinguishedName;
  /** Subject of the TSA leaf. Default `O=Evidence Anchoring Service, CN=Evidence Anchoring TSA`. */
  tsaName?: DistinguishedName;
  /** Start of validity (default: now). */
  now?: Date;
  /** Root validity in years (default 20). */
  rootValidityYears?: number;
  /** Leaf validity in years (default 10). */
  tsaValidityYears?: number;
  /**
   * Key purposes written in the leaf's ExtendedKeyUsage (default `[id-kp-timeStamping]`); `null`
   * omits the extension. Only for negative tests: anything else makes an unusable TSA certificate.
   */
  tsaKeyPurposes?: string[] | null;
  /** Whether the leaf's ExtendedKeyUsage is critical (default true; false only for negative tests). */
  tsaEkuCritical?: boolean;
}

/** Options of {@link issueTsaCertificate}: the issuing root and the leaf's shape. */
export interface IssueTsaCertificateOptions
  extends Pick<GenerateTsaCertificatesOptions, 'tsaName' | 'now' | 'tsaValidityYears' | 'tsaKeyPurposes' | 'tsaEkuCritical'> {
  rootCertPem: string;
  rootKeyPkcs8Pem: string;
}

/** The bundle parsed back into pkijs certificates and WebCrypto keys. */
export interface LoadedTsaCertificates {
  rootCert: pkijs.Certificate;
  rootCertDer: Uint8Array;
  tsaCert: pkijs.Certificate;
  tsaCertDer: Uint8Array;
  /** Signing key of the TSA leaf (not extractable). */
  tsaKey: CryptoKey;
  /** Signing key of the root, when its PEM was given. */
  rootKey?: CryptoKey;
}

const DEFAULT_ORG = 'Evidence Anchoring Service';
const P256: EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };

// ---------------------------------------------------------------------------------------------
// Generation

/**
 * Generates a self-signed root CA and a TSA leaf certificate signed by it, each with a fresh
 * ECDSA P-256 key, and returns them as PEM (certificates) and PKCS#8 PEM (keys).
 */
export async function generateTsaCertificates(options: GenerateTsaCertificatesOptions = {}): Promise<TsaCertificateBundle> {
  const now = options.now ?? new Date();
  const rootName = buildName(options.rootName ?? { organization: DEFAULT_ORG, commonName: 'Evidence Anchoring Root CA' });
  const rootKeys = (await subtle.generateKey(P256, true, ['sign', 'verify'])) as CryptoKeyPair;

  const root = await buildCertificate({
    subject: rootName,
    issuer: rootName,
    publicKey: rootKeys.publicKey,
    signingKey: rootKeys.privateKey,
    notBefore: backdate(now),
    notAfter: addYears(now, options.rootValidityYears ?? 20),
    extensions: rootCaExtensions,
  });

  const rootCertPem = derToPem(certificateDer(root));
  const rootKeyPkcs8Pem = derToPem(new Uint8Array(await subtle.exportKey('pkcs8', rootKeys.privateKey)), 'PRIVATE KEY');
  const leaf = await issueLeaf(root, rootKeys.privateKey, options);
  return { rootCertPem, rootKeyPkcs8Pem, ...leaf };
}

/**
 * Issues a new TSA leaf (fresh P-256 key) under an existing root, e.g. to rotate the TSA key.
 */
export async function issueTsaCertificate(options: IssueTsaCertificateOptions): Promise<{ tsaCertPem: string; tsaKeyPkcs8Pem: string }> {
  const root = parseCertificate(options.rootCertPem);
  const rootKey = await importPrivateKey(options.rootKeyPkcs8Pem);
  return issueLeaf(root, rootKey, options);
}

async function issueLeaf(
  root: pkijs.Certificate,
  rootKey: CryptoKey,
  options: Pick<GenerateTsaCertificatesOptions, 'tsaName' | 'now' | 'tsaValidityYears' | 'tsaKeyPurposes' | 'tsaEkuCritical'>,
): Promise<{ tsaCertPem: string; tsaKeyPkcs8Pem: string }> {
  const now = options.now ?? new Date();
  const keys = (await subtle.generateKey(P256, true, ['sign', 'verify'])) as CryptoKeyPair;
  const rootSki = subjectKeyIdentifier(root) ?? keyIdentifier(root);
  const purposes = options.tsaKeyPurposes === undefined ? [OID.kpTimeStamping] : options.tsaKeyPurposes;

  const leaf = await buildCertificate({
    subject: buildName(options.tsaName ?? { organization: DEFAULT_ORG, commonName: 'Evidence Anchoring TSA' }),
    issuer: root.subject,
    publicKey: keys.publicKey,
    signingKey: rootKey,
    notBefore: backdate(now),
    notAfter: minDate(addYears(now, options.tsaValidityYears ?? 10), root.notAfter.value),
    extensions: (ski) => tsaLeafExtensions(ski, rootSki, purposes, options.tsaEkuCritical ?? true),
  });

  return {
    tsaCertPem: derToPem(certificateDer(leaf)),
    tsaKeyPkcs8Pem: derToPem(new Uint8Array(await subtle.exportKey('pkcs8', keys.privateKey)), 'PRIVATE KEY'),
  };
}

/** Options of {@link issueDocumentSigningCertificate}. */
export interface IssueDocumentSigningCertificateOptions {
  rootCertPem: string;
  rootKeyPkcs8Pem: string;
  /** Subject (default `O=Evidence Anchoring Service, CN=Evidence Anchoring Document Signing`). */
  name?: DistinguishedName;
  now?: Date;
  /** Validity in years (default 10, never past the root's). */
  validityYears?: number;
}

/**
 * Issues a certificate for the key that signs the PDF evidence certificates (PAdES), under the
 * same root as the TSA: a fresh P-256 key, an end-entity certificate with KeyUsage
 * digitalSignature and nonRepudiation (RFC 5280 §4.2.1.3: content commitment) and no
 * ExtendedKeyUsage (PDF readers accept any document signing key without one).
 */
export async function issueDocumentSigningCertificate(options: IssueDocumentSigningCertificateOptions): Promise<{ certPem: string; keyPkcs8Pem: string }> {
  const root = parseCertificate(options.rootCertPem);
  const rootKey = await importPrivateKey(options.rootKeyPkcs8Pem);
  // The same end-entity profile as the TSA's leaf, without an ExtendedKeyUsage (tsaKeyPurposes null).
  const { tsaCertPem, tsaKeyPkcs8Pem } = await issueLeaf(root, rootKey, {
    tsaName: options.name ?? { organization: DEFAULT_ORG, commonName: 'Evidence Anchoring Document Signing' },
    ...(options.now ? { now: options.now } : {}),
    tsaValidityYears: options.validityYears ?? 10,
    tsaKeyPurposes: null,
  });
  return { certPem: tsaCertPem, keyPkcs8Pem: tsaKeyPkcs8Pem };
}

/** What {@link buildCertificate} makes a v3 certificate of (the tests' C2PA signers use it too). */
export interface CertificateSpec {
  subject: pkijs.RelativeDistinguishedNames;
  issuer: pkijs.RelativeDistinguishedNames;
  publicKey: CryptoKey;
  signingKey: CryptoKey;
  notBefore: Date;
  notAfter: Date;
  extensions: (subjectKeyId: Uint8Array) => pkijs.Extension[];
}

export async function buildCertificate(spec: CertificateSpec): Promise<pkijs.Certificate> {
  const cert = new pkijs.Certificate();
  cert.version = 2; // v3 (RFC 5280 §4.1.2.1), needed for extensions
  // RFC 5280 §4.1.2.2: positive, unique, at most 20 octets; 128 random bits fit in 17.
  cert.serialNumber = integerFromBigInt(randomPositiveBigInt(128));
  cert.issuer = spec.issuer;
  cert.subject = spec.subject;
  cert.notBefore = timeOf(spec.notBefore);
  cert.notAfter = timeOf(spec.notAfter);
  await cert.subjectPublicKeyInfo.importKey(spec.publicKey);
  cert.extensions = spec.extensions(keyIdentifier(cert));
  await cert.sign(spec.signingKey, 'SHA-256');
  return cert;
}

/**
 * RFC 5280 §4.1.2.4: a Name is a SEQUENCE OF RelativeDistinguishedName (each a SET). pkijs puts
 * all attributes into a single multi-valued RDN; we emit one attribute per RDN like every CA does,
 * otherwise OpenSSL compares and prints the names differently.
 */
export function buildName(dn: DistinguishedName): pkijs.RelativeDistinguishedNames {
  const attrs: [string, asn1js.AsnType][] = [];
  if (dn.country) attrs.push([OID.countryName, new asn1js.PrintableString({ value: dn.country })]);
  if (dn.organization) attrs.push([OID.organizationName, new asn1js.Utf8String({ value: dn.organization })]);
  attrs.push([OID.commonName, new asn1js.Utf8String({ value: dn.commonName })]);
  const name = new asn1js.Sequence({
    value: attrs.map(
      ([type, value]) =>
        new asn1js.Set({ value: [new asn1js.Sequence({ value: [new asn1js.ObjectIdentifier({ value: type }), value] })] }),
    ),
  });
  // Parsed back so that pkijs keeps these exact bytes (valueBeforeDecode) when re-encoding.
  return pkijs.RelativeDistinguishedNames.fromBER(name.toBER());
}

/**
 * The extensions of a TSA root, classic or post-quantum. RFC 5280 §4.2.1.9: a CA certificate
 * carries cA=TRUE, critical; pathLen 0 since it only ever issues end-entity (TSA) certificates.
 * §4.2.1.3: keyCertSign (bit 5) and cRLSign (bit 6). §4.2.1.2: its key identifier.
 */
export function rootCaExtensions(ski: Uint8Array): pkijs.Extension[] {
  return [
    extension(OID.basicConstraints, true, new asn1js.Sequence({ value: [new asn1js.Boolean({ value: true }), new asn1js.Integer({ value: 0 })] })),
    extension(OID.keyUsage, true, namedBitString([5, 6])),
    extension(OID.subjectKeyIdentifier, false, new asn1js.OctetString({ valueHex: toArrayBuffer(ski) })),
  ];
}

/**
 * The extensions of a TSA leaf, classic or post-quantum. RFC 5280 §4.2.1.9: an end-entity
 * certificate; cA defaults to FALSE, so the DER SEQUENCE is empty (X.690 §11.5 omits DEFAULT
 * values). RFC 3161 §2.3 via OpenSSL's check, and RFC 9881 §5 for an ML-DSA key: digitalSignature
 * (bit 0) and nonRepudiation (bit 1) only. RFC 5280 §4.2.1.1: keyIdentifier [0] IMPLICIT = the
 * issuer's subject key identifier. RFC 3161 §2.3: exactly one ExtendedKeyUsage, id-kp-timeStamping
 * only, critical (`purposes` and `ekuCritical` other than that only for tests of refusals; null:
 * no EKU at all).
 */
export function tsaLeafExtensions(ski: Uint8Array, issuerSki: Uint8Array, purposes: readonly string[] | null = [OID.kpTimeStamping], ekuCritical = true): pkijs.Extension[] {
  const list = [
    extension(OID.basicConstraints, true, new asn1js.Sequence({ value: [] })),
    extension(OID.keyUsage, true, namedBitString([0, 1])),
    extension(OID.subjectKeyIdentifier, false, new asn1js.OctetString({ valueHex: toArrayBuffer(ski) })),
    extension(
      OID.authorityKeyIdentifier,
      false,
      new asn1js.Sequence({ value: [new asn1js.Primitive({ idBlock: { tagClass: 3, tagNumber: 0 }, valueHex: toArrayBuffer(issuerSki) })] }),
    ),
  ];
  if (purposes !== null) list.push(extension(OID.extKeyUsage, ekuCritical, new asn1js.Sequence({ value: purposes.map((p) => new asn1js.ObjectIdentifier({ value: p })) })));
  return list;
}

export function extension(extnID: string, critical: boolean, value: asn1js.AsnType): pkijs.Extension {
  return new pkijs.Extension({ extnID, critical, extnValue: value.toBER(false) });
}

/** RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050; whole seconds. */
export function timeOf(date: Date): pkijs.Time {
  const whole = new Date(Math.floor(date.getTime() / 1000) * 1000);
  return new pkijs.Time({ type: whole.getUTCFullYear() < 2050 ? pkijs.TimeType.UTCTime : pkijs.TimeType.GeneralizedTime, value: whole });
}

/** Five minutes of slack for relying parties whose clock is a little behind. */
export function backdate(date: Date): Date {
  return new Date(date.getTime() - 5 * 60_000);
}

export function addYears(date: Date, years: number): Date {
  const d = new Date(date.getTime());
  d.setUTCFullYear(d.getUTCFullYear() + years);
  return d;
}

export function minDate(a: Date, b: Date): Date {
  return a.getTime() <= b.getTime() ? a : b;
}

/** RFC 5280 §4.2.1.2 method (1): SHA-1 of the subjectPublicKey BIT STRING value. */
export function keyIdentifier(cert: pkijs.Certificate): Uint8Array {
  return digest('SHA-1', cert.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView);
}

/** The value of the SubjectKeyIdentifier extension, if any. */
export function subjectKeyIdentifier(cert: pkijs.Certificate): Uint8Array | undefined {
  const ext = cert.extensions?.find((e) => e.extnID === OID.subjectKeyIdentifier);
  const parsed = ext?.parsedValue;
  return parsed instanceof asn1js.OctetString ? new Uint8Array(parsed.valueBlock.valueHexView) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Loading

// The DER each certificate was parsed from: hashing for ESSCertID must use the exact bytes, and
// re-encoding with pkijs is slow (about 1 ms a certificate).
const derOf = new WeakMap<pkijs.Certificate, Uint8Array>();

/** Records the bytes `cert` was decoded from, for {@link certificateDer}. */
export function rememberCertificateDer(cert: pkijs.Certificate, der: Uint8Array): void {
  derOf.set(cert, der);
}

/** DER of a certificate: the bytes it was parsed from, or its re-encoding. */
export function certificateDer(cert: pkijs.Certificate): Uint8Array {
  let der = derOf.get(cert);
  if (!der) {
    der = new Uint8Array(cert.toSchema().toBER());
    derOf.set(cert, der);
  }
  return der;
}

/** PEM of a certificate. */
export function certificateToPem(cert: pkijs.Certificate): string {
  return derToPem(certificateDer(cert));
}

/**
 * Parses one certificate from PEM (the first `CERTIFICATE` block) or DER.
 * @throws Error when it is not a certificate.
 */
export function parseCertificate(input: string | Uint8Array): pkijs.Certificate {
  const der = typeof input === 'string' ? pemToDer(input, 'CERTIFICATE') : input;
  const asn = parseAsn1(der, 'certificate');
  let cert: pkijs.Certificate;
  try {
    cert = new pkijs.Certificate({ schema: asn });
  } catch {
    throw new Error('not an X.509 certificate');
  }
  derOf.set(cert, der);
  return cert;
}

// pkijs takes a few milliseconds to decode a certificate; roots are the same on every call.
const parsedPem = new ProcessCache<string, pkijs.Certificate[]>('pkijs certificates by PEM text', 64);

/**
 * Every certificate in a PEM text (e.g. a chain file), in order. Results are cached per text (the
 * returned objects are shared: do not modify them).
 * @throws Error when a block is not a certificate.
 */
export function parseCertificates(pemText: string): pkijs.Certificate[] {
  return parsedPem.getOrSet(pemText, () => pemBlocks(pemText, 'CERTIFICATE').map((b) => parseCertificate(b.der)));
}

const CURVE_BY_OID: Readonly<Record<string, string>> = {
  [OID.secp256r1]: 'P-256',
  [OID.secp384r1]: 'P-384',
  [OID.secp521r1]: 'P-521',
};

/**
 * Imports a PKCS#8 private key (`-----BEGIN PRIVATE KEY-----`) for signing: ECDSA on P-256/384/521
 * or RSA (PKCS#1 v1.5 with SHA-256). The key is not extractable.
 * @throws Error for other key types or malformed input (the message never contains key material).
 */
export async function importPrivateKey(pkcs8Pem: string): Promise<CryptoKey> {
  let der: Uint8Array;
  let info: pkijs.PrivateKeyInfo;
  try {
    der = pemToDer(pkcs8Pem, 'PRIVATE KEY');
    info = new pkijs.PrivateKeyInfo({ schema: parseAsn1(der, 'private key') });
  } catch {
    throw new Error('the TSA key must be an unencrypted PKCS#8 PEM ("BEGIN PRIVATE KEY"; convert with `openssl pkcs8 -topk8 -nocrypt`)');
  }
  const algorithm = algorithmForKey(info.privateKeyAlgorithm);
  return subtle.importKey('pkcs8', toArrayBuffer(der), algorithm, false, ['sign']);
}

function algorithmForKey(alg: pkijs.AlgorithmIdentifier): EcKeyImportParams | RsaHashedImportParams {
  if (alg.algorithmId === OID.ecPublicKey) {
    const params = alg.algorithmParams as unknown;
    const curve = params instanceof asn1js.ObjectIdentifier ? CURVE_BY_OID[params.valueBlock.toString()] : undefined;
    if (!curve) throw new Error('unsupported elliptic curve (P-256, P-384 and P-521 are supported)');
    return { name: 'ECDSA', namedCurve: curve };
  }
  if (alg.algorithmId === OID.rsaEncryption) return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  throw new Error(`unsupported key algorithm ${alg.algorithmId} (ECDSA and RSA are supported)`);
}

/**
 * Parses a bundle back into certificates and keys. It does not check them: see
 * {@link assertTsaCertificates}.
 */
export async function loadTsaCertificates(
  bundle: Pick<TsaCertificateBundle, 'rootCertPem' | 'tsaCertPem' | 'tsaKeyPkcs8Pem'> & { rootKeyPkcs8Pem?: string },
): Promise<LoadedTsaCertificates> {
  const rootCertDer = pemToDer(bundle.rootCertPem);
  const tsaCertDer = pemToDer(bundle.tsaCertPem);
  const loaded: LoadedTsaCertificates = {
    rootCert: parseCertificate(rootCertDer),
    rootCertDer,
    tsaCert: parseCertificate(tsaCertDer),
    tsaCertDer,
    tsaKey: await importPrivateKey(bundle.tsaKeyPkcs8Pem),
  };
  if (bundle.rootKeyPkcs8Pem) loaded.rootKey = await importPrivateKey(bundle.rootKeyPkcs8Pem);
  return loaded;
}

// ---------------------------------------------------------------------------------------------
// Checks

/** Whether a private key and a certificate's public key belong together (sign and verify). */
export async function keyMatchesCertificate(key: CryptoKey, cert: pkijs.Certificate): Promise<boolean> {
  const challenge = randomBytes(32);
  const signParams: EcdsaParams | Algorithm = key.algorithm.name === 'ECDSA' ? { name: 'ECDSA', hash: 'SHA-256' } : { name: key.algorithm.name };
  try {
    const importParams = algorithmForKey(cert.subjectPublicKeyInfo.algorithm);
    if (importParams.name !== key.algorithm.name) return false;
    if ('namedCurve' in importParams && importParams.namedCurve !== (key.algorithm as EcKeyAlgorithm).namedCurve) return false;
    const spki = cert.subjectPublicKeyInfo.toSchema().toBER(false);
    const publicKey = await subtle.importKey('spki', spki, importParams, false, ['verify']);
    const signature = await subtle.sign(signParams, key, challenge);
    return await subtle.verify(signParams, publicKey, signature, challenge);
  } catch {
    return false;
  }
}

/**
 * Start-up checks of a TSA's own material: the leaf may sign time-stamps (RFC 3161 §2.3), the key
 * belongs to the leaf, and the leaf chains to the root at `now`.
 * @throws Error with a message saying what is wrong.
 */
export async function assertTsaCertificates(loaded: LoadedTsaCertificates, now: Date): Promise<void> {
  // RFC 3161 §2.3, as verifiers check it (x509-verify.ts).
  const usage = timeStampingUsageProblem(certificateFromDer(loaded.tsaCertDer));
  if (usage) throw new Error(`TSA certificate refused: ${usage}`);
  if (!(await keyMatchesCertificate(loaded.tsaKey, loaded.tsaCert))) {
    throw new Error('TSA certificate refused: the private key does not match the certificate');
  }
  // The one path validation (path.ts), the one the TSA's tokens meet in a verifier.
  const chain = validatePath(certificateFromDer(loaded.tsaCertDer), { anchors: [certificateFromDer(loaded.rootCertDer)], checkDate: now });
  if (!chain.ok) throw new Error(`TSA certificate refused: it does not chain to the root: ${chain.reason}`);
}
