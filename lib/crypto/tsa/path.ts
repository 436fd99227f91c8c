/**
 * RFC 5280 §6.1 basic path validation for the verification side. What costs in validating a path,
 * the signature of each link, is cached per process (verifiedLinks below): a TSA's chain is
 * verified once, and each later token's path costs 0.03 ms (measured below). A cache of whole
 * validated paths (per chain, anchors and the validity of the certificates compared) was written
 * and measured: it saved 0.015 ms per token and added 512 bytes to each token-verifying bundle,
 * where the issue asks that bundles do not grow; it is not kept.
 *
 * Why this is ours and not pkijs's CertificateChainValidationEngine (issue 35), measured in one run
 * by `npx tsx bench/asn1-stack.ts` (2026-11-29, Node 24.21, 2 shared cores):
 * - the functions that verify tokens (v2EvidenceVerify, v1PqVerify, v1LedgerVerify, verifyPage)
 *   carry no pkijs: with its chain engine the v2EvidenceVerify bundle grows from 438.1 KiB to
 *   832.3 KiB (over its 442 KiB budget) and its cold import from 222 ms to 341 ms (median of 7),
 *   where the issue asks that bundles and cold starts do not grow;
 * - per call, pkijs took 1.01 ms against 0.03 ms here (a cache would hide that, not the bundle);
 * - pkijs verifies signatures through WebCrypto, whose algorithm table has no id-ml-dsa-65: the
 *   post-quantum TSA's chain could not be validated by it without our own signature hook anyway;
 * - pkijs accepts paths RFC 5280 refuses: a path longer than a pathLenConstraint allows (§6.1.4
 *   (m)) and a leaf with an unknown critical extension (§6.1.5 (f)); OpenSSL refuses both, and so
 *   does this module (test/crypto/tsa-verify-differential.test.ts, "differs from pkijs …").
 * On the looping certificate set of test/crypto/tsa-verify-adversarial.test.ts pkijs ended too
 * (94 ms, refused); the candidate cap below is ours either way.
 *
 * No revocation checking, no policy or name-constraint processing: a critical extension asking for
 * those makes the path fail.
 */
import { OID, bytesEqual } from './identifiers.js';
import { verifySignature } from './signature.js';
import {
  type Certificate,
  authorityKeyIdentifier,
  basicConstraints,
  describeCertificate,
  isNamedIssuerOf,
  keyUsageBits,
  nameToString,
  safe,
  sameCertificate,
  subjectKeyIdentifier,
} from './x509-verify.js';

/** Outcome of {@link validatePath}. */
export interface PathValidation {
  ok: boolean;
  /** Why it failed, or which anchor it chains to. */
  reason: string;
  /** The validated path, leaf first, trust anchor last (empty on failure). */
  path: Certificate[];
}

/** Extensions whose criticality we honour (RFC 5280 §4.2); certificatePolicies is accepted as
 * any-policy (§6.1 with user-initial-policy-set any-policy and no explicit policy required). */
const UNDERSTOOD_EXTENSIONS: ReadonlySet<string> = new Set([
  OID.basicConstraints,
  OID.keyUsage,
  OID.extKeyUsage,
  OID.subjectKeyIdentifier,
  OID.authorityKeyIdentifier,
  OID.subjectAltName,
  OID.certificatePolicies,
]);

const MAX_PATH = 8;

/**
 * Candidate issuers one path search considers at most. The certificates of a token are unsigned
 * (RFC 5652 §5.1): a dozen CA certificates with one name and one key sign each other in every
 * order, and a depth-first search that only stops at a trust anchor would try each ordering
 * (millions of paths). Real paths take a few candidates; like Go's crypto/x509 (100 signature
 * checks per verification), the search gives up, failing the path, after this many.
 */
export const MAX_PATH_CANDIDATES = 100;

// Issuer links whose signature verified: child -> issuers.
const verifiedLinks = new WeakMap<Certificate, WeakSet<Certificate>>();

/** Why `issuer`'s key does not verify `cert`'s signature, or undefined when it does. */
function linkProblem(cert: Certificate, issuer: Certificate): string | undefined {
  if (verifiedLinks.get(cert)?.has(issuer)) return undefined;
  // RFC 5280 §4.1.1.2: signatureAlgorithm MUST equal tbsCertificate.signature.
  if (!bytesEqual(cert.signatureAlgorithm.der, cert.tbsSignatureAlgorithm.der)) {
    return `${describeCertificate(cert)}: signatureAlgorithm differs from tbsCertificate.signature`;
  }
  if (cert.signatureAlgorithm.oid === OID.rsaEncryption) return `${describeCertificate(cert)}: rsaEncryption is not a certificate signature algorithm`;
  try {
    const { ok } = verifySignature(cert.signatureAlgorithm, issuer, cert.tbs, cert.signature);
    if (!ok) return `the signature of ${describeCertificate(cert)} does not verify with the key of ${describeCertificate(issuer)}`;
  } catch (err) {
    return `the signature of ${describeCertificate(cert)} cannot be verified: ${err instanceof Error ? err.message : String(err)}`;
  }
  let set = verifiedLinks.get(cert);
  if (!set) verifiedLinks.set(cert, (set = new WeakSet()));
  set.add(issuer);
  return undefined;
}

/** Problems of one certificate of the path that do not depend on its position. */
function certificateProblem(cert: Certificate, checkDate: Date): string | undefined {
  // RFC 5280 §6.1.3 (a)(2): the validity period includes checkDate (both ends inclusive).
  if (checkDate < cert.notBefore || checkDate > cert.notAfter) {
    return `${describeCertificate(cert)} is not valid at ${checkDate.toISOString()} (valid ${cert.notBefore.toISOString()} to ${cert.notAfter.toISOString()})`;
  }
  const seen = new Set<string>();
  for (const e of cert.extensions) {
    // RFC 5280 §4.2: a certificate MUST NOT include more than one instance of an extension.
    if (seen.has(e.oid)) return `${describeCertificate(cert)} has the extension ${e.oid} more than once`;
    seen.add(e.oid);
    // RFC 5280 §6.1.4 (o), §6.1.5 (f): an unrecognised critical extension rejects the path.
    if (e.critical && !UNDERSTOOD_EXTENSIONS.has(e.oid)) return `${describeCertificate(cert)} has an unsupported critical extension ${e.oid}`;
  }
  return undefined;
}

/**
 * What `cert` lacks to issue `below` certificates (not counting self-issued ones) of a path
 * (RFC 5280 §6.1.4 (k), (l), (m), (n)). A trust anchor without any extension (a v1 root) is taken
 * as is, as RFC 5280 §6.1.1 (d) defines the anchor by its name and key only.
 */
function issuerProblem(cert: Certificate, below: number, isAnchor: boolean): string | undefined {
  let bc: ReturnType<typeof basicConstraints>;
  let ku: number[] | undefined;
  try {
    bc = basicConstraints(cert);
    ku = keyUsageBits(cert);
  } catch (err) {
    return `${describeCertificate(cert)} has a malformed extension: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (isAnchor && cert.version < 3 && cert.extensions.length === 0) return undefined;
  if (!bc?.ca) return `${describeCertificate(cert)} is not a CA certificate (basicConstraints cA is not TRUE)`;
  // keyCertSign is bit 5.
  if (ku !== undefined && !ku.includes(5)) return `${describeCertificate(cert)} may not sign certificates (keyUsage lacks keyCertSign)`;
  if (bc.pathLen !== undefined && below > bc.pathLen) return `${describeCertificate(cert)} allows ${bc.pathLen} intermediate certificates below it, the path has ${below}`;
  return undefined;
}

function pathProblem(path: Certificate[], checkDate: Date): string | undefined {
  let nonSelfIssued = 0;
  for (let i = 0; i < path.length; i++) {
    const cert = path[i] as Certificate;
    const problem = certificateProblem(cert, checkDate) ?? (i > 0 ? issuerProblem(cert, nonSelfIssued, i === path.length - 1) : undefined);
    if (problem) return problem;
    // pathLenConstraint counts the intermediates between an issuer and the leaf, except self-issued ones.
    if (i > 0 && !isNamedIssuerOf(cert, cert)) nonSelfIssued++;
  }
  return undefined;
}

/**
 * RFC 5280 §6.1 basic path validation of `leaf` to one of `anchors` at `checkDate`: each
 * certificate's signature verifies with its issuer's key, names chain, every certificate
 * (anchor included) is valid at `checkDate`, issuers are CAs allowed to sign certificates within
 * their path length, and no certificate has a critical extension we do not process. Candidates
 * are tried depth first, anchors first; the first path without a problem wins. `leaf` itself is
 * never a trust anchor, and only CA certificates are taken as intermediates.
 */
export function validatePath(leaf: Certificate, options: { anchors: Certificate[]; intermediates?: Certificate[]; checkDate: Date }): PathValidation {
  const anchors: Certificate[] = [];
  for (const a of options.anchors) {
    if (!sameCertificate(a, leaf) && !anchors.some((t) => sameCertificate(t, a))) anchors.push(a);
  }
  if (anchors.length === 0) return { ok: false, reason: 'no trust anchor configured', path: [] };
  const pool: Certificate[] = [];
  for (const c of options.intermediates ?? []) {
    if (sameCertificate(c, leaf) || [...anchors, ...pool].some((t) => sameCertificate(t, c))) continue;
    if (safe(() => basicConstraints(c))?.ca === true) pool.push(c);
  }

  const problems: string[] = [];
  const candidates = [...anchors, ...pool];
  let considered = 0;
  let exhausted = false;
  const search = (path: Certificate[]): Certificate[] | undefined => {
    const cert = path[path.length - 1] as Certificate;
    const aki = safe(() => authorityKeyIdentifier(cert));
    let named = 0;
    for (const candidate of candidates) {
      if (path.includes(candidate) || !isNamedIssuerOf(candidate, cert)) continue;
      named++;
      if (++considered > MAX_PATH_CANDIDATES) {
        exhausted = true;
        return undefined;
      }
      // RFC 5280 §4.2.1.1: the authority key identifier, when both sides have one, must match.
      const ski = aki ? safe(() => subjectKeyIdentifier(candidate)) : undefined;
      if (aki && ski && !bytesEqual(aki, ski)) {
        problems.push(`the authority key identifier of ${describeCertificate(cert)} is not the key identifier of ${describeCertificate(candidate)}`);
        continue;
      }
      const link = linkProblem(cert, candidate);
      if (link) {
        problems.push(link);
        continue;
      }
      const extended = [...path, candidate];
      if (anchors.includes(candidate)) {
        const problem = pathProblem(extended, options.checkDate);
        if (!problem) return extended;
        problems.push(problem);
      } else if (extended.length < MAX_PATH) {
        const found = search(extended);
        if (found) return found;
        if (exhausted) return undefined;
      }
    }
    if (named === 0) problems.push(`no trusted or given CA certificate is named "${safe(() => nameToString(cert.issuer)) ?? '?'}", the issuer of ${describeCertificate(cert)}`);
    return undefined;
  };
  const path = search([leaf]);
  if (!path) {
    const gaveUp = exhausted ? `no path from ${describeCertificate(leaf)} to a trust anchor among the first ${MAX_PATH_CANDIDATES} candidate issuers (too many certificates with the same names)` : undefined;
    return { ok: false, reason: gaveUp ?? problems[0] ?? `no path from ${describeCertificate(leaf)} to a trust anchor`, path: [] };
  }
  const anchor = path[path.length - 1] as Certificate;
  return { ok: true, reason: `chains to ${nameToString(anchor.subject)} at ${options.checkDate.toISOString()}`, path };
}

/**
 * The certificates of `carried` that no certificate of `trusted` vouches for: neither one of them
 * (same bytes) nor signed by one of them or, in turn, by a certificate vouched for this way (issuer
 * name and signature only; validity and CA constraints belong to path validation).
 */
export function unvouchedCertificates(carried: Certificate[], trusted: Certificate[]): Certificate[] {
  const vouched = [...trusted];
  let pending = carried.filter((c) => !vouched.some((t) => sameCertificate(t, c)));
  let progress = true;
  while (pending.length > 0 && progress) {
    progress = false;
    pending = pending.filter((c) => {
      const signed = vouched.some((issuer) => isNamedIssuerOf(issuer, c) && linkProblem(c, issuer) === undefined);
      if (signed) {
        vouched.push(c);
        progress = true;
      }
      return !signed;
    });
  }
  return pending;
}
