/**
 * Verification of RFC 3161 time-stamp responses and tokens, over a strict DER reader and
 * node:crypto (no ASN.1 library: why, at the top of path.ts): the PKIStatus, the imprint, nonce and
 * policy, the CMS signature (RFC 5652 §5.4, §5.6), the ESS signing-certificate attribute (RFC 5035,
 * RFC 2634), the TSA's ExtendedKeyUsage (RFC 3161 §2.3), the TSTInfo `tsa` name, and the
 * certificate path (RFC 5280 §6). Each is checked and reported separately, so that a caller can
 * tell a wrong root from a wrong imprint. Decoding is token.ts's, the signer's checks signer.ts's,
 * the path path.ts's.
 */
import { type DerElement, absentOrNullParams } from './der.js';
import { type HashName, bytesEqual, digest, hashByOid, toHex } from './identifiers.js';
import {
  type Certificate,
  certificatePem,
  certificatesFromPem,
  describeCertificate,
  namesEqual,
  subjectAltNames,
  timeStampingUsageProblem,
} from './x509-verify.js';
import {
  type DecodedToken,
  type TstInfo,
  MalformedError,
  decodeResponse,
  decodeToken,
  directoryName,
  generalNameToString,
  summarizeTst,
} from './token.js';
import { unvouchedCertificates, validatePath } from './path.js';
import { checkEssCertId, checkSignature, fail, findSigner, pass, skipped } from './signer.js';

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


/**
 * Decodes a DER TimeStampResp for display, without verifying anything.
 * @throws Error when it is malformed or carries no token (e.g. a rejection).
 */
export function parseTimestampResponse(responseDer: Uint8Array): TimestampSummary & { pkiStatus: PkiStatusSummary } {
  const { pkiStatus, token } = responseWithToken(responseDer);
  return { ...summarizeTst(token.tstInfo), pkiStatus };
}

/** A decoded response that carries a token. @throws Error when it is malformed or carries none. */
function responseWithToken(responseDer: Uint8Array): { pkiStatus: PkiStatusSummary; token: DecodedToken } {
  const { pkiStatus, token } = decodeResponse(responseDer);
  if (!token) throw new MalformedError(`the response carries no token (status ${pkiStatus.name})`);
  return { pkiStatus, token };
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
  return responseWithToken(responseDer).token.tokenDer;
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
