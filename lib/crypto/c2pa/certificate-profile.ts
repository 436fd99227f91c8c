/**
 * C2PA's profile of a claim signer's certificate (C2PA 2.1 §14.5.1, "Certificate Profile"), checked
 * before anything is signed or sent: a certificate the official reader would refuse
 * (`signingCredential.invalid`) is refused here, with what is wrong in words. The rules are the
 * specification's; the reader (c2pa-rs, `check_certificate_profile`) applies the same:
 *
 * - an X.509 v3 certificate, without issuer or subject unique identifiers;
 * - signed with an algorithm C2PA allows (ECDSA with SHA-256/384/512, RSA PKCS#1 v1.5 or PSS with
 *   SHA-256/384/512, Ed25519);
 * - an end entity: basicConstraints absent or cA FALSE;
 * - keyUsage with digitalSignature, and without keyCertSign;
 * - an extendedKeyUsage, without anyExtendedKeyUsage, naming a purpose C2PA accepts for signing
 *   claims (id-kp-emailProtection, id-kp-documentSigning, the C2PA claim-signing OID, or
 *   Microsoft's C2PA OID), and neither id-kp-timeStamping nor id-kp-OCSPSigning (a time-stamping
 *   authority's or an OCSP responder's key signs nothing else);
 * - an authorityKeyIdentifier;
 * - within its validity period at the moment of signing.
 *
 * We also require what this release can sign with (ES256: an EC P-256 key); other algorithms come
 * where the reader and the certificate allow (docs/c2pa.md "What is signed").
 */
import * as asn1js from 'asn1js';
import type * as pkijs from 'pkijs';
import { OID } from '../tsa/identifiers.js';

/** The extended key usages C2PA accepts for a claim signer (C2PA 2.1 §14.5.1.1). */
export const CLAIM_SIGNING_EKUS: Readonly<Record<string, string>> = {
  '1.3.6.1.5.5.7.3.4': 'id-kp-emailProtection',
  '1.3.6.1.5.5.7.3.36': 'id-kp-documentSigning',
  '1.3.6.1.4.1.62558.2.1': 'c2pa-kp-claimSigning',
  '1.3.6.1.4.1.311.76.59.1.9': 'Microsoft C2PA signing',
};
const ANY_EKU = '2.5.29.37.0';
const FORBIDDEN_EKUS: Readonly<Record<string, string>> = {
  [OID.kpTimeStamping]: 'id-kp-timeStamping',
  '1.3.6.1.5.5.7.3.9': 'id-kp-OCSPSigning',
};

/** Signature algorithms of the certificate itself that C2PA allows (C2PA 2.1 §13.2.1). */
const SIGNATURE_ALGORITHMS: Readonly<Record<string, string>> = {
  '1.2.840.10045.4.3.2': 'ecdsa-with-SHA256',
  '1.2.840.10045.4.3.3': 'ecdsa-with-SHA384',
  '1.2.840.10045.4.3.4': 'ecdsa-with-SHA512',
  '1.2.840.113549.1.1.11': 'sha256WithRSAEncryption',
  '1.2.840.113549.1.1.12': 'sha384WithRSAEncryption',
  '1.2.840.113549.1.1.13': 'sha512WithRSAEncryption',
  '1.2.840.113549.1.1.10': 'RSASSA-PSS',
  '1.3.101.112': 'Ed25519',
};

/** keyUsage bits (RFC 5280 §4.2.1.3). */
const DIGITAL_SIGNATURE = 0;
const KEY_CERT_SIGN = 5;

/**
 * What keeps a certificate from signing a C2PA claim here, one sentence each; empty when it may.
 * `at` is the moment of signing.
 */
export function claimSignerProblems(cert: pkijs.Certificate, at: Date): string[] {
  const problems: string[] = [];
  if (cert.version !== 2) problems.push(`it is an X.509 v${cert.version + 1} certificate; C2PA needs v3`);
  if (cert.issuerUniqueID !== undefined || cert.subjectUniqueID !== undefined) problems.push('it carries an issuer or subject unique identifier, which C2PA forbids');
  const algorithm = cert.signatureAlgorithm.algorithmId;
  if (!SIGNATURE_ALGORITHMS[algorithm]) problems.push(`its issuer signed it with ${algorithm}, an algorithm C2PA does not allow (ECDSA, RSA or RSA-PSS with SHA-256/384/512, or Ed25519)`);

  const extensions = new Map((cert.extensions ?? []).map((e) => [e.extnID, e]));
  const basic = extensions.get(OID.basicConstraints);
  if (basic && isCa(basic.extnValue.valueBlock.valueHexView)) problems.push('it is a CA certificate (basicConstraints cA TRUE); a claim is signed by an end-entity certificate');

  const keyUsage = extensions.get(OID.keyUsage);
  if (!keyUsage) problems.push('it has no keyUsage; C2PA needs digitalSignature');
  else {
    const bits = bitsOf(keyUsage.extnValue.valueBlock.valueHexView);
    if (!bits.has(DIGITAL_SIGNATURE)) problems.push('its keyUsage lacks digitalSignature');
    if (bits.has(KEY_CERT_SIGN)) problems.push('its keyUsage has keyCertSign, which only a CA may have');
  }

  const eku = extensions.get(OID.extKeyUsage);
  if (!eku) problems.push(`it has no extendedKeyUsage; C2PA needs one of ${Object.values(CLAIM_SIGNING_EKUS).join(', ')}`);
  else {
    const purposes = oidsOf(eku.extnValue.valueBlock.valueHexView);
    if (purposes.includes(ANY_EKU)) problems.push('its extendedKeyUsage has anyExtendedKeyUsage, which C2PA forbids');
    const forbidden = purposes.filter((p) => FORBIDDEN_EKUS[p]).map((p) => FORBIDDEN_EKUS[p]);
    if (forbidden.length > 0) problems.push(`its extendedKeyUsage has ${forbidden.join(' and ')}: that key belongs to a time-stamping authority or an OCSP responder, not to a claim signer`);
    if (!purposes.some((p) => CLAIM_SIGNING_EKUS[p])) problems.push(`its extendedKeyUsage names none of ${Object.values(CLAIM_SIGNING_EKUS).join(', ')}`);
  }

  if (!extensions.has(OID.authorityKeyIdentifier)) problems.push('it has no authorityKeyIdentifier');

  const notBefore = cert.notBefore.value;
  const notAfter = cert.notAfter.value;
  if (at < notBefore) problems.push(`it is not valid yet (from ${notBefore.toISOString()})`);
  if (at > notAfter) problems.push(`it expired on ${notAfter.toISOString()}`);

  const spki = cert.subjectPublicKeyInfo.algorithm;
  const curve = spki.algorithmParams instanceof asn1js.ObjectIdentifier ? spki.algorithmParams.valueBlock.toString() : undefined;
  if (spki.algorithmId !== OID.ecPublicKey || curve !== OID.secp256r1) problems.push('its key is not an EC P-256 key: this release signs with ES256 only');
  return problems;
}

function isCa(der: Uint8Array): boolean {
  const parsed = asn1js.fromBER(der.slice());
  const first = parsed.offset === -1 ? undefined : (parsed.result as asn1js.Sequence).valueBlock.value?.[0];
  return first instanceof asn1js.Boolean && first.getValue();
}

function bitsOf(der: Uint8Array): Set<number> {
  const parsed = asn1js.fromBER(der.slice());
  const bitString = parsed.result as asn1js.BitString;
  const bytes = bitString.valueBlock.valueHexView;
  const set = new Set<number>();
  bytes.forEach((byte, i) => {
    for (let bit = 0; bit < 8; bit++) if (byte & (0x80 >> bit)) set.add(i * 8 + bit);
  });
  return set;
}

function oidsOf(der: Uint8Array): string[] {
  const parsed = asn1js.fromBER(der.slice());
  const sequence = parsed.result as asn1js.Sequence;
  return (sequence.valueBlock.value ?? []).filter((v): v is asn1js.ObjectIdentifier => v instanceof asn1js.ObjectIdentifier).map((v) => v.valueBlock.toString());
}
