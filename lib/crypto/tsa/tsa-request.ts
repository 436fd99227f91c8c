/**
 * The RFC 3161 protocol messages as the embedded TSA meets them: reading a TimeStampReq (§2.4.1)
 * with the strict DER reader, and writing a rejection TimeStampResp (§2.4.2) with the DER writer.
 * Split from embedded.ts by concern.
 */
import {
  DerCursor,
  TAG,
  absentOrNullParams,
  checkStructure,
  children,
  decodeDer,
  isContext,
  readAlgorithmIdentifier,
  readBoolean,
  readInteger,
  readOctetString,
  readOid,
  sequence as readSequence,
} from './der.js';
import { integer, namedBitString, sequence, utf8String } from './der-writer.js';

/** PKIStatus rejection (RFC 3161 §2.4.2). */
const STATUS_REJECTION = 2;

/** PKIFailureInfo bit numbers (RFC 3161 §2.4.2). */
export const PkiFailureInfo = {
  badAlg: 0,
  badRequest: 2,
  badDataFormat: 5,
  timeNotAvailable: 14,
  unacceptedPolicy: 15,
  unacceptedExtension: 16,
  addInfoNotAvailable: 17,
  systemFailure: 25,
} as const;

/** The name of a PKIFailureInfo bit. */
export type PkiFailure = keyof typeof PkiFailureInfo;

/** The fields of a TimeStampReq that the TSA acts on (RFC 3161 §2.4.1). */
export interface TimeStampRequest {
  version: bigint;
  hashAlgorithm: { oid: string; params: boolean; nullOrAbsent: boolean };
  hashedMessage: Uint8Array;
  reqPolicy?: string;
  nonce?: bigint;
  certReq: boolean;
  extensionCount: number;
}

/**
 * Reads a TimeStampReq (RFC 3161 §2.4.1) with the strict DER reader:
 *
 *   TimeStampReq ::= SEQUENCE { version INTEGER { v1(1) }, messageImprint MessageImprint,
 *     reqPolicy TSAPolicyId OPTIONAL, nonce INTEGER OPTIONAL, certReq BOOLEAN DEFAULT FALSE,
 *     extensions [0] IMPLICIT Extensions OPTIONAL }
 *   MessageImprint ::= SEQUENCE { hashAlgorithm AlgorithmIdentifier, hashedMessage OCTET STRING }
 *
 * Only the shape is checked here; what the values may be is the caller's (badRequest, badAlg, …).
 * @throws DerError when the bytes are not one DER TimeStampReq.
 */
export function parseTimeStampRequest(der: Uint8Array): TimeStampRequest {
  const top = decodeDer(der, 'TimeStampReq');
  checkStructure(top);
  const c = new DerCursor(readSequence(top, 'TimeStampReq'), 'TimeStampReq');
  const version = readInteger(c.next('version'), 'version');
  const imprint = new DerCursor(readSequence(c.next('messageImprint'), 'messageImprint'), 'messageImprint');
  const alg = readAlgorithmIdentifier(imprint.next('hashAlgorithm'), 'hashAlgorithm');
  const hashedMessage = readOctetString(imprint.next('hashedMessage'), 'hashedMessage');
  imprint.end();
  const policyEl = c.optional((el) => el.tag === TAG.OID);
  const nonceEl = c.optional((el) => el.tag === TAG.INTEGER);
  const certReqEl = c.optional((el) => el.tag === TAG.BOOLEAN);
  const extensionsEl = c.optional((el) => isContext(el, 0, true));
  c.end();
  // Extensions ::= SEQUENCE SIZE (1..MAX) OF Extension; Extension ::= SEQUENCE { extnID OID,
  // critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING } (RFC 5280 §4.1). Read so that a
  // malformed one is badDataFormat; any well-formed one is refused by the caller.
  let extensionCount = 0;
  if (extensionsEl) {
    for (const extEl of children(extensionsEl)) {
      const e = new DerCursor(readSequence(extEl, 'Extension'), 'Extension');
      readOid(e.next('extnID'), 'extnID');
      const critical = e.optional((el) => el.tag === TAG.BOOLEAN);
      if (critical) readBoolean(critical, 'critical');
      readOctetString(e.next('extnValue'), 'extnValue');
      e.end();
      extensionCount++;
    }
  }
  return {
    version,
    hashAlgorithm: { oid: alg.oid, params: alg.params !== undefined, nullOrAbsent: absentOrNullParams(alg) },
    // A copy: the reader's values are views into the caller's buffer.
    hashedMessage: Uint8Array.from(hashedMessage),
    ...(policyEl ? { reqPolicy: readOid(policyEl, 'reqPolicy') } : {}),
    ...(nonceEl ? { nonce: readInteger(nonceEl, 'nonce') } : {}),
    certReq: certReqEl ? readBoolean(certReqEl, 'certReq') : false,
    extensionCount,
  };
}

/**
 * A TimeStampResp with status rejection, one PKIFailureInfo bit and a text (RFC 3161 §2.4.2):
 * PKIStatusInfo ::= SEQUENCE { status, statusString PKIFreeText OPTIONAL, failInfo OPTIONAL },
 * PKIFreeText ::= SEQUENCE SIZE (1..MAX) OF UTF8String (RFC 4210 §5.1.1).
 */
export function rejection(failBit: number, text: string): Uint8Array {
  return sequence(sequence(integer(STATUS_REJECTION), sequence(utf8String(text)), namedBitString([failBit])));
}
