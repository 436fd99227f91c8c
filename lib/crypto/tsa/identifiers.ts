/**
 * The object identifiers, attribute short names and digest algorithms of RFC 3161, RFC 5652,
 * RFC 5035 and RFC 5280 that the TSA modules share, and two byte helpers. Split from der.ts (the
 * reader) by concern. No dependency beyond node:crypto.
 */
import { createHash } from 'node:crypto';

/** Object identifiers used by RFC 3161, RFC 5652, RFC 5035 and RFC 5280. */
export const OID = {
  // RFC 5754 §2 / RFC 3279 §2.2: digest algorithms.
  sha1: '1.3.14.3.2.26',
  sha256: '2.16.840.1.101.3.4.2.1',
  sha384: '2.16.840.1.101.3.4.2.2',
  sha512: '2.16.840.1.101.3.4.2.3',
  // RFC 5652 §3 / §5.1, RFC 3161 §2.4.2.
  signedData: '1.2.840.113549.1.7.2',
  ctTSTInfo: '1.2.840.113549.1.9.16.1.4',
  // RFC 5652 §11.1, §11.2: signed attributes.
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  // RFC 2634 §5.4 (ESSCertID, SHA-1) and RFC 5035 §3 (ESSCertIDv2).
  signingCertificate: '1.2.840.113549.1.9.16.2.12',
  signingCertificateV2: '1.2.840.113549.1.9.16.2.47',
  // RFC 5280 §4.2.1.12: id-kp-timeStamping.
  kpTimeStamping: '1.3.6.1.5.5.7.3.8',
  // RFC 5280 §4.2.1: certificate extensions.
  authorityKeyIdentifier: '2.5.29.35',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  certificatePolicies: '2.5.29.32',
  extKeyUsage: '2.5.29.37',
  // RFC 5480 §2.1.1, RFC 3279 §2.3.1: public key algorithms and curves.
  ecPublicKey: '1.2.840.10045.2.1',
  rsaEncryption: '1.2.840.113549.1.1.1',
  secp256r1: '1.2.840.10045.3.1.7',
  secp384r1: '1.3.132.0.34',
  secp521r1: '1.3.132.0.35',
  // RFC 5280 Appendix A.1: naming attributes.
  commonName: '2.5.4.3',
  countryName: '2.5.4.6',
  localityName: '2.5.4.7',
  stateOrProvinceName: '2.5.4.8',
  organizationName: '2.5.4.10',
  organizationalUnitName: '2.5.4.11',
  serialNumber: '2.5.4.5',
} as const;

/** Short names of the naming attributes, for display (RFC 4514 §3). */
export const SHORT_NAMES: Readonly<Record<string, string>> = {
  [OID.commonName]: 'CN',
  [OID.countryName]: 'C',
  [OID.localityName]: 'L',
  [OID.stateOrProvinceName]: 'ST',
  [OID.organizationName]: 'O',
  [OID.organizationalUnitName]: 'OU',
  [OID.serialNumber]: 'serialNumber',
};

/** Digest algorithms this module understands, by WebCrypto name. */
export type HashName = 'SHA-1' | 'SHA-256' | 'SHA-384' | 'SHA-512';

const HASH_BY_OID: Readonly<Record<string, { name: HashName; node: string; length: number }>> = {
  [OID.sha1]: { name: 'SHA-1', node: 'sha1', length: 20 },
  [OID.sha256]: { name: 'SHA-256', node: 'sha256', length: 32 },
  [OID.sha384]: { name: 'SHA-384', node: 'sha384', length: 48 },
  [OID.sha512]: { name: 'SHA-512', node: 'sha512', length: 64 },
};

/** The digest algorithm for an OID, or undefined for an unknown one. */
export function hashByOid(oid: string): { name: HashName; length: number } | undefined {
  const h = HASH_BY_OID[oid];
  return h ? { name: h.name, length: h.length } : undefined;
}

/** node:crypto's name of a digest (`sha256`, …). */
export function nodeHashName(name: HashName): string {
  return name.replace('-', '').toLowerCase();
}

/** Digest with node:crypto (synchronous and faster than WebCrypto for small inputs). */
export function digest(name: HashName, data: Uint8Array): Uint8Array {
  return new Uint8Array(createHash(nodeHashName(name)).update(data).digest());
}

/** Lower-case hex of bytes. */
export function toHex(bytes: Uint8Array | ArrayBuffer): string {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  return Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString('hex');
}

/** Equality of two byte strings; not constant-time, so for public data only. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}
