/**
 * Reference oracle for the differential test: the pkijs-based RFC 3161 verifier as it was before
 * lib/crypto/tsa/verify.ts was rewritten over node:crypto and a DER reader. It imports nothing of
 * ours (its helpers are pkijs-common.ts, pkijs-chain.ts and its decoding pkijs-tsa-decode.ts, on
 * the libraries alone), so that it stays an independent opinion. Test-only.
 */
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { timeStampingUsageProblem, validateCertificateChain } from './pkijs-chain.js';
import {
  OID,
  type HashName,
  bytesEqual,
  certificateDer,
  certificateToPem,
  digest,
  hashByOid,
  parseCertificates,
  subjectKeyIdentifier,
  toHex,
} from './pkijs-common.js';
import { type DecodedToken, type PkiStatusSummary, type TimestampSummary, MalformedError, decodeResponse, decodeToken, generalNameToString, summarizeTst } from './pkijs-tsa-decode.js';

export type { PkiStatusSummary, TimestampSummary } from './pkijs-tsa-decode.js';
export { extractTimestampToken, parseTimestampResponse, parseTimestampToken } from './pkijs-tsa-decode.js';
// The result's shape is the production verifier's (lib/crypto/tsa/verify.ts), written out here:
// the differential test compares the two field by field.
export type CheckResult = 'pass' | 'fail' | 'skipped';

export interface CheckOutcome {
  result: CheckResult;
  reason: string;
}

export interface TimestampChecks {
  status: CheckOutcome;
  imprint: CheckOutcome;
  nonce: CheckOutcome;
  policy: CheckOutcome;
  signature: CheckOutcome;
  essCertIdV2: CheckOutcome;
  eku: CheckOutcome;
  tsaName: CheckOutcome;
  chain: CheckOutcome;
}

export interface TimestampVerification extends Partial<TimestampSummary> {
  ok: boolean;
  malformed?: string;
  checks: TimestampChecks;
  pkiStatus?: PkiStatusSummary;
  tsaCertificatePem?: string;
  chainPem?: string[];
  token?: Uint8Array;
}

export interface VerifyTimestampOptions {
  imprint: Uint8Array;
  roots: string[];
  untrusted?: string[];
  hashAlgorithm?: HashName;
  nonce?: bigint;
  policy?: string;
  now?: Date;
}

const ACCEPTED_IMPRINT_HASHES: readonly HashName[] = ['SHA-256', 'SHA-384', 'SHA-512'];

const pass = (reason: string): CheckOutcome => ({ result: 'pass', reason });
const fail = (reason: string): CheckOutcome => ({ result: 'fail', reason });
const skipped = (reason: string): CheckOutcome => ({ result: 'skipped', reason });

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
    const result = await verifyDecodedToken(decoded.token, status, options);
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
    return await verifyDecodedToken(token, skipped('bare token: no PKIStatusInfo'), options);
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

async function verifyDecodedToken(token: DecodedToken, status: CheckOutcome, options: VerifyTimestampOptions): Promise<TimestampVerification> {
  const { signedData, tstInfo } = token;
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
  const embedded = (signedData.certificates ?? []).filter((c): c is pkijs.Certificate => c instanceof pkijs.Certificate);
  let roots: pkijs.Certificate[] = [];
  let untrusted: pkijs.Certificate[] = [];
  let certProblem: string | undefined;
  try {
    roots = options.roots.flatMap((pem) => parseCertificates(pem));
    untrusted = (options.untrusted ?? []).flatMap((pem) => parseCertificates(pem));
  } catch (err) {
    certProblem = `the given certificates cannot be parsed: ${err instanceof Error ? err.message : String(err)}`;
  }

  const signerInfo = signedData.signerInfos[0];
  const signer = signerInfo ? findSigner(signerInfo, [...embedded, ...untrusted, ...roots]) : undefined;
  const result: TimestampVerification = { ok: false, ...summary, checks, token: token.tokenDer };

  if (!signerInfo || signedData.signerInfos.length !== 1) {
    // RFC 3161 §2.4.2: the token MUST NOT contain any signature other than the TSA's.
    const why = `the token has ${signedData.signerInfos.length} signers, RFC 3161 requires exactly one`;
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
    result.tsaCertificatePem = certificateToPem(signer);
    checks.signature = await checkSignature(signerInfo, signer, token.eContent);
    checks.essCertIdV2 = checkEssCertId(signerInfo, signer);
    const usage = timeStampingUsageProblem(signer);
    checks.eku = usage ? fail(usage) : pass('ExtendedKeyUsage is id-kp-timeStamping only and critical');
    checks.tsaName = checkTsaName(tstInfo, signer);
    if (certProblem) {
      checks.chain = fail(certProblem);
    } else {
      const chain = await validateCertificateChain(signer, {
        anchors: roots,
        intermediates: [...embedded, ...untrusted, ...roots],
        checkDate: options.now ?? tstInfo.genTime,
      });
      checks.chain = chain.ok ? pass(chain.reason) : fail(`the signer certificate does not chain to a given root: ${chain.reason}`);
      if (chain.ok) result.chainPem = chain.path.map(certificateToPem);
    }
  }

  const all = Object.values(checks) as CheckOutcome[];
  const required = [checks.imprint, checks.signature, checks.essCertIdV2, checks.eku, checks.chain];
  result.ok = all.every((c) => c.result !== 'fail') && required.every((c) => c.result === 'pass');
  return result;
}

function checkImprint(tst: pkijs.TSTInfo, options: VerifyTimestampOptions): CheckOutcome {
  const alg = tst.messageImprint.hashAlgorithm;
  const hash = hashByOid(alg.algorithmId);
  if (!hash) return fail(`unsupported imprint hash algorithm ${alg.algorithmId}`);
  const accepted = options.hashAlgorithm ? [options.hashAlgorithm] : ACCEPTED_IMPRINT_HASHES;
  if (!accepted.includes(hash.name)) return fail(`imprint algorithm ${hash.name}, expected ${accepted.join(' or ')}`);
  // RFC 5754 §2: parameters of SHA-2 AlgorithmIdentifiers are absent or NULL.
  const params = (alg as { algorithmParams?: unknown }).algorithmParams;
  if (params !== undefined && !(params instanceof asn1js.Null)) return fail(`imprint algorithm ${hash.name} has unexpected parameters`);
  const value = tst.messageImprint.hashedMessage.valueBlock.valueHexView;
  if (value.byteLength !== hash.length) return fail(`imprint is ${value.byteLength} bytes, ${hash.name} gives ${hash.length}`);
  if (!bytesEqual(value, options.imprint)) return fail(`imprint ${toHex(value)} differs from the expected ${toHex(options.imprint)}`);
  return pass(`${hash.name} imprint matches`);
}

function checkPolicy(tst: pkijs.TSTInfo, expected: string | undefined): CheckOutcome {
  if (expected === undefined) return skipped('no policy expected');
  // RFC 3161 §2.4.2: a requested policy must be the one the token was issued under.
  return tst.policy === expected ? pass(`policy ${tst.policy}`) : fail(`policy ${tst.policy}, expected ${expected}`);
}

function checkNonce(tst: pkijs.TSTInfo, expected: bigint | undefined): CheckOutcome {
  if (expected === undefined) return skipped('no nonce expected');
  // RFC 3161 §2.4.2: the nonce MUST be present and equal when the request had one.
  if (!tst.nonce) return fail('the token has no nonce but the request had one');
  const got = tst.nonce.toBigInt();
  return got === expected ? pass('nonce matches') : fail(`nonce ${got.toString(16)} differs from the one sent (${expected.toString(16)})`);
}

/** RFC 5652 §5.3 SignerIdentifier: issuerAndSerialNumber or [0] subjectKeyIdentifier. */
function findSigner(signerInfo: pkijs.SignerInfo, candidates: pkijs.Certificate[]): pkijs.Certificate | undefined {
  const sid: unknown = signerInfo.sid;
  if (sid instanceof pkijs.IssuerAndSerialNumber) {
    return candidates.find((c) => c.issuer.isEqual(sid.issuer) && c.serialNumber.isEqual(sid.serialNumber));
  }
  if (sid instanceof asn1js.BaseBlock) {
    // [0] IMPLICIT OCTET STRING, which asn1js may see as primitive or as constructed.
    const block = sid as asn1js.Constructed & asn1js.Primitive;
    const inner = block.idBlock.isConstructed ? (block.valueBlock.value[0] as asn1js.OctetString | undefined) : undefined;
    const keyId = inner ? inner.valueBlock.valueHexView : block.valueBlock.valueHexView;
    return candidates.find((c) => {
      const ski = subjectKeyIdentifier(c);
      return ski ? bytesEqual(ski, keyId) : bytesEqual(digest('SHA-1', c.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView), keyId);
    });
  }
  return undefined;
}

function singleAttributeValue(signerInfo: pkijs.SignerInfo, type: string): { value?: unknown; problem?: string } {
  const attrs = (signerInfo.signedAttrs?.attributes ?? []).filter((a) => a.type === type);
  if (attrs.length === 0) return {};
  // RFC 5652 §5.3 / §11: these attributes are single-valued and appear once.
  if (attrs.length > 1 || attrs[0]?.values.length !== 1) return { problem: `attribute ${type} must appear once with one value` };
  return { value: attrs[0].values[0] };
}

async function checkSignature(signerInfo: pkijs.SignerInfo, signer: pkijs.Certificate, eContent: Uint8Array): Promise<CheckOutcome> {
  // RFC 5652 §5.3: signed attributes are required when the content is not id-data.
  if (!signerInfo.signedAttrs || signerInfo.signedAttrs.attributes.length === 0) return fail('the SignerInfo has no signed attributes');
  const digestAlg = hashByOid(signerInfo.digestAlgorithm.algorithmId);
  if (!digestAlg) return fail(`unsupported digest algorithm ${signerInfo.digestAlgorithm.algorithmId}`);

  // RFC 5652 §11.1: content-type attribute equal to the eContentType.
  const ct = singleAttributeValue(signerInfo, OID.contentType);
  if (ct.problem) return fail(ct.problem);
  if (!(ct.value instanceof asn1js.ObjectIdentifier) || ct.value.valueBlock.toString() !== OID.ctTSTInfo) {
    return fail('the content-type attribute is missing or is not id-ct-TSTInfo');
  }
  // RFC 5652 §11.2: message-digest attribute = digest of the eContent octets.
  const md = singleAttributeValue(signerInfo, OID.messageDigest);
  if (md.problem) return fail(md.problem);
  if (!(md.value instanceof asn1js.OctetString)) return fail('the message-digest attribute is missing');
  if (!bytesEqual(md.value.valueBlock.valueHexView, digest(digestAlg.name, eContent))) {
    return fail('the message-digest attribute does not match the TSTInfo');
  }

  // RFC 5652 §5.4: the signature covers the DER of the signed attributes with a SET OF tag;
  // pkijs keeps those bytes (with the tag already rewritten) in `encodedValue`.
  const engine = pkijs.getCrypto(true);
  const signedBytes = signerInfo.signedAttrs.encodedValue;
  const shaAlgorithm = engine.getHashAlgorithm(signerInfo.signatureAlgorithm) || digestAlg.name;
  try {
    const ok = await engine.verifyWithPublicKey(signedBytes, signerInfo.signature, signer.subjectPublicKeyInfo, signerInfo.signatureAlgorithm, shaAlgorithm);
    return ok ? pass(`signature verified (${shaAlgorithm})`) : fail('the signature does not verify with the signer certificate');
  } catch (err) {
    return fail(`the signature cannot be verified: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * RFC 5035 §5.4.1 / RFC 2634 §5.4: the first ESSCertID(v2) in the signing-certificate attribute
 * must identify the signer certificate by hash (and by issuer/serial when present).
 */
function checkEssCertId(signerInfo: pkijs.SignerInfo, signer: pkijs.Certificate): CheckOutcome {
  const der = certificateDer(signer);
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
    // SigningCertificate(V2) ::= SEQUENCE { certs SEQUENCE OF ESSCertID(v2), policies OPTIONAL }
    const certs = value instanceof asn1js.Sequence ? value.valueBlock.value[0] : undefined;
    const first = certs instanceof asn1js.Sequence ? certs.valueBlock.value[0] : undefined;
    if (!(first instanceof asn1js.Sequence)) return fail(`${label}: malformed signing-certificate attribute`);
    const parts = [...first.valueBlock.value];
    // ESSCertIDv2 ::= SEQUENCE { hashAlgorithm DEFAULT id-sha256, certHash, issuerSerial OPTIONAL }
    // ESSCertID   ::= SEQUENCE { certHash (SHA-1), issuerSerial OPTIONAL }
    let hash = isV2 ? hashByOid(OID.sha256) : hashByOid(OID.sha1);
    if (isV2 && parts[0] instanceof asn1js.Sequence) {
      const algId = new pkijs.AlgorithmIdentifier({ schema: parts.shift() });
      hash = hashByOid(algId.algorithmId);
      if (!hash) return fail(`${label}: unsupported hash algorithm ${algId.algorithmId}`);
    }
    const certHash = parts.shift();
    if (!hash || !(certHash instanceof asn1js.OctetString)) return fail(`${label}: malformed certHash`);
    if (!bytesEqual(certHash.valueBlock.valueHexView, digest(hash.name, der))) {
      return fail(`${label}: the ${hash.name} certificate hash does not match the signer certificate`);
    }
    const issuerSerial = parts.shift();
    if (issuerSerial !== undefined) {
      const problem = issuerSerialProblem(issuerSerial, signer);
      if (problem) return fail(`${label}: ${problem}`);
    }
    reasons.push(`${label} (${hash.name}) matches the signer certificate`);
  }
  return pass(reasons.join('; '));
}

/** IssuerSerial ::= SEQUENCE { issuer GeneralNames, serialNumber CertificateSerialNumber } */
function issuerSerialProblem(value: asn1js.AsnType, signer: pkijs.Certificate): string | undefined {
  if (!(value instanceof asn1js.Sequence)) return 'malformed issuerSerial';
  const [names, serial] = value.valueBlock.value;
  if (!(names instanceof asn1js.Sequence) || !(serial instanceof asn1js.Integer)) return 'malformed issuerSerial';
  if (!serial.isEqual(signer.serialNumber)) return 'issuerSerial names another serial number';
  const dirNames = names.valueBlock.value
    .map((n) => new pkijs.GeneralName({ schema: n }))
    .filter((n) => n.type === 4 && n.value instanceof pkijs.RelativeDistinguishedNames);
  if (!dirNames.some((n) => (n.value as pkijs.RelativeDistinguishedNames).isEqual(signer.issuer))) return 'issuerSerial names another issuer';
  return undefined;
}

function checkTsaName(tst: pkijs.TSTInfo, signer: pkijs.Certificate): CheckOutcome {
  if (!tst.tsa) return skipped('the token has no tsa name');
  const name = tst.tsa;
  if (name.type === 4 && name.value instanceof pkijs.RelativeDistinguishedNames && name.value.isEqual(signer.subject)) {
    return pass('tsa name is the signer subject');
  }
  // RFC 3161 §2.4.2: or one of the subjectAltNames of the signer certificate.
  const san = signer.extensions?.find((e) => e.extnID === '2.5.29.17')?.parsedValue;
  const encode = (n: pkijs.GeneralName): string => toHex((n.toSchema() as asn1js.BaseBlock).toBER());
  const wanted = encode(name);
  if (san instanceof pkijs.AltName && san.altNames.some((n) => encode(n) === wanted)) {
    return pass('tsa name is a subjectAltName of the signer');
  }
  return fail(`tsa name ${generalNameToString(name)} is not a name of the signer certificate`);
}

