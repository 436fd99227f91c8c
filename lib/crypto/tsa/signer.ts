/**
 * The signer of an RFC 3161 token (RFC 5652 §5.3): finding its certificate from the SignerInfo's
 * sid, the CMS signature over the signed attributes (RFC 5652 §5.4, §11), and the ESS
 * signing-certificate attribute (RFC 5035, RFC 2634). Split from verify.ts by concern; the PAdES
 * verifier (../pdf-sign/verify.ts) uses the same checks.
 */
import { type DerElement, DerCursor, TAG, children, readAlgorithmIdentifier, readInteger, readOid, sequence } from './der.js';
import { type HashName, OID, bytesEqual, digest, hashByOid } from './identifiers.js';
import { ID_ML_DSA_65 } from '../ml-dsa.js';
import { verifySignature } from './signature.js';
import { type SignerInfo, checkGeneralName, directoryName } from './token.js';
import type { CheckOutcome } from './verify.js';
import { type Certificate, hasKeyIdentifier, issuerNameMatcher } from './x509-verify.js';

/** A check that passed, failed or was skipped, with its reason (verify.ts reports them all). */
export const pass = (reason: string): CheckOutcome => ({ result: 'pass', reason });
export const fail = (reason: string): CheckOutcome => ({ result: 'fail', reason });
export const skipped = (reason: string): CheckOutcome => ({ result: 'skipped', reason });

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

export function checkSignature(signerInfo: SignerInfo, signer: Certificate, eContent: Uint8Array): CheckOutcome {
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
export function checkEssCertId(signerInfo: SignerInfo, signer: Certificate): CheckOutcome {
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
