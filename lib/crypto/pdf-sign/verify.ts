/**
 * Verification of the CMS of a PAdES baseline signature (ETSI EN 319 142-1, SubFilter
 * ETSI.CAdES.detached), the counterpart of cades.ts: a detached SignedData (RFC 5652) over the
 * PDF's byte ranges whose one SignerInfo carries content-type id-data, message-digest and
 * signing-certificate-v2 (RFC 5035) as signed attributes and, for PAdES B-T, the RFC 3161
 * signature timestamp over the signature value (id-aa-signatureTimeStampToken, RFC 3161
 * Appendix A) as an unsigned attribute.
 *
 * Read with the strict DER reader and checked with the X.509 code of the RFC 3161 verifier
 * (tsa/der.ts, tsa/x509-verify.ts; the signature by node:crypto), the token by that verifier
 * itself (tsa/verify.ts). Which certificate may sign, and when, is the caller's: this module
 * says who signed, whether the signature covers the bytes, and when the token dates it.
 */
import {
  type DerElement,
  DerCursor,
  TAG,
  checkStructure,
  children,
  decodeDer,
  isContext,
  readAlgorithmIdentifier,
  readInteger,
  readOid,
  sequence,
} from '../tsa/der.js';
import { OID, bytesEqual, digest, hashByOid, toHex } from '../tsa/identifiers.js';
import type { TsaRetirement } from '../tsa/history.js';
import { type Attribute, type SignerInfo, decodeSignerInfo } from '../tsa/token.js';
import { type TimestampVerification, verifyTimestampToken } from '../tsa/verify.js';
import { findSigner, matchEssCertId, singleAttributeValue } from '../tsa/signer.js';
import { type Certificate, certificateFromDer } from '../tsa/x509-verify.js';
import { verifySignature } from '../tsa/signature.js';
import { OID_SIGNATURE_TIMESTAMP_TOKEN } from './cades.js';

/** RFC 5652 §4: id-data, the type of the detached content. */
const OID_DATA = '1.2.840.113549.1.7.1';

/** One check: whether it holds and why, in words. */
export interface CmsCheck {
  ok: boolean;
  reason: string;
}

export interface PadesVerification {
  /**
   * The signature itself: one signer, content-type id-data, message-digest = the digest of the
   * signed bytes, ESSCertIDv2 naming the signer's certificate, and the signature over the signed
   * attributes by that certificate's key.
   */
  signature: CmsCheck;
  /** The signer's certificate, as the CMS carries it (undefined: not found or not readable). */
  signer?: Certificate;
  /** Every certificate the CMS carries (the signer's issuer among them, for a path). */
  certificates: Certificate[];
  /** The signature timestamp, verified against the given roots; undefined: the signature has none. */
  timestamp?: TimestampVerification;
}

export interface VerifyPadesOptions {
  /** TSA roots (PEM) the signature timestamp must chain to. */
  tsaRoots: string[];
  /** Retired TSA certificates: a token dated after the retirement of one on its path fails. */
  tsaRetirements?: readonly TsaRetirement[];
}

/** A SignerInfo as RFC 3161 tokens have it (tsa/verify.ts), its signed attributes required, with its unsigned attributes (the signature timestamp is one). */
type PadesSignerInfo = SignerInfo & { signedAttrs: NonNullable<SignerInfo['signedAttrs']>; unsignedAttrs: Attribute[] };

const no = (reason: string): CmsCheck => ({ ok: false, reason });

/**
 * Verifies the DER ContentInfo of a PAdES signature over `signedBytes` (the PDF's byte ranges
 * concatenated). Never throws: a malformed CMS is a failed signature check.
 */
export async function verifyPadesSignature(cmsDer: Uint8Array, signedBytes: Uint8Array, options: VerifyPadesOptions): Promise<PadesVerification> {
  let certificates: Certificate[];
  let signerInfos: PadesSignerInfo[];
  try {
    ({ certificates, signerInfos } = decodeSignedData(cmsDer));
  } catch (err) {
    return { signature: no(`malformed CMS: ${err instanceof Error ? err.message : String(err)}`), certificates: [] };
  }
  const [info] = signerInfos;
  if (!info || signerInfos.length !== 1) return { signature: no(`the CMS has ${signerInfos.length} signers, a PAdES signature has one`), certificates };
  const signer = findSigner(info, certificates);
  if (!signer) return { signature: no("the signer's certificate is not in the CMS"), certificates };
  const token = single(info.unsignedAttrs, OID_SIGNATURE_TIMESTAMP_TOKEN);
  const result: PadesVerification = { signature: checkSignature(info, signer, signedBytes), signer, certificates };
  if (token.problem) result.signature = no(`signature timestamp: ${token.problem}`);
  else if (token.value) {
    // RFC 3161 Appendix A: the token's imprint is the hash of the signature value.
    result.timestamp = await verifyTimestampToken(Uint8Array.from(token.value.der), {
      imprint: digest('SHA-256', info.signature),
      hashAlgorithm: 'SHA-256',
      roots: options.tsaRoots,
      ...(options.tsaRetirements ? { retired: options.tsaRetirements } : {}),
    });
  }
  return result;
}

/** ContentInfo { id-signedData, [0] SignedData } with detached id-data content (RFC 5652 §3, §5.1, §5.2). */
function decodeSignedData(der: Uint8Array): { certificates: Certificate[]; signerInfos: PadesSignerInfo[] } {
  const top = decodeDer(der, 'ContentInfo');
  checkStructure(top);
  const ci = new DerCursor(sequence(top, 'ContentInfo'), 'ContentInfo');
  if (readOid(ci.next('contentType'), 'contentType') !== OID.signedData) throw new Error('not CMS SignedData');
  const content = ci.next('content');
  ci.end();
  if (!isContext(content, 0, true)) throw new Error('content is not [0] EXPLICIT');
  const [signedData] = children(content);
  const c = new DerCursor(sequence(signedData, 'SignedData'), 'SignedData');
  readInteger(c.next('version'), 'version');
  const digestAlgorithms = sequence(c.next('digestAlgorithms'), 'digestAlgorithms', TAG.SET).map((a) => readAlgorithmIdentifier(a, 'digestAlgorithm').oid);
  const encap = new DerCursor(sequence(c.next('encapContentInfo'), 'encapContentInfo'), 'encapContentInfo');
  if (readOid(encap.next('eContentType'), 'eContentType') !== OID_DATA) throw new Error('the content type is not id-data');
  // ETSI EN 319 142-1 §6.2.1: the PDF's bytes are the external content; nothing is encapsulated.
  if (encap.optional(() => true)) throw new Error('the content is encapsulated, a PAdES signature is detached');
  encap.end();
  const certsEl = c.optional((el) => isContext(el, 0, true));
  c.optional((el) => isContext(el, 1, true)); // crls: not used
  const signerInfosEl = c.next('signerInfos');
  c.end();
  const certificates = (certsEl ? children(certsEl) : []).filter((el) => el.tag === TAG.SEQUENCE).map((el) => certificateFromDer(el.der));
  const signerInfos = sequence(signerInfosEl, 'signerInfos', TAG.SET).map((el): PadesSignerInfo => {
    const info = decodeSignerInfo(el);
    // ETSI EN 319 122-1 §5.2: signed attributes required.
    if (!info.signedAttrs) throw new Error('no signed attributes (ETSI EN 319 122-1 §5.2 requires them)');
    // unsignedAttrs [1] IMPLICIT, the SignerInfo's last field (RFC 5652 §5.3).
    const last = children(el).at(-1);
    return { ...info, signedAttrs: info.signedAttrs, unsignedAttrs: last && isContext(last, 1, true) ? attributes(last) : [] };
  });
  for (const info of signerInfos) {
    if (!digestAlgorithms.includes(info.digestAlgorithm.oid)) throw new Error("the signer's digest algorithm is not among the SignedData digestAlgorithms (RFC 5652 §5.1)");
  }
  return { certificates, signerInfos };
}

function attributes(el: DerElement): Attribute[] {
  return children(el).map((a) => {
    const parts = sequence(a, 'Attribute');
    if (parts.length !== 2) throw new Error('Attribute: malformed');
    return { type: readOid(parts[0], 'attrType'), values: sequence(parts[1], 'attrValues', TAG.SET) };
  });
}

/** The one value of an attribute that must appear at most once with one value (RFC 5652 §11). */
function single(attrs: Attribute[], type: string): { value?: DerElement; problem?: string } {
  const found = attrs.filter((a) => a.type === type);
  if (found.length === 0) return {};
  if (found.length > 1 || found[0]?.values.length !== 1) return { problem: `attribute ${type} must appear once with one value` };
  return { value: found[0].values[0] };
}

function checkSignature(info: PadesSignerInfo, signer: Certificate, content: Uint8Array): CmsCheck {
  const hash = hashByOid(info.digestAlgorithm.oid);
  if (!hash || hash.name === 'SHA-1') return no(`digest algorithm ${info.digestAlgorithm.oid} is not accepted (SHA-256, SHA-384 or SHA-512)`);
  const ct = singleAttributeValue(info, OID.contentType);
  if (ct.problem || !ct.value || readOidOr(ct.value) !== OID_DATA) return no(ct.problem ?? 'the content-type attribute is missing or is not id-data');
  const md = singleAttributeValue(info, OID.messageDigest);
  if (md.problem || md.value?.tag !== TAG.OCTET_STRING) return no(md.problem ?? 'the message-digest attribute is missing');
  // RFC 5652 §11.2: the digest of the content, here the PDF's signed byte ranges.
  if (!bytesEqual(md.value.value, digest(hash.name, content))) return no(`the ${hash.name} digest of the signed bytes is not the one the signature states: the document changed after it was signed`);
  // ETSI EN 319 122-1 §5.2.2.3: signing-certificate-v2 names the signer's certificate.
  const ess = singleAttributeValue(info, OID.signingCertificateV2);
  if (ess.problem || !ess.value) return no(ess.problem ?? 'no signing-certificate-v2 attribute (ETSI EN 319 122-1 §5.2.2.3)');
  let named: { hash: string } | { problem: string };
  try {
    named = matchEssCertId(ess.value, true, signer);
  } catch (err) {
    named = { problem: `malformed signing-certificate-v2 (${err instanceof Error ? err.message : String(err)})` };
  }
  if ('problem' in named) return no(`ESSCertIDv2: ${named.problem}`);
  try {
    const { ok, description } = verifySignature(info.signatureAlgorithm, signer, info.signedAttrs.signedBytes, info.signature, hash.name);
    return ok
      ? { ok: true, reason: `signature verified (${description}) over the ${hash.name} digest ${toHex(md.value.value).slice(0, 16)}… of the signed bytes` }
      : no("the signature does not verify with the signer's certificate");
  } catch (err) {
    return no(`the signature cannot be verified: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function readOidOr(el: DerElement): string | undefined {
  try {
    return readOid(el, 'content-type');
  } catch {
    return undefined;
  }
}
