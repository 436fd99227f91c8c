/**
 * RFC 5280 §6 path validation with pkijs's CertificateChainValidationEngine: the reference the
 * pkijs oracles of the differential tests (pkijs-tsa-verify.ts, pkijs-tsa-issue.ts) validate with,
 * and the library side of bench/asn1-stack.ts. Production validates paths with
 * lib/crypto/tsa/path.ts (why: the comment at its top). Imports nothing of ours. Test-only.
 */
import * as pkijs from 'pkijs';

/** Outcome of {@link validateCertificateChain}. */
export interface ChainValidation {
  ok: boolean;
  /** Why it failed, or which anchor it chains to. */
  reason: string;
  /** The validated path, leaf first, trust anchor last (empty on failure). */
  path: pkijs.Certificate[];
}

const BASIC_CONSTRAINTS = '2.5.29.19';
// X.520 attribute types (RFC 5280 §4.1.2.4) as OpenSSL abbreviates them.
const SHORT_NAMES: Readonly<Record<string, string>> = {
  '2.5.4.3': 'CN',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.5': 'serialNumber',
};

function isCa(cert: pkijs.Certificate): boolean {
  const bc = cert.extensions?.find((e) => e.extnID === BASIC_CONSTRAINTS)?.parsedValue;
  return bc instanceof pkijs.BasicConstraints && bc.cA === true;
}

function sameCertificate(a: pkijs.Certificate, b: pkijs.Certificate): boolean {
  return Buffer.from(a.tbsView).equals(Buffer.from(b.tbsView));
}

function nameToString(name: pkijs.RelativeDistinguishedNames): string {
  return name.typesAndValues
    .map((tv) => {
      const block = tv.value.valueBlock as { value?: unknown };
      const value = typeof block.value === 'string' ? block.value : Buffer.from(tv.value.toBER()).toString('hex');
      return `${SHORT_NAMES[tv.type] ?? tv.type}=${value}`;
    })
    .join(', ');
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
