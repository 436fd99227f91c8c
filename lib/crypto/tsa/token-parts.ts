/**
 * The parts of the embedded TSA's tokens that are the same in every token (RFC 3161 §2.4.2,
 * RFC 5652 §5, RFC 5035): encoded once from the certificates' own bytes when the TSA is built.
 * Split from embedded.ts by concern.
 */
import { DerCursor, TAG, decodeDer, expectTag, isContext, sequence as readSequence } from './der.js';
import { OID, digest } from './identifiers.js';
import { explicit, implicitConstructed, octetString, oid, sequence, setOf } from './der-writer.js';
import type { EmbeddedTsaOptions } from './embedded.js';
import { parseCertificateDer } from './x509-verify.js';

/** The parts of every token that depend only on the TSA's certificates and options. */
export interface TokenParts {
  /** TSTInfo.policy, encoded. */
  policy: Uint8Array;
  /** TSTInfo.tsa: [0] GeneralName directoryName, or undefined when includeTsaName is false. */
  tsaName: Uint8Array | undefined;
  /** SignerInfo.sid: IssuerAndSerialNumber of the TSA certificate (RFC 5652 §5.3). */
  issuerAndSerialNumber: Uint8Array;
  /** The signingCertificateV2 attribute (RFC 5035 §3). */
  signingCertificateV2: Uint8Array;
  /** SignedData.certificates for certReq (RFC 3161 §2.4.1). */
  certificates: Uint8Array;
  /** genTime must lie in [validFrom, validUntil] (ms since the epoch): every certificate is valid then. */
  validFrom: number;
  validUntil: number;
}

/**
 * Attribute ::= SEQUENCE { attrType OID, attrValues SET OF AttributeValue } with one value
 * (RFC 5652 §5.3). `typeDer` saves re-encoding a constant type.
 */
export function attribute(type: string, value: Uint8Array, typeDer: Uint8Array = oid(type)): Uint8Array {
  return sequence(typeDer, setOf([value]));
}

/**
 * The token parts fixed by the certificates and options, from the certificates' own DER.
 * @throws Error when a certificate is not strict DER (its tokens would not pass the verifier).
 */
export function tokenParts(options: Pick<EmbeddedTsaOptions, 'policyOid' | 'includeRootCertificate' | 'includeTsaName'>, tsaCertDer: Uint8Array, rootCertDer: Uint8Array): TokenParts {
  let tsa;
  let root;
  let tsaSerial: Uint8Array;
  try {
    tsa = parseCertificateDer(tsaCertDer);
    root = parseCertificateDer(rootCertDer);
    tsaSerial = certificateSerialDer(tsa.tbs);
  } catch (err) {
    throw new Error(`TSA certificate refused: not a strict DER certificate (${err instanceof Error ? err.message : String(err)})`);
  }
  // GeneralName ::= CHOICE { …, directoryName [4] Name, … } (RFC 5280 §4.2.1.6). Name is itself a
  // CHOICE, so the tag is explicit (X.680 §31.2.7); TSTInfo.tsa [0] around the GeneralName CHOICE
  // likewise.
  const directoryName = (name: Uint8Array) => explicit(4, name);
  // SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF ESSCertIDv2, policies OPTIONAL }
  // ESSCertIDv2 ::= SEQUENCE { hashAlgorithm DEFAULT {id-sha256}, certHash, issuerSerial OPTIONAL }
  // IssuerSerial ::= SEQUENCE { issuer GeneralNames, serialNumber CertificateSerialNumber }
  // (RFC 5035 §3, §4). hashAlgorithm is SHA-256, the default, so DER leaves it out (X.690 §11.5).
  const issuerSerial = sequence(sequence(directoryName(tsa.issuer)), tsaSerial);
  const essCertIdV2 = sequence(octetString(digest('SHA-256', tsaCertDer)), issuerSerial);
  const signingCertificateV2 = attribute(OID.signingCertificateV2, sequence(sequence(essCertIdV2)));
  // CertificateSet ::= SET OF CertificateChoices (RFC 5652 §10.2.3), [0] IMPLICIT in SignedData.
  // Written leaf first, as the tokens of this TSA always were: RFC 5652 asks DER only of the signed
  // attributes (§5.3, §5.4), and verifiers look certificates up rather than rely on their order.
  const certificates = implicitConstructed(0, options.includeRootCertificate === false ? [tsaCertDer] : [tsaCertDer, rootCertDer]);
  return {
    policy: oid(options.policyOid),
    tsaName: options.includeTsaName !== false ? explicit(0, directoryName(tsa.subject)) : undefined,
    // IssuerAndSerialNumber ::= SEQUENCE { issuer Name, serialNumber } (RFC 5652 §10.2.4).
    issuerAndSerialNumber: sequence(tsa.issuer, tsaSerial),
    signingCertificateV2,
    certificates,
    validFrom: Math.max(tsa.notBefore.getTime(), root.notBefore.getTime()),
    validUntil: Math.min(tsa.notAfter.getTime(), root.notAfter.getTime()),
  };
}

/**
 * The serialNumber INTEGER of a certificate exactly as encoded in it: the component of
 * tbsCertificate after the optional [0] EXPLICIT version (RFC 5280 §4.1).
 */
function certificateSerialDer(tbsDer: Uint8Array): Uint8Array {
  const tbs = new DerCursor(readSequence(decodeDer(tbsDer, 'tbsCertificate'), 'tbsCertificate'), 'tbsCertificate');
  tbs.optional((el) => isContext(el, 0, true));
  return expectTag(tbs.next('serialNumber'), TAG.INTEGER, 'serialNumber').der;
}
