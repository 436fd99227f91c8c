/**
 * Decoding of RFC 3161 time-stamp responses and tokens with the strict DER reader (der.ts): the
 * TimeStampResp and its PKIStatusInfo (RFC 3161 §2.4.2), the CMS ContentInfo and SignedData
 * (RFC 5652 §3, §5.1), SignerInfo (§5.3) and TSTInfo (RFC 3161 §2.4.2). Nothing here verifies:
 * verify.ts checks what this decodes. Split from verify.ts by concern.
 */
import {
  type AlgorithmIdentifier,
  type DerElement,
  CLASS,
  DerCursor,
  DerError,
  TAG,
  absentOrNullParams,
  bitsSet,
  checkStructure,
  children,
  decodeDer,
  expectTag,
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
} from './der.js';
import { OID, hashByOid, toHex } from './identifiers.js';
import type { PkiStatusSummary, TimestampSummary } from './verify.js';
import { type Certificate, certificateFromDer, nameToString } from './x509-verify.js';

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


/** A token or response that is not what RFC 3161 and RFC 5652 say; its message starts with `malformed`. */
export class MalformedError extends Error {}


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
export interface TstInfo {
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

export interface DecodedToken {
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
export function decodeResponse(der: Uint8Array): DecodedResponse {
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
export function decodeToken(tokenDer: Uint8Array): DecodedToken {
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
export function checkGeneralName(el: DerElement): DerElement {
  if (el.cls !== CLASS.context || el.tagNumber > 8) throw new DerError('GeneralName: unexpected tag');
  if (el.tagNumber === 4) {
    const inner = children(el);
    if (inner.length !== 1) throw new DerError('directoryName: malformed');
    expectTag(inner[0], TAG.SEQUENCE, 'directoryName');
  }
  return el;
}

/** The Name DER of a directoryName GeneralName, or undefined for other choices. */
export function directoryName(el: DerElement): Uint8Array | undefined {
  if (!isContext(el, 4, true)) return undefined;
  return children(el)[0]?.der;
}

export function summarizeTst(tst: TstInfo): TimestampSummary {
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

export function generalNameToString(name: DerElement): string {
  const dn = directoryName(name);
  if (dn) return `DirName:${nameToString(dn)}`;
  if (!name.constructed && TEXT_GENERAL_NAMES.has(name.tagNumber)) return Buffer.from(name.value).toString('latin1');
  return `GeneralName[${name.tagNumber}]`;
}
