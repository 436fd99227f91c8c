/**
 * Verification of RFC 3161 time-stamp responses and tokens, over a strict DER reader and
 * node:crypto (no ASN.1 library): the PKIStatus, the imprint, nonce and policy, the CMS signature
 * (RFC 5652 §5.4, §5.6), the ESS signing-certificate attribute (RFC 5035, RFC 2634), the TSA's
 * ExtendedKeyUsage (RFC 3161 §2.3), the TSTInfo `tsa` name, and the certificate path (RFC 5280 §6).
 * Each is checked and reported separately, so that a caller can tell a wrong root from a wrong
 * imprint.
 */
import {
  type AlgorithmIdentifier,
  type DerElement,
  type HashName,
  CLASS,
  DerCursor,
  DerError,
  OID,
  TAG,
  absentOrNullParams,
  bitsSet,
  bytesEqual,
  checkStructure,
  children,
  decodeDer,
  digest,
  expectTag,
  hashByOid,
  integerValue,
  isContext,
  isString,
  readAlgorithmIdentifier,
  readBitString,
  readBoolean,
  readGeneralizedTime,
  readInteger,
  readOctetString,
  readOid,
  readSmallInteger,
  sequence,
  stringValue,
  toHex,
} from './der.js';
import {
  type Certificate,
  certificateFromDer,
  certificatePem,
  certificatesFromPem,
  describeCertificate,
  hasKeyIdentifier,
  issuerNameMatcher,
  nameToString,
  namesEqual,
  subjectAltNames,
  timeStampingUsageProblem,
} from './x509-verify.js';
import { unvouchedCertificates, validatePath } from './path.js';
import { verifySignature } from './signature.js';
import { ID_ML_DSA_65 } from '../ml-dsa.js';

/** Result of one check. */
export type CheckResult = 'pass' | 'fail' | 'skipped';

/** One check with the reason for its result. */
export interface CheckOutcome {
  result: CheckResult;
  reason: string;
}

/** Every check made on a response; see {@link verifyTimestampResponse}. */
export interface TimestampChecks {
  /** PKIStatus is granted or grantedWithMods (RFC 3161 §2.4.2); skipped for a bare token. */
  status: CheckOutcome;
  /** The message imprint's algorithm and value are the expected ones. */
  imprint: CheckOutcome;
  /** The nonce equals the one sent (skipped when none is expected). */
  nonce: CheckOutcome;
  /** The policy equals the expected one (skipped when none is expected). */
  policy: CheckOutcome;
  /** The CMS signature (RFC 5652 §5.4, §5.6): content type, message digest, signature value. */
  signature: CheckOutcome;
  /** The ESS signing-certificate attribute names the signer certificate (RFC 5035, RFC 2634). */
  essCertIdV2: CheckOutcome;
  /** The signer certificate may sign time-stamps: EKU timeStamping only, critical (RFC 3161 §2.3). */
  eku: CheckOutcome;
  /** The TSTInfo `tsa` name, when present, is the signer's name (RFC 3161 §2.4.2). */
  tsaName: CheckOutcome;
  /**
   * The signer certificate chains to one of the given roots (RFC 5280 §6), and every other
   * certificate the token carries verifies up to one of them.
   */
  chain: CheckOutcome;
}

/** The fields of a TSTInfo worth showing (RFC 3161 §2.4.2). */
export interface TimestampSummary {
  genTime: Date;
  /** serialNumber as a decimal string. */
  serial: string;
  /** serialNumber as lower-case hex (as OpenSSL prints it). */
  serialHex: string;
  policy: string;
  /** The `tsa` GeneralName as text, when present. */
  tsaName?: string;
  accuracy?: { seconds?: number; millis?: number; micros?: number };
  ordering: boolean;
  nonce?: bigint;
  /** `SHA-256`, `SHA-384`, … or the OID of an unknown algorithm. */
  hashAlgorithm: string;
  imprintHex: string;
}

/** PKIStatusInfo of a response, in words. */
export interface PkiStatusSummary {
  status: number;
  /** `granted`, `grantedWithMods`, `rejection`, … */
  name: string;
  statusStrings: string[];
  /** Names of the PKIFailureInfo bits set, e.g. `badAlg`. */
  failInfo: string[];
}

/** Structured result of a verification: never thrown, always returned. */
export interface TimestampVerification extends Partial<TimestampSummary> {
  /** True when no check failed and the imprint, signature, ESS, EKU and chain checks passed. */
  ok: boolean;
  /** Set when the input could not be decoded; the reason starts with `malformed`. */
  malformed?: string;
  checks: TimestampChecks;
  pkiStatus?: PkiStatusSummary;
  /** The signer (TSA) certificate, when it was found. */
  tsaCertificatePem?: string;
  /** The validated certificate path as PEM, leaf first, trust anchor last. */
  chainPem?: string[];
  /**
   * The end of the validated path's validity (the earliest notAfter on it): the token was judged
   * as of its genTime, when every certificate was valid; a reader may say that one has since expired.
   */
  chainValidUntil?: Date;
  /** DER of the TimeStampToken (the CMS ContentInfo). */
  token?: Uint8Array;
}

/** What the caller expects of the token. */
export interface VerifyTimestampOptions {
  /** The expected hashedMessage (e.g. the SHA-256 of the data). */
  imprint: Uint8Array;
  /**
   * Trusted roots as PEM texts; each may hold several certificates (a chain file). All of them are
   * trust anchors except the signer certificate itself, which is only used to find the signer.
   */
  roots: string[];
  /** More PEM certificates used to find the signer and build the path, not trusted. */
  untrusted?: string[];
  /** The expected imprint algorithm. Default: any of SHA-256, SHA-384, SHA-512. */
  hashAlgorithm?: HashName;
  /** The nonce that was sent; when given, the token must carry the same. */
  nonce?: bigint;
  /** The expected TSA policy OID. */
  policy?: string;
  /**
   * When the chain is validated. Default: the token's genTime, as certificates of TSAs expire long
   * before the evidence they stamped.
   */
  now?: Date;
  /**
   * Certificates retired from signing (lib/crypto/tsa/history.ts), by SHA-256 of their DER: a
   * token whose path holds one of them and whose genTime is after its retirement fails the chain
   * check. A retired root remains an anchor for the tokens dated before.
   */
  retired?: readonly { sha256: string; retiredAt: Date }[];
}

const ACCEPTED_IMPRINT_HASHES: readonly HashName[] = ['SHA-256', 'SHA-384', 'SHA-512'];

const STATUS_NAMES = ['granted', 'grantedWithMods', 'rejection', 'waiting', 'revocationWarning', 'revocationNotification'];

// RFC 3161 §2.4.2 PKIFailureInfo bit numbers.
const FAILURE_NAMES: Readonly<Record<number, string>> = {
  0: 'badAlg',
  2: 'badRequest',
  5: 'badDataFormat',
  14: 'timeNotAvailable',
  15: 'unacceptedPolicy',
  16: 'unacceptedExtension',
  17: 'addInfoNotAvailable',
  25: 'systemFailure',
};

const pass = (reason: string): CheckOutcome => ({ result: 'pass', reason });
const fail = (reason: string): CheckOutcome => ({ result: 'fail', reason });
const skipped = (reason: string): CheckOutcome => ({ result: 'skipped', reason });

class MalformedError extends Error {}

// ---------------------------------------------------------------------------------------------
// Decoding

/** Attribute ::= SEQUENCE { attrType OID, attrValues SET OF AttributeValue } (RFC 5652 §5.3). */
export interface Attribute {
  type: string;
  values: DerElement[];
}

/** SignerInfo (RFC 5652 §5.3), with the parts this verifier uses; the PAdES verifier (../pdf-sign/verify.ts) reads it too. */
export interface SignerInfo {
  sid: { issuer: Uint8Array; serial: bigint } | { keyId: Uint8Array };
  digestAlgorithm: AlgorithmIdentifier;
  /** The signed attributes and the bytes the signature covers (their DER with the SET OF tag). */
  signedAttrs?: { attributes: Attribute[]; signedBytes: Uint8Array };
  signatureAlgorithm: AlgorithmIdentifier;
  signature: Uint8Array;
}

/** TSTInfo (RFC 3161 §2.4.2). */
interface TstInfo {
  policy: string;
  hashAlgorithm: AlgorithmIdentifier;
  hashedMessage: Uint8Array;
  serial: bigint;
  genTime: Date;
  accuracy?: { seconds?: number; millis?: number; micros?: number };
  ordering: boolean;
  nonce?: bigint;
  /** The `tsa` GeneralName element. */
  tsa?: DerElement;
}

interface DecodedToken {
  tokenDer: Uint8Array;
  tstInfo: TstInfo;
  /** The eContent octets: what messageDigest is computed over (RFC 5652 §5.4). */
  eContent: Uint8Array;
  certificates: Certificate[];
  signerInfos: SignerInfo[];
}

interface DecodedResponse {
  pkiStatus: PkiStatusSummary;
  token?: DecodedToken;
}

/** Runs a decoding step; any DER problem becomes a MalformedError with `message`. */
function decoding<T>(message: string, step: () => T): T {
  try {
    return step();
  } catch (err) {
    if (err instanceof MalformedError) throw err;
    const detail = err instanceof Error ? err.message : String(err);
    throw new MalformedError(`${message} (${detail})`);
  }
}

/** TimeStampResp ::= SEQUENCE { status PKIStatusInfo, timeStampToken TimeStampToken OPTIONAL } */
function decodeResponse(der: Uint8Array): DecodedResponse {
  const { pkiStatus, tokenEl } = decoding('malformed: not a DER TimeStampResp (RFC 3161 §2.4.2)', () => {
    const top = decodeDer(der, 'TimeStampResp');
    checkStructure(top);
    const c = new DerCursor(sequence(top, 'TimeStampResp'), 'TimeStampResp');
    const status = decodeStatus(c.next('status'));
    const token = c.optional(() => true);
    c.end();
    return { pkiStatus: status, tokenEl: token };
  });
  if (!tokenEl) return { pkiStatus };
  // A copy: the result must not change when the caller reuses its buffer.
  return { pkiStatus, token: decodeToken(Uint8Array.from(tokenEl.der)) };
}

/** PKIStatusInfo ::= SEQUENCE { status INTEGER, statusString PKIFreeText OPTIONAL, failInfo BIT STRING OPTIONAL } */
function decodeStatus(el: DerElement): PkiStatusSummary {
  const c = new DerCursor(sequence(el, 'PKIStatusInfo'), 'PKIStatusInfo');
  const status = readSmallInteger(c.next('status'), 'status');
  const text = c.optional((e) => e.tag === TAG.SEQUENCE);
  const statusStrings = text ? children(text).map((s) => (isString(s) ? stringValue(s) : '')) : [];
  const failEl = c.optional((e) => e.tag === TAG.BIT_STRING);
  c.end();
  const failInfo = failEl ? bitsSet(readBitString(failEl, 'failInfo')).map((b) => FAILURE_NAMES[b] ?? `bit${b}`) : [];
  return { status, name: STATUS_NAMES[status] ?? `status${status}`, statusStrings, failInfo };
}

/** TimeStampToken ::= ContentInfo { id-signedData, SignedData } (RFC 3161 §2.4.2, RFC 5652 §3, §5.1). */
function decodeToken(tokenDer: Uint8Array): DecodedToken {
  const signedDataEl = decoding('malformed: the time-stamp token is not a DER ContentInfo (RFC 5652 §3)', () => {
    const top = decodeDer(tokenDer, 'ContentInfo');
    checkStructure(top);
    const c = new DerCursor(sequence(top, 'ContentInfo'), 'ContentInfo');
    const contentType = readOid(c.next('contentType'), 'contentType');
    const content = c.next('content');
    c.end();
    if (contentType !== OID.signedData) throw new MalformedError('malformed: the time-stamp token is not CMS SignedData (RFC 3161 §2.4.2)');
    if (!isContext(content, 0, true)) throw new DerError('content is not [0] EXPLICIT');
    const inner = children(content);
    if (inner.length !== 1) throw new DerError('content is not [0] EXPLICIT');
    return inner[0] as DerElement;
  });

  const sd = decoding('malformed: the SignedData cannot be decoded', () => {
    const c = new DerCursor(sequence(signedDataEl, 'SignedData'), 'SignedData');
    const version = readInteger(c.next('version'), 'version');
    const digestAlgorithms = sequence(c.next('digestAlgorithms'), 'digestAlgorithms', TAG.SET).map((a) => {
      const alg = readAlgorithmIdentifier(a, 'digestAlgorithm');
      // RFC 5754 §2 (and RFC 3370 §2.1 for SHA-1): parameters absent or NULL.
      if (hashByOid(alg.oid) && !absentOrNullParams(alg)) throw new MalformedError('malformed: a SignedData digest algorithm has parameters (RFC 5754 §2, RFC 5652 §5.1)');
      return alg.oid;
    });
    const encap = new DerCursor(sequence(c.next('encapContentInfo'), 'encapContentInfo'), 'encapContentInfo');
    const eContentType = readOid(encap.next('eContentType'), 'eContentType');
    const eContentWrap = encap.optional((el) => isContext(el, 0, true));
    encap.end();
    const certsEl = c.optional((el) => isContext(el, 0, true));
    const crlsEl = c.optional((el) => isContext(el, 1, true)); // crls: not used beyond the version rule
    const signerInfosEl = c.next('signerInfos');
    c.end();
    let eContent: Uint8Array | undefined;
    if (eContentWrap) {
      const inner = children(eContentWrap);
      if (inner.length !== 1) throw new DerError('eContent is not [0] EXPLICIT OCTET STRING');
      eContent = readOctetString(inner[0], 'eContent');
    }
    // CertificateChoices (RFC 5652 §10.2.2): only plain certificates are used; the tagged
    // choices [0]–[3] (attribute and other certificates) are skipped. A certificate that is not
    // strict DER (RFC 5280 §4.1) makes the SignedData undecodable, even one the path does not need.
    const certificates: Certificate[] = [];
    for (const el of certsEl ? children(certsEl) : []) {
      if (el.tag === TAG.SEQUENCE) certificates.push(certificateFromDer(el.der));
      else if (!(el.cls === CLASS.context && el.constructed && el.tagNumber <= 3)) throw new DerError('CertificateChoices: unexpected tag');
    }
    const signerInfos = sequence(signerInfosEl, 'signerInfos', TAG.SET).map(decodeSignerInfo);
    // The version and digestAlgorithms are outside the signature. RFC 5652 fixes both, so a stored
    // token whose bytes changed there is refused like any other change (test/evidence/verify-tamper).
    // §5.1: 5 with "other" certificates or revocation info, else 4 with v2 attribute certificates,
    // else 3 (the eContentType, id-ct-TSTInfo, is not id-data).
    const choices = certsEl ? children(certsEl) : [];
    const otherRevocation = (crlsEl ? children(crlsEl) : []).some((el) => isContext(el, 1, true));
    const expected = choices.some((el) => isContext(el, 3, true)) || otherRevocation ? 5n : choices.some((el) => isContext(el, 2, true)) ? 4n : 3n;
    if (version !== expected) throw new MalformedError(`malformed: SignedData version ${version}, RFC 5652 §5.1 requires ${expected} here`);
    // §5.1: digestAlgorithms lists the message digest algorithm of every signer.
    for (const info of signerInfos) {
      if (!digestAlgorithms.includes(info.digestAlgorithm.oid)) {
        throw new MalformedError('malformed: the signer\'s digest algorithm is not among the SignedData digestAlgorithms (RFC 5652 §5.1)');
      }
    }
    return { eContentType, eContent, certificates, signerInfos };
  });
  if (sd.eContentType !== OID.ctTSTInfo || !sd.eContent) {
    throw new MalformedError('malformed: the SignedData does not encapsulate a TSTInfo (id-ct-TSTInfo)');
  }
  const eContent = sd.eContent;
  const tstInfo = decoding('malformed: the TSTInfo cannot be decoded', () => decodeTstInfo(eContent));
  return { tokenDer, tstInfo, eContent, certificates: sd.certificates, signerInfos: sd.signerInfos };
}

export function decodeSignerInfo(el: DerElement): SignerInfo {
  const c = new DerCursor(sequence(el, 'SignerInfo'), 'SignerInfo');
  const version = readInteger(c.next('version'), 'SignerInfo version');
  // SignerIdentifier ::= CHOICE { issuerAndSerialNumber, subjectKeyIdentifier [0] IMPLICIT OCTET STRING }
  const sidEl = c.next('sid');
  let sid: SignerInfo['sid'];
  if (sidEl.tag === TAG.SEQUENCE) {
    const parts = children(sidEl);
    if (parts.length !== 2) throw new DerError('IssuerAndSerialNumber: malformed');
    sid = { issuer: expectTag(parts[0], TAG.SEQUENCE, 'sid issuer').der, serial: readInteger(parts[1], 'sid serialNumber') };
  } else if (isContext(sidEl, 0, false)) {
    sid = { keyId: sidEl.value };
  } else {
    throw new DerError('SignerIdentifier: unexpected choice');
  }
  // RFC 5652 §5.3: version 1 with issuerAndSerialNumber, 3 with subjectKeyIdentifier.
  if (version !== ('issuer' in sid ? 1n : 3n)) {
    throw new MalformedError(`malformed: SignerInfo version ${version} does not match its signer identifier (RFC 5652 §5.3)`);
  }
  const digestAlgorithm = readAlgorithmIdentifier(c.next('digestAlgorithm'), 'digestAlgorithm');
  const attrsEl = c.optional((e) => isContext(e, 0, true));
  const signatureAlgorithm = readAlgorithmIdentifier(c.next('signatureAlgorithm'), 'signatureAlgorithm');
  const signature = readOctetString(c.next('signature'), 'signature');
  c.optional((e) => isContext(e, 1, true)); // unsignedAttrs: not used
  c.end();
  const info: SignerInfo = { sid, digestAlgorithm, signatureAlgorithm, signature };
  if (attrsEl) {
    const attributes = children(attrsEl).map((a) => {
      const parts = sequence(a, 'Attribute');
      if (parts.length !== 2) throw new DerError('Attribute: malformed');
      return { type: readOid(parts[0], 'attrType'), values: sequence(parts[1], 'attrValues', TAG.SET) };
    });
    // RFC 5652 §5.4: the signature covers the DER of the attributes with the EXPLICIT SET OF tag.
    const signedBytes = Uint8Array.from(attrsEl.der);
    signedBytes[0] = TAG.SET;
    info.signedAttrs = { attributes, signedBytes };
  }
  return info;
}

/** TSTInfo (RFC 3161 §2.4.2). */
function decodeTstInfo(der: Uint8Array): TstInfo {
  const top = decodeDer(der, 'TSTInfo');
  checkStructure(top);
  const c = new DerCursor(sequence(top, 'TSTInfo'), 'TSTInfo');
  const version = readInteger(c.next('version'), 'version');
  if (version !== 1n) throw new MalformedError(`malformed: unsupported TSTInfo version ${version}`);
  const policy = readOid(c.next('policy'), 'policy');
  const mi = sequence(c.next('messageImprint'), 'messageImprint');
  if (mi.length !== 2) throw new DerError('messageImprint: malformed');
  const hashAlgorithm = readAlgorithmIdentifier(mi[0], 'hashAlgorithm');
  const hashedMessage = readOctetString(mi[1], 'hashedMessage');
  const serial = readInteger(c.next('serialNumber'), 'serialNumber');
  const genTime = readGeneralizedTime(c.next('genTime'), 'genTime');
  const tst: TstInfo = { policy, hashAlgorithm, hashedMessage, serial, genTime, ordering: false };
  const accuracyEl = c.optional((e) => e.tag === TAG.SEQUENCE);
  if (accuracyEl) {
    // Accuracy ::= SEQUENCE { seconds INTEGER OPTIONAL, millis [0] IMPLICIT INTEGER OPTIONAL, micros [1] IMPLICIT INTEGER OPTIONAL }
    const a = new DerCursor(children(accuracyEl), 'accuracy');
    const seconds = a.optional((e) => e.tag === TAG.INTEGER);
    const millis = a.optional((e) => isContext(e, 0, false));
    const micros = a.optional((e) => isContext(e, 1, false));
    a.end();
    tst.accuracy = {
      ...(seconds ? { seconds: readSmallInteger(seconds, 'accuracy seconds') } : {}),
      ...(millis ? { millis: smallValue(millis, 'accuracy millis') } : {}),
      ...(micros ? { micros: smallValue(micros, 'accuracy micros') } : {}),
    };
  }
  const orderingEl = c.optional((e) => e.tag === TAG.BOOLEAN);
  if (orderingEl) tst.ordering = readBoolean(orderingEl, 'ordering');
  const nonceEl = c.optional((e) => e.tag === TAG.INTEGER);
  if (nonceEl) tst.nonce = readInteger(nonceEl, 'nonce');
  const tsaEl = c.optional((e) => isContext(e, 0, true));
  if (tsaEl) {
    const inner = children(tsaEl);
    if (inner.length !== 1) throw new DerError('tsa: malformed');
    tst.tsa = checkGeneralName(inner[0] as DerElement);
  }
  c.optional((e) => isContext(e, 1, true)); // extensions: not used
  c.end();
  return tst;
}

function smallValue(el: DerElement, what: string): number {
  const n = integerValue(el.value, what);
  if (n < 0n || n > 0x7fffffffn) throw new DerError(`${what}: out of range`);
  return Number(n);
}

/** GeneralName (RFC 5280 §4.2.1.6): context tags 0–8; directoryName [4] holds a Name. */
function checkGeneralName(el: DerElement): DerElement {
  if (el.cls !== CLASS.context || el.tagNumber > 8) throw new DerError('GeneralName: unexpected tag');
  if (el.tagNumber === 4) {
    const inner = children(el);
    if (inner.length !== 1) throw new DerError('directoryName: malformed');
    expectTag(inner[0], TAG.SEQUENCE, 'directoryName');
  }
  return el;
}

/** The Name DER of a directoryName GeneralName, or undefined for other choices. */
function directoryName(el: DerElement): Uint8Array | undefined {
  if (!isContext(el, 4, true)) return undefined;
  return children(el)[0]?.der;
}

function summarizeTst(tst: TstInfo): TimestampSummary {
  const alg = tst.hashAlgorithm.oid;
  const summary: TimestampSummary = {
    genTime: tst.genTime,
    serial: tst.serial.toString(10),
    serialHex: tst.serial.toString(16),
    policy: tst.policy,
    ordering: tst.ordering,
    hashAlgorithm: hashByOid(alg)?.name ?? alg,
    imprintHex: toHex(tst.hashedMessage),
  };
  if (tst.nonce !== undefined) summary.nonce = tst.nonce;
  if (tst.tsa) summary.tsaName = generalNameToString(tst.tsa);
  if (tst.accuracy) summary.accuracy = { ...tst.accuracy };
  return summary;
}

// rfc822Name [1], dNSName [2] and uniformResourceIdentifier [6] are IA5Strings.
const TEXT_GENERAL_NAMES: ReadonlySet<number> = new Set([1, 2, 6]);

function generalNameToString(name: DerElement): string {
  const dn = directoryName(name);
  if (dn) return `DirName:${nameToString(dn)}`;
  if (!name.constructed && TEXT_GENERAL_NAMES.has(name.tagNumber)) return Buffer.from(name.value).toString('latin1');
  return `GeneralName[${name.tagNumber}]`;
}

/**
 * Decodes a DER TimeStampResp for display, without verifying anything.
 * @throws Error when it is malformed or carries no token (e.g. a rejection).
 */
export function parseTimestampResponse(responseDer: Uint8Array): TimestampSummary & { pkiStatus: PkiStatusSummary } {
  const decoded = decodeResponse(responseDer);
  if (!decoded.token) throw new MalformedError(`the response carries no token (status ${decoded.pkiStatus.name})`);
  return { ...summarizeTst(decoded.token.tstInfo), pkiStatus: decoded.pkiStatus };
}

/**
 * Decodes a bare DER TimeStampToken (CMS ContentInfo) for display, without verifying anything.
 * @throws Error when it is malformed.
 */
export function parseTimestampToken(tokenDer: Uint8Array): TimestampSummary {
  return summarizeTst(decodeToken(tokenDer).tstInfo);
}

/**
 * The DER TimeStampToken inside a DER TimeStampResp (what `openssl ts -reply -token_out` gives).
 * @throws Error when it is malformed or carries no token.
 */
export function extractTimestampToken(responseDer: Uint8Array): Uint8Array {
  const decoded = decodeResponse(responseDer);
  if (!decoded.token) throw new MalformedError(`the response carries no token (status ${decoded.pkiStatus.name})`);
  return decoded.token.tokenDer;
}

/**
 * The certificate that signed a DER TimeStampToken, found as the verifier finds it (the
 * SignerInfo's sid among the certificates the token carries, RFC 5652 §5.3): its SHA-256 (hex, of
 * the DER) and notAfter. Decodes only, verifies nothing (the token was checked when it was made);
 * undefined when the token does not carry its signer's certificate (RFC 3161 certReq false).
 * @throws Error when the token is malformed.
 */
export function timestampSigner(tokenDer: Uint8Array): { sha256: string; notAfter: Date } | undefined {
  const token = decodeToken(tokenDer);
  const signerInfo = token.signerInfos[0];
  const signer = signerInfo ? findSigner(signerInfo, token.certificates) : undefined;
  return signer ? { sha256: toHex(digest('SHA-256', signer.der)), notAfter: signer.notAfter } : undefined;
}

// ---------------------------------------------------------------------------------------------
// Verification

/**
 * Verifies a DER TimeStampResp (RFC 3161 §2.4.2) against the expected imprint, nonce and roots.
 * Never throws: a malformed or failing response gives `ok: false` and the reasons per check.
 */
export async function verifyTimestampResponse(responseDer: Uint8Array, options: VerifyTimestampOptions): Promise<TimestampVerification> {
  try {
    const decoded = decodeResponse(responseDer);
    const s = decoded.pkiStatus;
    const detail = [s.failInfo.length ? `failInfo ${s.failInfo.join(',')}` : '', s.statusStrings.join('; ')].filter(Boolean).join(', ');
    const granted = s.status === 0 || s.status === 1;
    let status = granted ? pass(`status ${s.name}`) : fail(`status ${s.name}${detail ? ` (${detail})` : ''}`);
    if (!decoded.token) {
      if (granted) status = fail(`status ${s.name} but the response carries no token`);
      const result = emptyResult(status, 'not checked: the response carries no token');
      result.pkiStatus = s;
      return result;
    }
    const result = verifyDecodedToken(decoded.token, status, options);
    result.pkiStatus = s;
    return result;
  } catch (err) {
    return failureResult(err);
  }
}

/**
 * Verifies a bare DER TimeStampToken (a CMS ContentInfo, as embedded in a TimeStampResp or in
 * other formats); like {@link verifyTimestampResponse} with the status check skipped.
 */
export async function verifyTimestampToken(tokenDer: Uint8Array, options: VerifyTimestampOptions): Promise<TimestampVerification> {
  try {
    const token = decodeToken(tokenDer);
    return verifyDecodedToken(token, skipped('bare token: no PKIStatusInfo'), options);
  } catch (err) {
    return failureResult(err);
  }
}

function emptyResult(status: CheckOutcome, why: string): TimestampVerification {
  return {
    ok: false,
    checks: {
      status,
      imprint: skipped(why),
      nonce: skipped(why),
      policy: skipped(why),
      signature: skipped(why),
      essCertIdV2: skipped(why),
      eku: skipped(why),
      tsaName: skipped(why),
      chain: skipped(why),
    },
  };
}

function failureResult(err: unknown): TimestampVerification {
  const reason = err instanceof MalformedError ? err.message : `malformed: ${err instanceof Error ? err.message : String(err)}`;
  const result = emptyResult(fail(reason), 'not checked: the input is malformed');
  result.malformed = reason;
  return result;
}

function verifyDecodedToken(token: DecodedToken, status: CheckOutcome, options: VerifyTimestampOptions): TimestampVerification {
  const { tstInfo, signerInfos } = token;
  const summary = summarizeTst(tstInfo);

  const checks: TimestampChecks = {
    status,
    imprint: checkImprint(tstInfo, options),
    nonce: checkNonce(tstInfo, options.nonce),
    policy: checkPolicy(tstInfo, options.policy),
    signature: skipped(''),
    essCertIdV2: skipped(''),
    eku: skipped(''),
    tsaName: skipped(''),
    chain: skipped(''),
  };

  // Certificates: those in the token, the caller's untrusted ones, and the roots.
  const embedded = token.certificates;
  let roots: Certificate[] = [];
  let untrusted: Certificate[] = [];
  let certProblem: string | undefined;
  try {
    roots = options.roots.flatMap((pem) => certificatesFromPem(pem));
    untrusted = (options.untrusted ?? []).flatMap((pem) => certificatesFromPem(pem));
  } catch (err) {
    certProblem = `the given certificates cannot be parsed: ${err instanceof Error ? err.message : String(err)}`;
  }

  const signerInfo = signerInfos[0];
  const signer = signerInfo ? findSigner(signerInfo, [...embedded, ...untrusted, ...roots]) : undefined;
  const result: TimestampVerification = { ok: false, ...summary, checks, token: token.tokenDer };

  if (!signerInfo || signerInfos.length !== 1) {
    // RFC 3161 §2.4.2: the token MUST NOT contain any signature other than the TSA's.
    const why = `the token has ${signerInfos.length} signers, RFC 3161 requires exactly one`;
    checks.signature = fail(why);
    checks.essCertIdV2 = skipped(why);
    checks.eku = skipped(why);
    checks.tsaName = skipped(why);
    checks.chain = skipped(why);
  } else if (!signer) {
    const why = 'the signer certificate is neither in the token nor among the given certificates';
    checks.signature = fail(why);
    checks.essCertIdV2 = fail(why);
    checks.eku = fail(why);
    checks.tsaName = skipped(why);
    checks.chain = fail(certProblem ?? why);
  } else {
    result.tsaCertificatePem = certificatePem(signer);
    checks.signature = checkSignature(signerInfo, signer, token.eContent);
    checks.essCertIdV2 = checkEssCertId(signerInfo, signer);
    const usage = timeStampingUsageProblem(signer);
    checks.eku = usage ? fail(usage) : pass('ExtendedKeyUsage is id-kp-timeStamping only and critical');
    checks.tsaName = checkTsaName(tstInfo, signer);
    if (certProblem) {
      checks.chain = fail(certProblem);
    } else {
      const chain = validatePath(signer, {
        anchors: roots,
        intermediates: [...embedded, ...untrusted, ...roots],
        checkDate: options.now ?? tstInfo.genTime,
      });
      // Every certificate the token carries must be authentic too, not only those of the path: a
      // damaged or foreign certificate in the token is reported rather than passed over.
      const stray = chain.ok ? unvouchedCertificates(embedded, [...chain.path, ...roots]) : [];
      if (!chain.ok) {
        checks.chain = fail(`the signer certificate does not chain to a given root: ${chain.reason}`);
      } else if (stray.length > 0) {
        checks.chain = fail(
          `the token carries ${stray.length === 1 ? 'a certificate' : 'certificates'} whose signature does not verify up to a given root: ${stray.map(describeCertificate).join(', ')}`,
        );
      } else {
        const retired = retiredOnPath(chain.path, options.retired ?? [], tstInfo.genTime);
        if (retired) {
          checks.chain = fail(retired);
        } else {
          checks.chain = pass(chain.reason);
          result.chainPem = chain.path.map(certificatePem);
          result.chainValidUntil = new Date(Math.min(...chain.path.map((c) => c.notAfter.getTime())));
        }
      }
    }
  }

  const all = Object.values(checks) as CheckOutcome[];
  const required = [checks.imprint, checks.signature, checks.essCertIdV2, checks.eku, checks.chain];
  result.ok = all.every((c) => c.result !== 'fail') && required.every((c) => c.result === 'pass');
  return result;
}

/** Why the path holds a certificate retired before `genTime`, or undefined (history.ts). */
function retiredOnPath(path: Certificate[], retired: readonly { sha256: string; retiredAt: Date }[], genTime: Date): string | undefined {
  if (retired.length === 0) return undefined;
  for (const cert of path) {
    const sha = toHex(digest('SHA-256', cert.der));
    const r = retired.find((x) => x.sha256.toLowerCase() === sha);
    // The window rule of decisions.md "Key validity windows": t < retired_at.
    if (r && genTime.getTime() >= r.retiredAt.getTime()) {
      return `${describeCertificate(cert)} was retired on ${r.retiredAt.toISOString()}; the token is dated ${genTime.toISOString()}, after its retirement`;
    }
  }
  return undefined;
}

function checkImprint(tst: TstInfo, options: VerifyTimestampOptions): CheckOutcome {
  const alg = tst.hashAlgorithm;
  const hash = hashByOid(alg.oid);
  if (!hash) return fail(`unsupported imprint hash algorithm ${alg.oid}`);
  const accepted = options.hashAlgorithm ? [options.hashAlgorithm] : ACCEPTED_IMPRINT_HASHES;
  if (!accepted.includes(hash.name)) return fail(`imprint algorithm ${hash.name}, expected ${accepted.join(' or ')}`);
  // RFC 5754 §2: parameters of SHA-2 AlgorithmIdentifiers are absent or NULL.
  if (!absentOrNullParams(alg)) return fail(`imprint algorithm ${hash.name} has unexpected parameters`);
  const value = tst.hashedMessage;
  if (value.byteLength !== hash.length) return fail(`imprint is ${value.byteLength} bytes, ${hash.name} gives ${hash.length}`);
  if (!bytesEqual(value, options.imprint)) return fail(`imprint ${toHex(value)} differs from the expected ${toHex(options.imprint)}`);
  return pass(`${hash.name} imprint matches`);
}

function checkPolicy(tst: TstInfo, expected: string | undefined): CheckOutcome {
  if (expected === undefined) return skipped('no policy expected');
  // RFC 3161 §2.4.2: a requested policy must be the one the token was issued under.
  return tst.policy === expected ? pass(`policy ${tst.policy}`) : fail(`policy ${tst.policy}, expected ${expected}`);
}

function checkNonce(tst: TstInfo, expected: bigint | undefined): CheckOutcome {
  if (expected === undefined) return skipped('no nonce expected');
  // RFC 3161 §2.4.2: the nonce MUST be present and equal when the request had one.
  if (tst.nonce === undefined) return fail('the token has no nonce but the request had one');
  const got = tst.nonce;
  return got === expected ? pass('nonce matches') : fail(`nonce ${got.toString(16)} differs from the one sent (${expected.toString(16)})`);
}

/** RFC 5652 §5.3 SignerIdentifier: issuerAndSerialNumber or [0] subjectKeyIdentifier. */
export function findSigner(signerInfo: SignerInfo, candidates: Certificate[]): Certificate | undefined {
  const sid = signerInfo.sid;
  if ('issuer' in sid) {
    // The name is decoded once: the token supplies it and the candidates (RFC 5652 §5.1: unsigned).
    const issuedBy = issuerNameMatcher(sid.issuer);
    return candidates.find((c) => c.serial === sid.serial && issuedBy(c));
  }
  return candidates.find((c) => hasKeyIdentifier(c, sid.keyId));
}

export function singleAttributeValue(signerInfo: SignerInfo, type: string): { value?: DerElement; problem?: string } {
  const attrs = (signerInfo.signedAttrs?.attributes ?? []).filter((a) => a.type === type);
  if (attrs.length === 0) return {};
  // RFC 5652 §5.3 / §11: these attributes are single-valued and appear once.
  if (attrs.length > 1 || attrs[0]?.values.length !== 1) return { problem: `attribute ${type} must appear once with one value` };
  return { value: attrs[0].values[0] };
}

function checkSignature(signerInfo: SignerInfo, signer: Certificate, eContent: Uint8Array): CheckOutcome {
  // RFC 5652 §5.3: signed attributes are required when the content is not id-data.
  if (!signerInfo.signedAttrs || signerInfo.signedAttrs.attributes.length === 0) return fail('the SignerInfo has no signed attributes');
  const digestAlg = hashByOid(signerInfo.digestAlgorithm.oid);
  if (!digestAlg) return fail(`unsupported digest algorithm ${signerInfo.digestAlgorithm.oid}`);
  // RFC 9882 §3.3: with signed attributes, the digest must match the signature's strength: for
  // ML-DSA-65 (category 3) SHA-384 or SHA-512, never SHA-256 or SHA-1.
  if (signerInfo.signatureAlgorithm.oid === ID_ML_DSA_65 && digestAlg.name !== 'SHA-384' && digestAlg.name !== 'SHA-512') {
    return fail(`digest ${digestAlg.name} is too weak for ML-DSA-65 (RFC 9882 §3.3: SHA-384 or SHA-512)`);
  }

  // RFC 5652 §11.1: content-type attribute equal to the eContentType.
  const ct = singleAttributeValue(signerInfo, OID.contentType);
  if (ct.problem) return fail(ct.problem);
  let contentType: string | undefined;
  try {
    contentType = ct.value ? readOid(ct.value, 'content-type') : undefined;
  } catch {
    contentType = undefined;
  }
  if (contentType !== OID.ctTSTInfo) return fail('the content-type attribute is missing or is not id-ct-TSTInfo');
  // RFC 5652 §11.2: message-digest attribute = digest of the eContent octets.
  const md = singleAttributeValue(signerInfo, OID.messageDigest);
  if (md.problem) return fail(md.problem);
  if (md.value?.tag !== TAG.OCTET_STRING) return fail('the message-digest attribute is missing');
  if (!bytesEqual(md.value.value, digest(digestAlg.name, eContent))) {
    return fail('the message-digest attribute does not match the TSTInfo');
  }

  // RFC 5652 §5.4: the signature covers the DER of the signed attributes with a SET OF tag.
  try {
    const { ok, description } = verifySignature(
      signerInfo.signatureAlgorithm,
      signer,
      signerInfo.signedAttrs.signedBytes,
      signerInfo.signature,
      digestAlg.name,
    );
    return ok ? pass(`signature verified (${description})`) : fail('the signature does not verify with the signer certificate');
  } catch (err) {
    return fail(`the signature cannot be verified: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * RFC 5035 §5.4.1 / RFC 2634 §5.4: the first ESSCertID(v2) in the signing-certificate attribute
 * must identify the signer certificate by hash (and by issuer/serial when present).
 */
function checkEssCertId(signerInfo: SignerInfo, signer: Certificate): CheckOutcome {
  const v2 = singleAttributeValue(signerInfo, OID.signingCertificateV2);
  const v1 = singleAttributeValue(signerInfo, OID.signingCertificate);
  if (v2.problem) return fail(v2.problem);
  if (v1.problem) return fail(v1.problem);
  if (v2.value === undefined && v1.value === undefined) {
    return fail('no signingCertificateV2 (RFC 5035) nor signingCertificate (RFC 2634) attribute');
  }
  const reasons: string[] = [];
  for (const [value, isV2] of [
    [v2.value, true],
    [v1.value, false],
  ] as const) {
    if (value === undefined) continue;
    const label = isV2 ? 'ESSCertIDv2' : 'ESSCertID';
    let outcome: { hash: HashName } | { problem: string };
    try {
      outcome = matchEssCertId(value, isV2, signer);
    } catch (err) {
      outcome = { problem: `malformed signing-certificate attribute (${err instanceof Error ? err.message : String(err)})` };
    }
    if ('problem' in outcome) return fail(`${label}: ${outcome.problem}`);
    reasons.push(`${label} (${outcome.hash}) matches the signer certificate`);
  }
  return pass(reasons.join('; '));
}

/**
 * SigningCertificate(V2) ::= SEQUENCE { certs SEQUENCE OF ESSCertID(v2), policies OPTIONAL }
 * ESSCertIDv2 ::= SEQUENCE { hashAlgorithm DEFAULT id-sha256, certHash OCTET STRING, issuerSerial OPTIONAL }
 * ESSCertID   ::= SEQUENCE { certHash OCTET STRING (SHA-1), issuerSerial OPTIONAL }
 * The hash algorithm when the first one names the signer, else the problem.
 * @throws DerError when the attribute is malformed.
 */
export function matchEssCertId(value: DerElement, isV2: boolean, signer: Certificate): { hash: HashName } | { problem: string } {
  const certs = sequence(value, 'SigningCertificate')[0];
  const first = sequence(certs, 'certs')[0];
  const c = new DerCursor(sequence(first, 'ESSCertID'), 'ESSCertID');
  let hash = isV2 ? hashByOid(OID.sha256) : hashByOid(OID.sha1);
  if (isV2) {
    const algEl = c.optional((e) => e.tag === TAG.SEQUENCE);
    if (algEl) {
      const alg = readAlgorithmIdentifier(algEl, 'hashAlgorithm');
      hash = hashByOid(alg.oid);
      if (!hash) return { problem: `unsupported hash algorithm ${alg.oid}` };
    }
  }
  const certHash = c.optional((e) => e.tag === TAG.OCTET_STRING);
  if (!hash || !certHash) return { problem: 'malformed certHash' };
  if (!bytesEqual(certHash.value, digest(hash.name, signer.der))) {
    return { problem: `the ${hash.name} certificate hash does not match the signer certificate` };
  }
  const issuerSerial = c.optional(() => true);
  if (issuerSerial !== undefined) {
    const problem = issuerSerialProblem(issuerSerial, signer);
    if (problem) return { problem };
  }
  return { hash: hash.name };
}

/** IssuerSerial ::= SEQUENCE { issuer GeneralNames, serialNumber CertificateSerialNumber } */
function issuerSerialProblem(value: DerElement, signer: Certificate): string | undefined {
  if (value.tag !== TAG.SEQUENCE) return 'malformed issuerSerial';
  const [names, serial] = children(value);
  if (names?.tag !== TAG.SEQUENCE || serial?.tag !== TAG.INTEGER) return 'malformed issuerSerial';
  if (readInteger(serial, 'serialNumber') !== signer.serial) return 'issuerSerial names another serial number';
  const dirNames = children(names)
    .map((n) => directoryName(checkGeneralName(n)))
    .filter((n): n is Uint8Array => n !== undefined);
  if (!dirNames.some((n) => issuerNameMatcher(n)(signer))) return 'issuerSerial names another issuer';
  return undefined;
}

function checkTsaName(tst: TstInfo, signer: Certificate): CheckOutcome {
  const name = tst.tsa;
  if (!name) return skipped('the token has no tsa name');
  const dn = directoryName(name);
  if (dn && namesEqual(dn, signer.subject)) return pass('tsa name is the signer subject');
  // RFC 3161 §2.4.2: or one of the subjectAltNames of the signer certificate.
  let altNames: DerElement[] = [];
  try {
    altNames = subjectAltNames(signer);
  } catch {
    altNames = [];
  }
  if (altNames.some((n) => bytesEqual(n.der, name.der))) return pass('tsa name is a subjectAltName of the signer');
  return fail(`tsa name ${generalNameToString(name)} is not a name of the signer certificate`);
}
