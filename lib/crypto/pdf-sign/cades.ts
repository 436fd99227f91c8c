/**
 * The CMS of a PAdES baseline signature (ETSI EN 319 142-1, SubFilter ETSI.CAdES.detached): a
 * detached SignedData (RFC 5652) whose SignerInfo carries the CAdES-B-B signed attributes
 * (ETSI EN 319 122-1 §5.2: content-type, message-digest, signing-certificate-v2; no signing-time,
 * PAdES puts the time in the signature dictionary's /M) and, for B-T, the RFC 3161 timestamp over
 * the signature value as the unsigned attribute id-aa-signatureTimeStampToken (RFC 3161 Appendix A).
 *
 * Written with our DER writer (lib/crypto/tsa/der-writer.ts), not with @signpdf's P12Signer or
 * pkijs: the key sits behind the {@link TsaKeySigner} port (a KMS key in production never enters
 * the process, while P12Signer needs a PKCS#12 file with the private key, RSA only), and the TSA's
 * tokens are built by the same writer in the same way. @signpdf places the result in the PDF.
 */
import { createHash, createPublicKey, verify as nodeVerify } from 'node:crypto';
import { OID } from '../tsa/identifiers.js';
import { explicit, implicitConstructed, integer, nullValue, octetString, oid, retag, sequence, setOf } from '../tsa/der-writer.js';
import type { TsaKeySigner } from '../tsa/key-signer.js';
import { parseCertificateDer } from '../tsa/x509-verify.js';

/** RFC 5652 §4: id-data, the type of the (detached) content: the PDF's signed byte ranges. */
const OID_DATA = '1.2.840.113549.1.7.1';
/** RFC 3161 Appendix A / ETSI EN 319 122-1 §5.3: id-aa-signatureTimeStampToken. */
export const OID_SIGNATURE_TIMESTAMP_TOKEN = '1.2.840.113549.1.9.16.2.14';

const SHA256_NULL = sequence(oid(OID.sha256), nullValue());
/** Identifier octet of [0] IMPLICIT SET OF Attribute (signedAttrs, RFC 5652 §5.3). */
const SIGNED_ATTRS_TAG = 0xa0;

/** What signs a PDF: the key behind the signer port, its certificate and the chain to show. */
export interface PdfSigningIdentity {
  signer: TsaKeySigner;
  /** DER of the signing certificate. */
  certificateDer: Uint8Array;
  /** DER of the certificates above it (e.g. our root), put in SignedData.certificates. */
  chainDer: readonly Uint8Array[];
}

/** Gets an RFC 3161 TimeStampToken (DER ContentInfo) over a SHA-256 imprint. */
export type SignatureTimestamper = (sha256Imprint: Uint8Array) => Promise<Uint8Array>;

function attribute(type: string, value: Uint8Array): Uint8Array {
  return sequence(oid(type), setOf([value]));
}

/**
 * Builds the DER ContentInfo of a detached CAdES signature over `content` (the PDF's /ByteRange
 * bytes), with a signature timestamp when `timestamp` is given (PAdES B-T).
 */
export async function buildCadesDetached(content: Uint8Array, identity: PdfSigningIdentity, timestamp?: SignatureTimestamper): Promise<Uint8Array> {
  const cert = parseCertificateDer(identity.certificateDer);
  const serial = integer(cert.serial);
  const contentDigest = createHash('sha256').update(content).digest();

  // RFC 5035 §3: SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF ESSCertIDv2 }; ESSCertIDv2
  // with hashAlgorithm DEFAULT sha256 left out, and issuerSerial { GeneralNames { [4] Name }, serial }.
  const essCertIdV2 = sequence(octetString(createHash('sha256').update(identity.certificateDer).digest()), sequence(sequence(explicit(4, cert.issuer)), serial));
  const signedAttrsSet = setOf([
    attribute(OID.contentType, oid(OID_DATA)),
    attribute(OID.messageDigest, octetString(contentDigest)),
    attribute(OID.signingCertificateV2, sequence(sequence(essCertIdV2))),
  ]);
  // RFC 5652 §5.4: the signature is over the DER of the attributes with the SET OF tag; the
  // SignerInfo carries them under [0] IMPLICIT.
  const signature = await identity.signer.sign(signedAttrsSet);
  const publicKey = createPublicKey({ key: Buffer.from(cert.spki), format: 'der', type: 'spki' });
  if (!nodeVerify('sha256', signedAttrsSet, publicKey, signature)) {
    throw new Error('the PDF signing key does not match its certificate (the signature does not verify)');
  }

  const unsigned: Uint8Array[] = [];
  if (timestamp) {
    // RFC 3161 Appendix A: the token's imprint is the hash of the SignerInfo's signature value
    // (the OCTET STRING's contents).
    const token = await timestamp(createHash('sha256').update(signature).digest());
    unsigned.push(attribute(OID_SIGNATURE_TIMESTAMP_TOKEN, token));
  }

  const signerInfo = sequence(
    integer(1), // version 1: sid is issuerAndSerialNumber (RFC 5652 §5.3)
    sequence(cert.issuer, serial),
    SHA256_NULL,
    retag(signedAttrsSet, SIGNED_ATTRS_TAG),
    sequence(oid(identity.signer.signatureAlgorithm.oid), ...(identity.signer.signatureAlgorithm.nullParameters ? [nullValue()] : [])),
    octetString(signature),
    ...(unsigned.length > 0 ? [implicitConstructed(1, unsigned)] : []),
  );
  const signedData = sequence(
    integer(1), // RFC 5652 §5.1: version 1 (no attribute certificates, id-data content, v1 SignerInfo)
    setOf([SHA256_NULL]),
    sequence(oid(OID_DATA)), // detached: no eContent
    implicitConstructed(0, [identity.certificateDer, ...identity.chainDer]),
    setOf([signerInfo]),
  );
  return sequence(oid(OID.signedData), explicit(0, signedData));
}
