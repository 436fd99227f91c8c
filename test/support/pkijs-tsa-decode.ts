/**
 * The decoding half of the pkijs oracle (pkijs-tsa-verify.ts): a TimeStampResp or a bare token
 * read with pkijs, and the summaries the verifier reports. Imports nothing of ours. Test-only.
 */
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { bitsOf } from './pkijs-chain.js';
import { OID, hashByOid, nameToString, parseAsn1, rememberCertificateDer, toHex } from './pkijs-common.js';

// The summaries' shape is the production verifier's (lib/crypto/tsa/verify.ts), written out here.
export interface TimestampSummary {
  genTime: Date;
  serial: string;
  serialHex: string;
  policy: string;
  tsaName?: string;
  accuracy?: { seconds?: number; millis?: number; micros?: number };
  ordering: boolean;
  nonce?: bigint;
  hashAlgorithm: string;
  imprintHex: string;
}

export interface PkiStatusSummary {
  status: number;
  name: string;
  statusStrings: string[];
  failInfo: string[];
}

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


export class MalformedError extends Error {}

// ---------------------------------------------------------------------------------------------
// Decoding

export interface DecodedToken {
  tokenDer: Uint8Array;
  signedData: pkijs.SignedData;
  tstInfo: pkijs.TSTInfo;
  /** The eContent octets: what messageDigest is computed over (RFC 5652 §5.4). */
  eContent: Uint8Array;
}

interface DecodedResponse {
  pkiStatus: PkiStatusSummary;
  token?: DecodedToken;
}

export function decodeResponse(der: Uint8Array): DecodedResponse {
  let asn: asn1js.AsnType;
  let resp: pkijs.TimeStampResp;
  try {
    asn = parseAsn1(der, 'TimeStampResp');
    resp = new pkijs.TimeStampResp({ schema: asn });
  } catch {
    throw new MalformedError('malformed: not a DER TimeStampResp (RFC 3161 §2.4.2)');
  }
  const pkiStatus = summarizeStatus(resp.status);
  if (!resp.timeStampToken) return { pkiStatus };
  // The token's own bytes, as received (second element of the TimeStampResp SEQUENCE).
  const tokenAsn = (asn as asn1js.Sequence).valueBlock.value[1];
  const tokenDer = tokenAsn ? new Uint8Array(tokenAsn.valueBeforeDecodeView) : new Uint8Array(resp.timeStampToken.toSchema().toBER());
  return { pkiStatus, token: decodeToken(tokenDer) };
}

export function decodeToken(tokenDer: Uint8Array): DecodedToken {
  let contentInfo: pkijs.ContentInfo;
  try {
    contentInfo = new pkijs.ContentInfo({ schema: parseAsn1(tokenDer, 'TimeStampToken') });
  } catch {
    throw new MalformedError('malformed: the time-stamp token is not a DER ContentInfo (RFC 5652 §3)');
  }
  if (contentInfo.contentType !== OID.signedData) {
    throw new MalformedError('malformed: the time-stamp token is not CMS SignedData (RFC 3161 §2.4.2)');
  }
  let signedData: pkijs.SignedData;
  try {
    signedData = new pkijs.SignedData({ schema: contentInfo.content });
  } catch {
    throw new MalformedError('malformed: the SignedData cannot be decoded');
  }
  rememberEmbeddedCertificateDer(contentInfo.content, signedData);
  const encap = signedData.encapContentInfo;
  if (encap.eContentType !== OID.ctTSTInfo || !encap.eContent) {
    throw new MalformedError('malformed: the SignedData does not encapsulate a TSTInfo (id-ct-TSTInfo)');
  }
  const eContent = new Uint8Array(encap.eContent.getValue());
  let tstInfo: pkijs.TSTInfo;
  try {
    tstInfo = new pkijs.TSTInfo({ schema: parseAsn1(eContent, 'TSTInfo') });
  } catch {
    throw new MalformedError('malformed: the TSTInfo cannot be decoded');
  }
  if (tstInfo.version !== 1) throw new MalformedError(`malformed: unsupported TSTInfo version ${tstInfo.version}`);
  return { tokenDer, signedData, tstInfo, eContent };
}

/**
 * Records the received bytes of each certificate in SignedData.certificates ([0] IMPLICIT
 * CertificateSet, RFC 5652 §5.1), so that ESSCertID hashes use exactly those bytes.
 */
function rememberEmbeddedCertificateDer(signedDataAsn: unknown, signedData: pkijs.SignedData): void {
  if (!(signedDataAsn instanceof asn1js.Sequence) || !signedData.certificates) return;
  const set = signedDataAsn.valueBlock.value.find((el) => el.idBlock.tagClass === 3 && el.idBlock.tagNumber === 0);
  const elements = (set as asn1js.Constructed | undefined)?.valueBlock.value ?? [];
  if (elements.length !== signedData.certificates.length) return;
  signedData.certificates.forEach((cert, i) => {
    const el = elements[i];
    if (cert instanceof pkijs.Certificate && el) rememberCertificateDer(cert, new Uint8Array(el.valueBeforeDecodeView));
  });
}

function summarizeStatus(status: pkijs.PKIStatusInfo): PkiStatusSummary {
  const failInfo = status.failInfo ? bitsOf(status.failInfo).map((b) => FAILURE_NAMES[b] ?? `bit${b}`) : [];
  const statusStrings = (status.statusStrings ?? []).map((s) => String((s.valueBlock as { value?: unknown }).value ?? ''));
  return { status: status.status, name: STATUS_NAMES[status.status] ?? `status${status.status}`, statusStrings, failInfo };
}

export function summarizeTst(tst: pkijs.TSTInfo): TimestampSummary {
  const serial = tst.serialNumber.toBigInt();
  const alg = tst.messageImprint.hashAlgorithm.algorithmId;
  const summary: TimestampSummary = {
    genTime: tst.genTime,
    serial: serial.toString(10),
    serialHex: serial.toString(16),
    policy: tst.policy,
    ordering: tst.ordering ?? false,
    hashAlgorithm: hashByOid(alg)?.name ?? alg,
    imprintHex: toHex(tst.messageImprint.hashedMessage.valueBlock.valueHexView),
  };
  if (tst.nonce) summary.nonce = tst.nonce.toBigInt();
  if (tst.tsa) summary.tsaName = generalNameToString(tst.tsa);
  if (tst.accuracy) {
    const a = tst.accuracy;
    summary.accuracy = {
      ...(a.seconds !== undefined ? { seconds: a.seconds } : {}),
      ...(a.millis !== undefined ? { millis: a.millis } : {}),
      ...(a.micros !== undefined ? { micros: a.micros } : {}),
    };
  }
  return summary;
}

export function generalNameToString(name: pkijs.GeneralName): string {
  if (name.type === 4 && name.value instanceof pkijs.RelativeDistinguishedNames) return `DirName:${nameToString(name.value)}`;
  if (typeof name.value === 'string') return name.value;
  return `GeneralName[${name.type}]`;
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
