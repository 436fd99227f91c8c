/**
 * X.509 certificates for the verification side (RFC 5280), over the strict DER reader: parsing,
 * names and their comparison, and the extensions a time-stamp verifier needs. Signatures are
 * signature.ts's, path validation (§6.1) is path.ts's.
 */
import {
  type AlgorithmIdentifier,
  type DerElement,
  DerCursor,
  DerError,
  TAG,
  bitsSet,
  children,
  decodeDer,
  expectTag,
  isContext,
  isString,
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
} from './der.js';
import { OID, SHORT_NAMES, bytesEqual, digest, toHex } from './identifiers.js';
import { derToPem, pemBlocks } from './pem.js';
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
  return byPem.getOrSet(pemText, () =>
    pemBlocks(pemText, 'CERTIFICATE').map((block) => {
      try {
        return certificateFromDer(block.der);
      } catch (err) {
        throw new Error(`not an X.509 certificate (${err instanceof Error ? err.message : String(err)})`);
      }
    }),
  );
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
export function isNamedIssuerOf(issuer: Certificate, cert: Certificate): boolean {
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

export function safe<T>(f: () => T): T | undefined {
  try {
    return f();
  } catch {
    return undefined;
  }
}

/** The subject of a certificate in quotes, for messages. */
export function describeCertificate(cert: Certificate): string {
  return `"${safe(() => nameToString(cert.subject)) ?? 'unreadable name'}"`;
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
