/**
 * X.509 certificates for the verification side (RFC 5280), over the strict DER reader and
 * node:crypto: parsing, names, the extensions a time-stamp verifier needs, signature verification
 * (RSA PKCS#1 v1.5, RSASSA-PSS, ECDSA on P-256/P-384/P-521, Ed25519, Ed448) and basic path
 * validation (§6.1: signatures, name chaining, validity, basicConstraints, keyUsage,
 * pathLenConstraint, critical extensions). No revocation checking, no policy or name-constraint
 * processing: a critical extension asking for those makes the path fail.
 */
import { type KeyObject, constants, createPublicKey, verify as nodeVerify } from 'node:crypto';
import {
  type AlgorithmIdentifier,
  type DerElement,
  type HashName,
  DerCursor,
  DerError,
  OID,
  SHORT_NAMES,
  TAG,
  absentOrNullParams,
  bitsSet,
  bytesEqual,
  children,
  decodeDer,
  digest,
  expectTag,
  hashByOid,
  isContext,
  isString,
  nodeHashName,
  readAlgorithmIdentifier,
  readBitString,
  readBoolean,
  readInteger,
  readOctetString,
  readOid,
  readSmallInteger,
  readTime,
  sequence,
  stringValue,
  toHex,
} from './der.js';
import { derToPem, pemBlocks } from './pem.js';
import { ID_ML_DSA_65, ML_DSA_65_PUBLIC_KEY_BYTES, verifyMlDsa65 } from '../ml-dsa.js';
import { ProcessCache } from '../../memo.js';

/** One certificate extension (RFC 5280 §4.1.2.9). */
export interface CertExtension {
  oid: string;
  critical: boolean;
  /** Contents of extnValue: the DER of the extension's value. */
  value: Uint8Array;
}

/** A parsed certificate; byte fields are views into `der`. */
export interface Certificate {
  /** The certificate's own bytes, as received. */
  der: Uint8Array;
  /** The DER of tbsCertificate: what the issuer signed. */
  tbs: Uint8Array;
  version: number;
  serial: bigint;
  tbsSignatureAlgorithm: AlgorithmIdentifier;
  signatureAlgorithm: AlgorithmIdentifier;
  signature: Uint8Array;
  /** DER of the issuer and subject Names. */
  issuer: Uint8Array;
  subject: Uint8Array;
  notBefore: Date;
  notAfter: Date;
  /** DER of SubjectPublicKeyInfo. */
  spki: Uint8Array;
  /** Its algorithm (e.g. id-ecPublicKey, id-ml-dsa-65). */
  publicKeyAlgorithm: AlgorithmIdentifier;
  /** The subjectPublicKey BIT STRING's bytes. */
  subjectPublicKey: Uint8Array;
  extensions: CertExtension[];
}

// ---------------------------------------------------------------------------------------------
// Parsing

/**
 * Parses a DER certificate (RFC 5280 §4.1). The bytes are copied, so the result does not keep a
 * larger input buffer alive.
 * @throws DerError when it is not a strict DER certificate.
 */
export function parseCertificateDer(input: Uint8Array): Certificate {
  const der = Uint8Array.from(input);
  const top = decodeDer(der, 'certificate');
  const parts = sequence(top, 'Certificate');
  if (parts.length !== 3) throw new DerError('Certificate: expected tbsCertificate, signatureAlgorithm, signatureValue');
  const tbsEl = expectTag(parts[0], TAG.SEQUENCE, 'tbsCertificate');
  const signatureAlgorithm = readAlgorithmIdentifier(parts[1], 'signatureAlgorithm');
  const sig = readBitString(parts[2], 'signatureValue');
  if (sig.unusedBits !== 0) throw new DerError('signatureValue: not a whole number of octets');

  const c = new DerCursor(children(tbsEl), 'tbsCertificate');
  const versionEl = c.optional((el) => isContext(el, 0, true));
  let version = 1;
  if (versionEl) {
    const inner = children(versionEl);
    if (inner.length !== 1) throw new DerError('version: malformed');
    version = readSmallInteger(inner[0], 'version') + 1;
    // X.690 §11.5: DEFAULT v1 is not encoded; only v2 and v3 exist.
    if (version !== 2 && version !== 3) throw new DerError(`version: unsupported value ${version - 1}`);
  }
  const serial = readInteger(c.next('serialNumber'), 'serialNumber');
  const tbsSignatureAlgorithm = readAlgorithmIdentifier(c.next('signature'), 'signature');
  const issuer = expectTag(c.next('issuer'), TAG.SEQUENCE, 'issuer');
  checkName(issuer, 'issuer');
  const validity = sequence(c.next('validity'), 'validity');
  if (validity.length !== 2) throw new DerError('validity: expected notBefore and notAfter');
  const notBefore = readTime(validity[0], 'notBefore');
  const notAfter = readTime(validity[1], 'notAfter');
  const subject = expectTag(c.next('subject'), TAG.SEQUENCE, 'subject');
  checkName(subject, 'subject');
  const spkiEl = expectTag(c.next('subjectPublicKeyInfo'), TAG.SEQUENCE, 'subjectPublicKeyInfo');
  const spkiParts = children(spkiEl);
  if (spkiParts.length !== 2) throw new DerError('subjectPublicKeyInfo: malformed');
  const publicKeyAlgorithm = readAlgorithmIdentifier(spkiParts[0], 'subjectPublicKeyInfo algorithm');
  const subjectPublicKey = readBitString(spkiParts[1], 'subjectPublicKey').bytes;
  // issuerUniqueID [1] and subjectUniqueID [2] (v2, v3): skipped.
  c.optional((el) => isContext(el, 1, false));
  c.optional((el) => isContext(el, 2, false));
  const extsEl = c.optional((el) => isContext(el, 3, true));
  c.end();
  const extensions: CertExtension[] = [];
  if (extsEl) {
    if (version !== 3) throw new DerError('extensions in a certificate that is not v3');
    const wrapped = children(extsEl);
    if (wrapped.length !== 1) throw new DerError('extensions: malformed');
    const list = sequence(wrapped[0], 'Extensions');
    if (list.length === 0) throw new DerError('Extensions: empty (RFC 5280 §4.1: SIZE (1..MAX))');
    for (const extEl of list) {
      const e = new DerCursor(sequence(extEl, 'Extension'), 'Extension');
      const oid = readOid(e.next('extnID'), 'extnID');
      const critEl = e.optional((el) => el.tag === TAG.BOOLEAN);
      const critical = critEl ? readBoolean(critEl, 'critical') : false;
      const value = readOctetString(e.next('extnValue'), 'extnValue');
      e.end();
      extensions.push({ oid, critical, value });
    }
  }
  return {
    der,
    tbs: tbsEl.der,
    version,
    serial,
    tbsSignatureAlgorithm,
    signatureAlgorithm,
    signature: sig.bytes,
    issuer: issuer.der,
    subject: subject.der,
    notBefore,
    notAfter,
    spki: spkiEl.der,
    publicKeyAlgorithm,
    subjectPublicKey,
    extensions,
  };
}

/** Name ::= SEQUENCE OF SET OF SEQUENCE { type OID, value ANY } (RFC 5280 §4.1.2.4). */
function checkName(name: DerElement, what: string): void {
  for (const rdn of children(name)) {
    const atvs = sequence(rdn, `${what} RDN`, TAG.SET);
    if (atvs.length === 0) throw new DerError(`${what}: empty RDN`);
    for (const atv of atvs) {
      const parts = sequence(atv, `${what} attribute`);
      if (parts.length !== 2) throw new DerError(`${what}: malformed attribute`);
      readOid(parts[0], `${what} attribute type`);
    }
  }
}

// Certificates seen before (roots on every call, a TSA's leaf in every token): parsing is cheap,
// but the public key import and the verified issuer links are worth keeping.
const byDer = new ProcessCache<string, Certificate>('certificates by DER', 128);

/**
 * A certificate from DER, shared with earlier calls for the same bytes (do not modify it).
 * @throws DerError when it is not a strict DER certificate.
 */
export function certificateFromDer(der: Uint8Array): Certificate {
  const key = Buffer.from(der.buffer, der.byteOffset, der.byteLength).toString('base64');
  return byDer.getOrSet(key, () => parseCertificateDer(der));
}

const byPem = new ProcessCache<string, Certificate[]>('certificates by PEM text', 128);

/**
 * Every `CERTIFICATE` block of a PEM text (RFC 7468), in order; text around the blocks is ignored.
 * Results are cached per text (shared objects: do not modify them).
 * @throws Error when a block is not valid base64 or not a certificate.
 */
export function certificatesFromPem(pemText: string): Certificate[] {
  const cached = byPem.get(pemText);
  if (cached) return cached;
  const certs = pemBlocks(pemText, 'CERTIFICATE').map((block) => {
    try {
      return certificateFromDer(block.der);
    } catch (err) {
      throw new Error(`not an X.509 certificate (${err instanceof Error ? err.message : String(err)})`);
    }
  });
  byPem.set(pemText, certs);
  return certs;
}

/** PEM of a certificate. */
export function certificatePem(cert: Certificate): string {
  return derToPem(cert.der);
}

/** Whether two certificates are the same (same bytes). */
export function sameCertificate(a: Certificate, b: Certificate): boolean {
  return a === b || bytesEqual(a.der, b.der);
}

// ---------------------------------------------------------------------------------------------
// Names

/** The attributes of a Name in order, all RDNs flattened: [type OID, value element]. */
export function nameAttributes(nameDer: Uint8Array): [string, DerElement][] {
  const out: [string, DerElement][] = [];
  for (const rdn of children(decodeDer(nameDer, 'Name'))) {
    for (const atv of children(rdn)) {
      const [type, value] = children(atv);
      if (type && value) out.push([readOid(type, 'attribute type'), value]);
    }
  }
  return out;
}

/** The string-valued attributes of a Name by type OID (the last one of a type wins; display only). */
export function nameStrings(nameDer: Uint8Array): Map<string, string> {
  const out = new Map<string, string>();
  for (const [type, value] of nameAttributes(nameDer)) if (isString(value)) out.set(type, stringValue(value));
  return out;
}

/** A readable distinguished name, e.g. `O=sigstore.dev, CN=sigstore-tsa` (display only). */
export function nameToString(nameDer: Uint8Array): string {
  return nameAttributes(nameDer)
    .map(([type, value]) => `${SHORT_NAMES[type] ?? type}=${isString(value) ? stringValue(value) : toHex(value.der)}`)
    .join(', ');
}

/** RFC 4518 string preparation, simplified: NFKC, case folded, insignificant spaces removed. */
function prepare(s: string): string {
  return s.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
}

/**
 * Name equality (RFC 5280 §7.1): the same RDNs in the same order, each with the same attributes;
 * string values compared after string preparation (so PrintableString and UTF8String of the same
 * text match, case-insensitively), other values byte for byte.
 */
export function namesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (bytesEqual(a, b)) return true;
  const ka = nameKey(a);
  return ka !== undefined && ka === nameKey(b);
}

/**
 * A string equal for equal Names, undefined for one that cannot be decoded. The attributes of an
 * RDN are a set: each becomes a key (type, then the prepared text or the value's bytes) and the
 * keys are sorted, so comparing two RDNs costs O(k log k) rather than a pairing by linear scans
 * (quadratic: seconds for an RDN of a few thousand attributes, and names come from the token).
 */
function nameKey(der: Uint8Array): string | undefined {
  try {
    // Name ::= SEQUENCE OF RelativeDistinguishedName (SET OF AttributeTypeAndValue (SEQUENCE)):
    // the tags are checked too, so that a name whose SET became a SEQUENCE (or the reverse) is
    // another name (a changed byte of a token's unsigned signer identifier is still a change).
    const rdns = sequence(decodeDer(der, 'Name'), 'Name').map((rdn) =>
      sequence(rdn, 'RDN', TAG.SET)
        .map((atv) => {
          const parts = sequence(atv, 'AttributeTypeAndValue');
          const [type, value] = parts;
          if (parts.length !== 2 || type?.tag !== TAG.OID || !value) throw new DerError('Name: malformed attribute');
          // The type is hex (no '='); `s:` and `b:` keep a string from matching a non-string.
          return `${toHex(type.der)}=${isString(value) ? `s:${prepare(stringValue(value))}` : `b:${toHex(value.der)}`}`;
        })
        .sort(),
    );
    return JSON.stringify(rdns);
  } catch {
    return undefined;
  }
}

// Comparison keys of the subject and issuer of certificates (immutable, shared objects), so that
// path building compares each name once rather than once per candidate pair.
const certNameKeys = new WeakMap<Certificate, { subject?: string | null; issuer?: string | null }>();

function certNameKey(cert: Certificate, field: 'subject' | 'issuer'): string | null {
  let entry = certNameKeys.get(cert);
  if (!entry) certNameKeys.set(cert, (entry = {}));
  let key = entry[field];
  if (key === undefined) key = entry[field] = nameKey(cert[field]) ?? null;
  return key;
}

/** Whether the subject of `issuer` is the issuer name of `cert` (RFC 5280 §7.1). */
function isNamedIssuerOf(issuer: Certificate, cert: Certificate): boolean {
  if (bytesEqual(issuer.subject, cert.issuer)) return true;
  const key = certNameKey(issuer, 'subject');
  return key !== null && key === certNameKey(cert, 'issuer');
}

/**
 * A test for certificates whose issuer is `name` (RFC 5280 §7.1), e.g. the issuer of a CMS
 * issuerAndSerialNumber; `name` is decoded once, however many certificates are tested.
 */
export function issuerNameMatcher(name: Uint8Array): (cert: Certificate) => boolean {
  let key: string | null | undefined;
  return (cert) => {
    if (bytesEqual(cert.issuer, name)) return true;
    if (key === undefined) key = nameKey(name) ?? null;
    return key !== null && key === certNameKey(cert, 'issuer');
  };
}

// ---------------------------------------------------------------------------------------------
// Extensions

/** The extensions with this OID (RFC 5280 §4.2 allows one; duplicates are reported by callers). */
export function extensionsOf(cert: Certificate, oid: string): CertExtension[] {
  return cert.extensions.filter((e) => e.oid === oid);
}

/** BasicConstraints ::= SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLenConstraint INTEGER OPTIONAL }. */
export function basicConstraints(cert: Certificate): { ca: boolean; pathLen?: number } | undefined {
  const ext = extensionsOf(cert, OID.basicConstraints)[0];
  if (!ext) return undefined;
  const c = new DerCursor(sequence(decodeDer(ext.value, 'basicConstraints'), 'basicConstraints'), 'basicConstraints');
  const caEl = c.optional((el) => el.tag === TAG.BOOLEAN);
  const ca = caEl ? readBoolean(caEl, 'cA') : false;
  const lenEl = c.optional((el) => el.tag === TAG.INTEGER);
  c.end();
  return lenEl ? { ca, pathLen: readSmallInteger(lenEl, 'pathLenConstraint') } : { ca };
}

/** KeyUsage bits set (RFC 5280 §4.2.1.3), or undefined without the extension. */
export function keyUsageBits(cert: Certificate): number[] | undefined {
  const ext = extensionsOf(cert, OID.keyUsage)[0];
  return ext ? bitsSet(readBitString(decodeDer(ext.value, 'keyUsage'), 'keyUsage')) : undefined;
}

/** KeyPurposeIds of ExtKeyUsageSyntax (RFC 5280 §4.2.1.12). */
function keyPurposes(ext: CertExtension): string[] {
  const items = sequence(decodeDer(ext.value, 'extKeyUsage'), 'extKeyUsage');
  if (items.length === 0) throw new DerError('extKeyUsage: empty');
  return items.map((el) => readOid(el, 'KeyPurposeId'));
}

/** The SubjectKeyIdentifier value, if any (RFC 5280 §4.2.1.2). */
export function subjectKeyIdentifier(cert: Certificate): Uint8Array | undefined {
  const ext = extensionsOf(cert, OID.subjectKeyIdentifier)[0];
  return ext ? readOctetString(decodeDer(ext.value, 'subjectKeyIdentifier'), 'subjectKeyIdentifier') : undefined;
}

/** The keyIdentifier [0] of AuthorityKeyIdentifier, if any (RFC 5280 §4.2.1.1). */
export function authorityKeyIdentifier(cert: Certificate): Uint8Array | undefined {
  const ext = extensionsOf(cert, OID.authorityKeyIdentifier)[0];
  if (!ext) return undefined;
  const first = sequence(decodeDer(ext.value, 'authorityKeyIdentifier'), 'authorityKeyIdentifier')[0];
  return isContext(first, 0, false) ? first.value : undefined;
}

/** The GeneralNames of SubjectAltName as DER elements (RFC 5280 §4.2.1.6). */
export function subjectAltNames(cert: Certificate): DerElement[] {
  const ext = extensionsOf(cert, OID.subjectAltName)[0];
  return ext ? sequence(decodeDer(ext.value, 'subjectAltName'), 'subjectAltName') : [];
}

/** Whether SHA-1 of the subjectPublicKey (RFC 5280 §4.2.1.2 method 1) or the SKI equals `keyId`. */
export function hasKeyIdentifier(cert: Certificate, keyId: Uint8Array): boolean {
  const ski = safe(() => subjectKeyIdentifier(cert));
  return ski ? bytesEqual(ski, keyId) : bytesEqual(digest('SHA-1', cert.subjectPublicKey), keyId);
}

/**
 * Why `cert` may not sign time-stamp tokens, or undefined when it may. RFC 3161 §2.3: exactly one
 * ExtendedKeyUsage extension, critical, whose only KeyPurposeId is id-kp-timeStamping. Like
 * OpenSSL, a KeyUsage, if present, may only assert digitalSignature and/or nonRepudiation.
 */
export function timeStampingUsageProblem(cert: Certificate): string | undefined {
  const ekus = extensionsOf(cert, OID.extKeyUsage);
  const eku = ekus[0];
  if (!eku) return 'the certificate has no ExtendedKeyUsage extension (RFC 3161 §2.3 requires id-kp-timeStamping)';
  if (ekus.length > 1) return 'the certificate has more than one ExtendedKeyUsage extension (RFC 3161 §2.3)';
  const purposes = safe(() => keyPurposes(eku));
  if (!purposes) return 'the ExtendedKeyUsage extension cannot be parsed';
  if (!purposes.includes(OID.kpTimeStamping)) return 'the ExtendedKeyUsage does not include id-kp-timeStamping (RFC 3161 §2.3)';
  if (purposes.length !== 1) {
    return `the ExtendedKeyUsage must contain only id-kp-timeStamping (RFC 3161 §2.3), found ${purposes.join(', ')}`;
  }
  if (!eku.critical) return 'the ExtendedKeyUsage extension is not marked critical (RFC 3161 §2.3)';
  if (extensionsOf(cert, OID.keyUsage).length > 0) {
    const bits = safe(() => keyUsageBits(cert));
    if (!bits) return 'the KeyUsage extension cannot be parsed';
    // Bit 0 digitalSignature, bit 1 nonRepudiation (RFC 5280 §4.2.1.3).
    if (!bits.some((b) => b === 0 || b === 1) || bits.some((b) => b > 1)) {
      return 'the KeyUsage must assert only digitalSignature and/or nonRepudiation';
    }
  }
  return undefined;
}

function safe<T>(f: () => T): T | undefined {
  try {
    return f();
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Signatures

const publicKeys = new WeakMap<Certificate, KeyObject>();

/**
 * The certificate's public key for node:crypto.
 * @throws Error when node cannot import it.
 */
export function publicKeyOf(cert: Certificate): KeyObject {
  let key = publicKeys.get(cert);
  if (!key) {
    key = createPublicKey({ key: Buffer.from(cert.spki), format: 'der', type: 'spki' });
    publicKeys.set(cert, key);
  }
  return key;
}

type SignatureKind = 'rsa' | 'rsa-pss' | 'ecdsa' | 'ed25519' | 'ed448' | 'ml-dsa-65';

/** Signature algorithms by OID (RFC 4055, RFC 5758, RFC 8410, RFC 3370 §3.2); hash undefined: see below. */
const SIGNATURE_ALGORITHMS: Readonly<Record<string, { kind: SignatureKind; hash?: HashName; name: string }>> = {
  '1.2.840.113549.1.1.5': { kind: 'rsa', hash: 'SHA-1', name: 'sha1WithRSAEncryption' },
  '1.2.840.113549.1.1.11': { kind: 'rsa', hash: 'SHA-256', name: 'sha256WithRSAEncryption' },
  '1.2.840.113549.1.1.12': { kind: 'rsa', hash: 'SHA-384', name: 'sha384WithRSAEncryption' },
  '1.2.840.113549.1.1.13': { kind: 'rsa', hash: 'SHA-512', name: 'sha512WithRSAEncryption' },
  // CMS only (RFC 3370 §3.2): rsaEncryption with the SignerInfo's digest algorithm.
  [OID.rsaEncryption]: { kind: 'rsa', name: 'rsaEncryption' },
  '1.2.840.113549.1.1.10': { kind: 'rsa-pss', name: 'RSASSA-PSS' },
  '1.2.840.10045.4.1': { kind: 'ecdsa', hash: 'SHA-1', name: 'ecdsa-with-SHA1' },
  '1.2.840.10045.4.3.2': { kind: 'ecdsa', hash: 'SHA-256', name: 'ecdsa-with-SHA256' },
  '1.2.840.10045.4.3.3': { kind: 'ecdsa', hash: 'SHA-384', name: 'ecdsa-with-SHA384' },
  '1.2.840.10045.4.3.4': { kind: 'ecdsa', hash: 'SHA-512', name: 'ecdsa-with-SHA512' },
  '1.3.101.112': { kind: 'ed25519', name: 'Ed25519' },
  '1.3.101.113': { kind: 'ed448', name: 'Ed448' },
  // RFC 9881 §2 (certificates), RFC 9882 §3 (CMS): pure ML-DSA-65, empty context, no parameters.
  [ID_ML_DSA_65]: { kind: 'ml-dsa-65', name: 'ML-DSA-65' },
};

const CURVES: ReadonlySet<string> = new Set(['prime256v1', 'secp384r1', 'secp521r1']);
const MGF1 = '1.2.840.113549.1.1.8';

/** RSASSA-PSS-params (RFC 4055 §3.1, explicit tags, SHA-1 / MGF1-SHA-1 / 20 / 1 by default). */
function pssParams(alg: AlgorithmIdentifier): { hash: HashName; saltLength: number } {
  if (!alg.params) throw new DerError('RSASSA-PSS without parameters');
  const c = new DerCursor(sequence(alg.params, 'RSASSA-PSS-params'), 'RSASSA-PSS-params');
  const explicit = (n: number): DerElement | undefined => {
    const el = c.optional((e) => isContext(e, n, true));
    if (!el) return undefined;
    const inner = children(el);
    if (inner.length !== 1) throw new DerError('RSASSA-PSS-params: malformed');
    return inner[0];
  };
  const hashEl = explicit(0);
  const hashAlg = hashEl ? readAlgorithmIdentifier(hashEl, 'PSS hashAlgorithm') : undefined;
  const hash = hashAlg ? hashByOid(hashAlg.oid)?.name : 'SHA-1';
  if (!hash || (hashAlg && !absentOrNullParams(hashAlg))) throw new DerError('RSASSA-PSS: unsupported hash algorithm');
  const mgfEl = explicit(1);
  let mgfHash: HashName | undefined = 'SHA-1';
  if (mgfEl) {
    const mgf = readAlgorithmIdentifier(mgfEl, 'PSS maskGenAlgorithm');
    if (mgf.oid !== MGF1 || !mgf.params) throw new DerError('RSASSA-PSS: unsupported mask generation function');
    const mgfAlg = readAlgorithmIdentifier(mgf.params, 'MGF1 hash');
    mgfHash = hashByOid(mgfAlg.oid)?.name;
  }
  if (mgfHash !== hash) throw new DerError('RSASSA-PSS: MGF1 must use the message hash');
  const saltEl = explicit(2);
  const saltLength = saltEl ? readSmallInteger(saltEl, 'PSS saltLength') : 20;
  const trailerEl = explicit(3);
  if (trailerEl && readSmallInteger(trailerEl, 'PSS trailerField') !== 1) throw new DerError('RSASSA-PSS: trailerField must be 1');
  c.end();
  return { hash, saltLength };
}

/**
 * Verifies `signature` over `data` with the public key of `signer` under the signature algorithm
 * `alg`. `digestHash` is the hash for rsaEncryption (CMS, RFC 3370 §3.2), which names none itself.
 * @returns whether it verifies, and the algorithm's description.
 * @throws DerError for an unsupported algorithm, bad parameters or a key of another type.
 */
export function verifySignature(
  alg: AlgorithmIdentifier,
  signer: Certificate,
  data: Uint8Array,
  signature: Uint8Array,
  digestHash?: HashName,
): { ok: boolean; description: string } {
  const known = SIGNATURE_ALGORITHMS[alg.oid];
  if (!known) throw new DerError(`unsupported signature algorithm ${alg.oid}`);
  if (known.kind === 'ml-dsa-65') {
    // RFC 9881 §2: the parameters MUST be absent, in the signature algorithm and in the key's.
    if (alg.params !== undefined) throw new DerError('ML-DSA-65 with parameters (RFC 9881 §2: absent)');
    if (signer.publicKeyAlgorithm.oid !== ID_ML_DSA_65 || signer.publicKeyAlgorithm.params !== undefined) {
      throw new DerError(`ML-DSA-65 with a key of algorithm ${signer.publicKeyAlgorithm.oid}${signer.publicKeyAlgorithm.params ? ' with parameters' : ''}`);
    }
    // RFC 9881 §4: the BIT STRING is pkEncode(pk), 1952 bytes for ML-DSA-65.
    if (signer.subjectPublicKey.byteLength !== ML_DSA_65_PUBLIC_KEY_BYTES) throw new DerError(`ML-DSA-65 public key of ${signer.subjectPublicKey.byteLength} bytes`);
    // verifyMlDsa65: node:crypto (OpenSSL 3.5) where this Node has ML-DSA, else noble; the raw key
    // keeps it working on a Node whose node:crypto cannot even import an ML-DSA key.
    return { ok: verifyMlDsa65(signature, data, signer.subjectPublicKey), description: known.name };
  }
  const key = publicKeyOf(signer);
  const keyType = key.asymmetricKeyType;
  switch (known.kind) {
    case 'rsa': {
      const hash = known.hash ?? digestHash;
      if (!hash) throw new DerError(`${known.name} needs a digest algorithm`);
      if (!absentOrNullParams(alg)) throw new DerError(`${known.name} with unexpected parameters`);
      if (keyType !== 'rsa') throw new DerError(`${known.name} with a ${keyType ?? 'unknown'} key`);
      return { ok: nodeVerify(nodeHashName(hash), data, key, signature), description: `${known.name}, ${hash}` };
    }
    case 'rsa-pss': {
      const { hash, saltLength } = pssParams(alg);
      if (keyType !== 'rsa' && keyType !== 'rsa-pss') throw new DerError(`RSASSA-PSS with a ${keyType ?? 'unknown'} key`);
      const ok = nodeVerify(nodeHashName(hash), data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength }, signature);
      return { ok, description: `RSASSA-PSS, ${hash}, salt ${saltLength}` };
    }
    case 'ecdsa': {
      const hash = known.hash as HashName;
      // RFC 5758 §3.2: parameters absent (NULL tolerated, as many implementations write it).
      if (!absentOrNullParams(alg)) throw new DerError(`${known.name} with unexpected parameters`);
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (keyType !== 'ec' || !curve || !CURVES.has(curve)) throw new DerError(`${known.name} with an unsupported key (${keyType ?? 'unknown'} ${curve ?? ''})`);
      return { ok: nodeVerify(nodeHashName(hash), data, { key, dsaEncoding: 'der' }, signature), description: `${known.name} on ${curve}` };
    }
    case 'ed25519':
    case 'ed448': {
      // RFC 8410 §3: parameters absent; RFC 8419 §3: pure EdDSA over the signed attributes.
      if (alg.params !== undefined) throw new DerError(`${known.name} with parameters`);
      if (keyType !== known.kind) throw new DerError(`${known.name} with a ${keyType ?? 'unknown'} key`);
      return { ok: nodeVerify(null, data, key, signature), description: known.name };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Path validation

/** Outcome of {@link validatePath}. */
export interface PathValidation {
  ok: boolean;
  /** Why it failed, or which anchor it chains to. */
  reason: string;
  /** The validated path, leaf first, trust anchor last (empty on failure). */
  path: Certificate[];
}

/** Extensions whose criticality we honour (RFC 5280 §4.2); certificatePolicies is accepted as
 * any-policy (§6.1 with user-initial-policy-set any-policy and no explicit policy required). */
const UNDERSTOOD_EXTENSIONS: ReadonlySet<string> = new Set([
  OID.basicConstraints,
  OID.keyUsage,
  OID.extKeyUsage,
  OID.subjectKeyIdentifier,
  OID.authorityKeyIdentifier,
  OID.subjectAltName,
  OID.certificatePolicies,
]);

const MAX_PATH = 8;

/**
 * Candidate issuers one path search considers at most. The certificates of a token are unsigned
 * (RFC 5652 §5.1): a dozen CA certificates with one name and one key sign each other in every
 * order, and a depth-first search that only stops at a trust anchor would try each ordering
 * (millions of paths). Real paths take a few candidates; like Go's crypto/x509 (100 signature
 * checks per verification), the search gives up, failing the path, after this many.
 */
export const MAX_PATH_CANDIDATES = 100;

// Issuer links whose signature verified: child -> issuers.
const verifiedLinks = new WeakMap<Certificate, WeakSet<Certificate>>();

/** Why `issuer`'s key does not verify `cert`'s signature, or undefined when it does. */
function linkProblem(cert: Certificate, issuer: Certificate): string | undefined {
  if (verifiedLinks.get(cert)?.has(issuer)) return undefined;
  // RFC 5280 §4.1.1.2: signatureAlgorithm MUST equal tbsCertificate.signature.
  if (!bytesEqual(cert.signatureAlgorithm.der, cert.tbsSignatureAlgorithm.der)) {
    return `${describeCertificate(cert)}: signatureAlgorithm differs from tbsCertificate.signature`;
  }
  if (cert.signatureAlgorithm.oid === OID.rsaEncryption) return `${describeCertificate(cert)}: rsaEncryption is not a certificate signature algorithm`;
  try {
    const { ok } = verifySignature(cert.signatureAlgorithm, issuer, cert.tbs, cert.signature);
    if (!ok) return `the signature of ${describeCertificate(cert)} does not verify with the key of ${describeCertificate(issuer)}`;
  } catch (err) {
    return `the signature of ${describeCertificate(cert)} cannot be verified: ${err instanceof Error ? err.message : String(err)}`;
  }
  let set = verifiedLinks.get(cert);
  if (!set) verifiedLinks.set(cert, (set = new WeakSet()));
  set.add(issuer);
  return undefined;
}

/** The subject of a certificate in quotes, for messages. */
export function describeCertificate(cert: Certificate): string {
  return `"${safe(() => nameToString(cert.subject)) ?? 'unreadable name'}"`;
}

/** Problems of one certificate of the path that do not depend on its position. */
function certificateProblem(cert: Certificate, checkDate: Date): string | undefined {
  // RFC 5280 §6.1.3 (a)(2): the validity period includes checkDate (both ends inclusive).
  if (checkDate < cert.notBefore || checkDate > cert.notAfter) {
    return `${describeCertificate(cert)} is not valid at ${checkDate.toISOString()} (valid ${cert.notBefore.toISOString()} to ${cert.notAfter.toISOString()})`;
  }
  const seen = new Set<string>();
  for (const e of cert.extensions) {
    // RFC 5280 §4.2: a certificate MUST NOT include more than one instance of an extension.
    if (seen.has(e.oid)) return `${describeCertificate(cert)} has the extension ${e.oid} more than once`;
    seen.add(e.oid);
    // RFC 5280 §6.1.4 (o), §6.1.5 (f): an unrecognised critical extension rejects the path.
    if (e.critical && !UNDERSTOOD_EXTENSIONS.has(e.oid)) return `${describeCertificate(cert)} has an unsupported critical extension ${e.oid}`;
  }
  return undefined;
}

/**
 * What `cert` lacks to issue `below` certificates (not counting self-issued ones) of a path
 * (RFC 5280 §6.1.4 (k), (l), (m), (n)). A trust anchor without any extension (a v1 root) is taken
 * as is, as RFC 5280 §6.1.1 (d) defines the anchor by its name and key only.
 */
function issuerProblem(cert: Certificate, below: number, isAnchor: boolean): string | undefined {
  let bc: ReturnType<typeof basicConstraints>;
  let ku: number[] | undefined;
  try {
    bc = basicConstraints(cert);
    ku = keyUsageBits(cert);
  } catch (err) {
    return `${describeCertificate(cert)} has a malformed extension: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (isAnchor && cert.version < 3 && cert.extensions.length === 0) return undefined;
  if (!bc?.ca) return `${describeCertificate(cert)} is not a CA certificate (basicConstraints cA is not TRUE)`;
  // keyCertSign is bit 5.
  if (ku !== undefined && !ku.includes(5)) return `${describeCertificate(cert)} may not sign certificates (keyUsage lacks keyCertSign)`;
  if (bc.pathLen !== undefined && below > bc.pathLen) return `${describeCertificate(cert)} allows ${bc.pathLen} intermediate certificates below it, the path has ${below}`;
  return undefined;
}

function pathProblem(path: Certificate[], checkDate: Date): string | undefined {
  let nonSelfIssued = 0;
  for (let i = 0; i < path.length; i++) {
    const cert = path[i] as Certificate;
    const problem = certificateProblem(cert, checkDate) ?? (i > 0 ? issuerProblem(cert, nonSelfIssued, i === path.length - 1) : undefined);
    if (problem) return problem;
    // pathLenConstraint counts the intermediates between an issuer and the leaf, except self-issued ones.
    if (i > 0 && !isNamedIssuerOf(cert, cert)) nonSelfIssued++;
  }
  return undefined;
}

/**
 * RFC 5280 §6.1 basic path validation of `leaf` to one of `anchors` at `checkDate`: each
 * certificate's signature verifies with its issuer's key, names chain, every certificate
 * (anchor included) is valid at `checkDate`, issuers are CAs allowed to sign certificates within
 * their path length, and no certificate has a critical extension we do not process. Candidates
 * are tried depth first, anchors first; the first path without a problem wins. `leaf` itself is
 * never a trust anchor, and only CA certificates are taken as intermediates.
 */
export function validatePath(leaf: Certificate, options: { anchors: Certificate[]; intermediates?: Certificate[]; checkDate: Date }): PathValidation {
  const anchors: Certificate[] = [];
  for (const a of options.anchors) {
    if (!sameCertificate(a, leaf) && !anchors.some((t) => sameCertificate(t, a))) anchors.push(a);
  }
  if (anchors.length === 0) return { ok: false, reason: 'no trust anchor configured', path: [] };
  const pool: Certificate[] = [];
  for (const c of options.intermediates ?? []) {
    if (sameCertificate(c, leaf) || [...anchors, ...pool].some((t) => sameCertificate(t, c))) continue;
    if (safe(() => basicConstraints(c))?.ca === true) pool.push(c);
  }

  const problems: string[] = [];
  const candidates = [...anchors, ...pool];
  let considered = 0;
  let exhausted = false;
  const search = (path: Certificate[]): Certificate[] | undefined => {
    const cert = path[path.length - 1] as Certificate;
    const aki = safe(() => authorityKeyIdentifier(cert));
    let named = 0;
    for (const candidate of candidates) {
      if (path.includes(candidate) || !isNamedIssuerOf(candidate, cert)) continue;
      named++;
      if (++considered > MAX_PATH_CANDIDATES) {
        exhausted = true;
        return undefined;
      }
      // RFC 5280 §4.2.1.1: the authority key identifier, when both sides have one, must match.
      const ski = aki ? safe(() => subjectKeyIdentifier(candidate)) : undefined;
      if (aki && ski && !bytesEqual(aki, ski)) {
        problems.push(`the authority key identifier of ${describeCertificate(cert)} is not the key identifier of ${describeCertificate(candidate)}`);
        continue;
      }
      const link = linkProblem(cert, candidate);
      if (link) {
        problems.push(link);
        continue;
      }
      const extended = [...path, candidate];
      if (anchors.includes(candidate)) {
        const problem = pathProblem(extended, options.checkDate);
        if (!problem) return extended;
        problems.push(problem);
      } else if (extended.length < MAX_PATH) {
        const found = search(extended);
        if (found) return found;
        if (exhausted) return undefined;
      }
    }
    if (named === 0) problems.push(`no trusted or given CA certificate is named "${safe(() => nameToString(cert.issuer)) ?? '?'}", the issuer of ${describeCertificate(cert)}`);
    return undefined;
  };
  const path = search([leaf]);
  if (!path) {
    const gaveUp = exhausted ? `no path from ${describeCertificate(leaf)} to a trust anchor among the first ${MAX_PATH_CANDIDATES} candidate issuers (too many certificates with the same names)` : undefined;
    return { ok: false, reason: gaveUp ?? problems[0] ?? `no path from ${describeCertificate(leaf)} to a trust anchor`, path: [] };
  }
  const anchor = path[path.length - 1] as Certificate;
  return { ok: true, reason: `chains to ${nameToString(anchor.subject)} at ${options.checkDate.toISOString()}`, path };
}

/**
 * The certificates of `carried` that no certificate of `trusted` vouches for: neither one of them
 * (same bytes) nor signed by one of them or, in turn, by a certificate vouched for this way (issuer
 * name and signature only; validity and CA constraints belong to path validation).
 */
export function unvouchedCertificates(carried: Certificate[], trusted: Certificate[]): Certificate[] {
  const vouched = [...trusted];
  let pending = carried.filter((c) => !vouched.some((t) => sameCertificate(t, c)));
  let progress = true;
  while (pending.length > 0 && progress) {
    progress = false;
    pending = pending.filter((c) => {
      const signed = vouched.some((issuer) => isNamedIssuerOf(issuer, c) && linkProblem(c, issuer) === undefined);
      if (signed) {
        vouched.push(c);
        progress = true;
      }
      return !signed;
    });
  }
  return pending;
}

/**
 * A certificate's subject as people read it: `CN (O)`, or whichever of the two it has (display
 * only; null when the PEM holds no certificate or neither attribute). The one formatter of a TSA's
 * name: the verify page, the PDF certificate and `evidence verify` all show this.
 */
export function describeSubject(pem: string): string | null {
  try {
    const cert = certificatesFromPem(pem)[0];
    if (!cert) return null;
    const parts = nameStrings(cert.subject);
    const cn = parts.get('2.5.4.3');
    const o = parts.get('2.5.4.10');
    if (cn && o) return `${cn} (${o})`;
    return cn ?? o ?? null;
  } catch {
    return null;
  }
}
