/**
 * The certificate checks of the pkijs oracles of the differential tests (pkijs-tsa-verify.ts,
 * pkijs-tsa-issue.ts), written with pkijs and asn1js: RFC 5280 §6 path validation with pkijs's
 * CertificateChainValidationEngine (also the library side of bench/asn1-stack.ts) and the
 * RFC 3161 §2.3 usage check. Production has one of each in lib/crypto/tsa (path.ts, why at its
 * top; x509-verify.ts). Imports nothing of ours. Test-only.
 */
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { nameToString } from './pkijs-common.js';

/** Outcome of {@link validateCertificateChain}. */
export interface ChainValidation {
  ok: boolean;
  /** Why it failed, or which anchor it chains to. */
  reason: string;
  /** The validated path, leaf first, trust anchor last (empty on failure). */
  path: pkijs.Certificate[];
}

const BASIC_CONSTRAINTS = '2.5.29.19';
const KEY_USAGE = '2.5.29.15';
const EXT_KEY_USAGE = '2.5.29.37';
const KP_TIME_STAMPING = '1.3.6.1.5.5.7.3.8';

function isCa(cert: pkijs.Certificate): boolean {
  const bc = cert.extensions?.find((e) => e.extnID === BASIC_CONSTRAINTS)?.parsedValue;
  return bc instanceof pkijs.BasicConstraints && bc.cA === true;
}

function sameCertificate(a: pkijs.Certificate, b: pkijs.Certificate): boolean {
  return Buffer.from(a.tbsView).equals(Buffer.from(b.tbsView));
}

/**
 * Path validation of `leaf` to one of `anchors` at `checkDate` (signatures, validity periods, name
 * chaining, CA flags). The inputs are cleaned first because the engine takes the last certificate
 * as the leaf after dropping duplicates, and treats a leaf that is itself listed as trusted as a
 * complete path.
 */
export async function validateCertificateChain(
  leaf: pkijs.Certificate,
  options: { anchors: pkijs.Certificate[]; intermediates?: pkijs.Certificate[]; checkDate: Date },
): Promise<ChainValidation> {
  const trustedCerts: pkijs.Certificate[] = [];
  for (const a of options.anchors) {
    if (!sameCertificate(a, leaf) && !trustedCerts.some((t) => sameCertificate(t, a))) trustedCerts.push(a);
  }
  if (trustedCerts.length === 0) return { ok: false, reason: 'no trust anchor configured', path: [] };
  const certs: pkijs.Certificate[] = [];
  for (const c of options.intermediates ?? []) {
    if (!isCa(c) || sameCertificate(c, leaf)) continue;
    if ([...trustedCerts, ...certs].some((t) => sameCertificate(t, c))) continue;
    certs.push(c);
  }
  certs.push(leaf);
  try {
    const engine = new pkijs.CertificateChainValidationEngine({ trustedCerts, certs, checkDate: options.checkDate });
    const result = await engine.verify();
    const path = result.certificatePath ?? [];
    const anchor = path[path.length - 1];
    if (!result.result || !anchor) return { ok: false, reason: result.resultMessage || 'no valid certificate path', path: [] };
    return { ok: true, reason: `chains to ${nameToString(anchor.subject)} at ${options.checkDate.toISOString()}`, path };
  } catch (err) {
    const message = err instanceof Error ? err.message : (err as { resultMessage?: string }).resultMessage;
    return { ok: false, reason: message ?? 'no valid certificate path', path: [] };
  }
}

/** The named bits set in a BIT STRING (X.690 §8.6). */
export function bitsOf(bitString: asn1js.BitString): number[] {
  const bytes = bitString.valueBlock.valueHexView;
  const unused = bitString.valueBlock.unusedBits;
  const out: number[] = [];
  for (let i = 0; i < bytes.length * 8 - unused; i++) {
    if (((bytes[i >> 3] ?? 0) & (0x80 >> (i & 7))) !== 0) out.push(i);
  }
  return out;
}

/**
 * Why `cert` may not sign time-stamp tokens, or undefined when it may. RFC 3161 §2.3: exactly one
 * ExtendedKeyUsage extension, critical, whose only KeyPurposeId is id-kp-timeStamping. Like
 * OpenSSL, a KeyUsage, if present, may only assert digitalSignature and/or nonRepudiation.
 */
export function timeStampingUsageProblem(cert: pkijs.Certificate): string | undefined {
  const ekus = (cert.extensions ?? []).filter((e) => e.extnID === EXT_KEY_USAGE);
  const eku = ekus[0];
  if (!eku) return 'the certificate has no ExtendedKeyUsage extension (RFC 3161 §2.3 requires id-kp-timeStamping)';
  if (ekus.length > 1) return 'the certificate has more than one ExtendedKeyUsage extension (RFC 3161 §2.3)';
  const parsed = eku.parsedValue;
  if (!(parsed instanceof pkijs.ExtKeyUsage)) return 'the ExtendedKeyUsage extension cannot be parsed';
  if (!parsed.keyPurposes.includes(KP_TIME_STAMPING)) return 'the ExtendedKeyUsage does not include id-kp-timeStamping (RFC 3161 §2.3)';
  if (parsed.keyPurposes.length !== 1) {
    return `the ExtendedKeyUsage must contain only id-kp-timeStamping (RFC 3161 §2.3), found ${parsed.keyPurposes.join(', ')}`;
  }
  if (!eku.critical) return 'the ExtendedKeyUsage extension is not marked critical (RFC 3161 §2.3)';
  const ku = (cert.extensions ?? []).find((e) => e.extnID === KEY_USAGE)?.parsedValue;
  if (ku !== undefined) {
    if (!(ku instanceof asn1js.BitString)) return 'the KeyUsage extension cannot be parsed';
    const bits = bitsOf(ku);
    // Bit 0 digitalSignature, bit 1 nonRepudiation (RFC 5280 §4.2.1.3).
    if (!bits.some((b) => b === 0 || b === 1) || bits.some((b) => b > 1)) {
      return 'the KeyUsage must assert only digitalSignature and/or nonRepudiation';
    }
  }
  return undefined;
}
