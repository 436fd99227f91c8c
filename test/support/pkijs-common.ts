/**
 * What the pkijs oracles of the differential tests (pkijs-tsa-verify.ts, pkijs-tsa-issue.ts,
 * pkijs-chain.ts) share: object identifiers, digests, DER and PEM handling, certificate loading.
 * Written here on pkijs, asn1js and node:crypto alone, and never imported from lib/: an oracle
 * that shared the helpers of the code it checks would share their bugs (an OID, the SET OF
 * order, the DER a certificate hash is taken over). Test-only.
 */
import { createHash, randomBytes } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

/** The object identifiers the oracles read or write (RFC 5754, 5652, 3161, 2634, 5035, 5280). */
export const OID = {
  sha1: '1.3.14.3.2.26',
  sha256: '2.16.840.1.101.3.4.2.1',
  sha384: '2.16.840.1.101.3.4.2.2',
  sha512: '2.16.840.1.101.3.4.2.3',
  signedData: '1.2.840.113549.1.7.2',
  ctTSTInfo: '1.2.840.113549.1.9.16.1.4',
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  signingCertificate: '1.2.840.113549.1.9.16.2.12',
  signingCertificateV2: '1.2.840.113549.1.9.16.2.47',
  subjectKeyIdentifier: '2.5.29.14',
  subjectAltName: '2.5.29.17',
} as const;

export type HashName = 'SHA-1' | 'SHA-256' | 'SHA-384' | 'SHA-512';

const HASHES: Readonly<Record<string, { name: HashName; length: number }>> = {
  [OID.sha1]: { name: 'SHA-1', length: 20 },
  [OID.sha256]: { name: 'SHA-256', length: 32 },
  [OID.sha384]: { name: 'SHA-384', length: 48 },
  [OID.sha512]: { name: 'SHA-512', length: 64 },
};

/** The digest algorithm of an OID, or undefined for an unknown one. */
export function hashByOid(oid: string): { name: HashName; length: number } | undefined {
  return HASHES[oid];
}

export function digest(name: HashName, data: Uint8Array): Uint8Array {
  return new Uint8Array(createHash(name.replace('-', '').toLowerCase()).update(data).digest());
}

export function toHex(bytes: Uint8Array | ArrayBuffer): string {
  return Buffer.from(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes)).toString('hex');
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a).equals(Buffer.from(b));
}

/** A fresh ArrayBuffer of exactly these bytes (what pkijs and asn1js take). */
export function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return Uint8Array.from(bytes).buffer;
}

/** One complete BER element; throws when the bytes are not exactly one. */
export function parseAsn1(der: Uint8Array, what: string): asn1js.AsnType {
  const parsed = asn1js.fromBER(toArrayBuffer(der));
  if (parsed.offset === -1 || parsed.result.error) throw new Error(`${what}: not valid ASN.1`);
  if (parsed.offset !== der.byteLength) throw new Error(`${what}: trailing bytes after the ASN.1 value`);
  return parsed.result;
}

/** X.690 §11.6: SET OF components ascending as octet strings, the shorter padded with zero octets. */
export function compareDer(a: Uint8Array, b: Uint8Array): number {
  const length = Math.max(a.length, b.length);
  const padded = (x: Uint8Array) => Buffer.concat([Buffer.from(x), Buffer.alloc(length - x.length)]);
  return Buffer.compare(padded(a), padded(b));
}

/** A positive integer of at most `bits` random bits (serial numbers, nonces). */
export function randomPositiveBigInt(bits: number): bigint {
  for (;;) {
    const value = BigInt(`0x${randomBytes(Math.ceil(bits / 8)).toString('hex')}`) >> BigInt(Math.ceil(bits / 8) * 8 - bits);
    if (value > 0n) return value;
  }
}

/** A BIT STRING with the given named bits set, trailing zero bits removed (X.690 §11.2.2). */
export function namedBitString(bits: readonly number[]): asn1js.BitString {
  const highest = Math.max(...bits);
  const bytes = new Uint8Array((highest >> 3) + 1);
  for (const bit of bits) bytes[bit >> 3]! |= 0x80 >> (bit & 7);
  return new asn1js.BitString({ valueHex: bytes.buffer, unusedBits: 7 - (highest & 7) });
}

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

/** A distinguished name for display, e.g. `O=sigstore.dev, CN=sigstore-tsa`. */
export function nameToString(name: pkijs.RelativeDistinguishedNames): string {
  return name.typesAndValues
    .map((tv) => {
      const block = tv.value.valueBlock as { value?: unknown };
      const value = typeof block.value === 'string' ? block.value : toHex(tv.value.toBER());
      return `${SHORT_NAMES[tv.type] ?? tv.type}=${value}`;
    })
    .join(', ');
}

// ---------------------------------------------------------------------------------------------
// PEM and certificates

/** PEM of a certificate's DER (RFC 7468: base64 in lines of 64). */
export function derToPem(der: Uint8Array): string {
  return `-----BEGIN CERTIFICATE-----\n${(Buffer.from(der).toString('base64').match(/.{1,64}/g) ?? []).join('\n')}\n-----END CERTIFICATE-----\n`;
}

/** The DER of every CERTIFICATE block of a PEM text, in order; throws for a body that is not base64. */
function pemCertificates(text: string): Uint8Array[] {
  return [...text.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g)].map((m) => {
    const body = (m[1] ?? '').replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(body) || body.length % 4 !== 0) throw new Error('a CERTIFICATE block is not valid base64');
    return new Uint8Array(Buffer.from(body, 'base64'));
  });
}

// The DER each certificate was read from: ESSCertID hashes are over those exact bytes.
const derOf = new WeakMap<pkijs.Certificate, Uint8Array>();

export function rememberCertificateDer(cert: pkijs.Certificate, der: Uint8Array): void {
  derOf.set(cert, der);
}

/** The bytes a certificate was read from, or its encoding by pkijs. */
export function certificateDer(cert: pkijs.Certificate): Uint8Array {
  return derOf.get(cert) ?? new Uint8Array(cert.toSchema().toBER());
}

export function certificateToPem(cert: pkijs.Certificate): string {
  return derToPem(certificateDer(cert));
}

/** One certificate from PEM (the first block) or DER. */
export function parseCertificate(input: string | Uint8Array): pkijs.Certificate {
  const der = typeof input === 'string' ? pemCertificates(input)[0] : input;
  if (!der) throw new Error('no CERTIFICATE block found');
  let cert: pkijs.Certificate;
  try {
    cert = new pkijs.Certificate({ schema: parseAsn1(der, 'certificate') });
  } catch {
    throw new Error('not an X.509 certificate');
  }
  derOf.set(cert, der);
  return cert;
}

// The roots are the same PEM texts on every call (bench/asn1-stack.ts times the verifier per token).
const parsedPem = new Map<string, pkijs.Certificate[]>();

/** Every certificate of a PEM text, in order. */
export function parseCertificates(pemText: string): pkijs.Certificate[] {
  let certs = parsedPem.get(pemText);
  if (!certs) parsedPem.set(pemText, (certs = pemCertificates(pemText).map((der) => parseCertificate(der))));
  return certs;
}

/** The subjectKeyIdentifier extension's key id (RFC 5280 §4.2.1.2), if present. */
export function subjectKeyIdentifier(cert: pkijs.Certificate): Uint8Array | undefined {
  const parsed = cert.extensions?.find((e) => e.extnID === OID.subjectKeyIdentifier)?.parsedValue;
  return parsed instanceof asn1js.OctetString ? new Uint8Array(parsed.valueBlock.valueHexView) : undefined;
}
