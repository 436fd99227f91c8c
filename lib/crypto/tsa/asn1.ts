/**
 * Small ASN.1 helpers and object identifiers shared by the TSA modules (internal to `tsa/`).
 */
import { createHash, randomBytes } from 'node:crypto';
import * as asn1js from 'asn1js';
import type * as pkijs from 'pkijs';

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
  basicConstraints: '2.5.29.19',
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

/** Digest with node:crypto (synchronous and faster than WebCrypto for small inputs). */
export function digest(name: HashName, data: Uint8Array): Uint8Array {
  const node = Object.values(HASH_BY_OID).find((h) => h.name === name)?.node;
  if (!node) throw new Error(`unknown hash ${name}`);
  return new Uint8Array(createHash(node).update(data).digest());
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

/**
 * A fresh ArrayBuffer holding exactly these bytes (pkijs and asn1js want ArrayBuffer). Copied
 * explicitly: `Buffer#slice` shares memory, and a Buffer's `.buffer` may be a larger pool.
 */
export function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy.buffer;
}

/**
 * A uniformly random positive integer of at most `bits` bits (never 0), e.g. for serial numbers
 * (RFC 3161 §2.4.2, RFC 5280 §4.1.2.2 require positive integers) and nonces.
 */
export function randomPositiveBigInt(bits: number): bigint {
  for (;;) {
    const bytes = randomBytes(Math.ceil(bits / 8));
    const extra = bytes.length * 8 - bits;
    if (extra > 0) bytes[0] = (bytes[0] ?? 0) & (0xff >> extra);
    const value = BigInt(`0x${bytes.toString('hex')}`);
    if (value > 0n) return value;
  }
}

/** A DER INTEGER holding `value` (minimal two's-complement encoding, X.690 §8.3). */
export function integerFromBigInt(value: bigint): asn1js.Integer {
  return asn1js.Integer.fromBigInt(value);
}

/**
 * A DER BIT STRING with the given named bits set (X.690 §11.2.2: trailing zero bits removed, so
 * the unused-bits count is that of the last set bit). Bit 0 is the most significant bit of the
 * first octet, as in RFC 5280 KeyUsage and RFC 3161 PKIFailureInfo.
 */
export function namedBitString(bits: readonly number[]): asn1js.BitString {
  if (bits.length === 0) return new asn1js.BitString({ valueHex: new ArrayBuffer(0), unusedBits: 0 });
  const highest = Math.max(...bits);
  const bytes = new Uint8Array(Math.floor(highest / 8) + 1);
  for (const bit of bits) bytes[bit >> 3] = (bytes[bit >> 3] ?? 0) | (0x80 >> (bit & 7));
  return new asn1js.BitString({ valueHex: bytes.buffer, unusedBits: 7 - (highest & 7) });
}

/** The named bits set in a BIT STRING (inverse of {@link namedBitString}). */
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
 * Orders DER encodings as X.690 §11.6 requires for the components of a SET OF: ascending as octet
 * strings, the shorter one padded with trailing zero octets.
 */
export function compareDer(a: Uint8Array, b: Uint8Array): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Parses one complete BER/DER element; throws when the bytes are not exactly one element. */
export function parseAsn1(der: Uint8Array, what: string): asn1js.AsnType {
  const parsed = asn1js.fromBER(toArrayBuffer(der));
  if (parsed.offset === -1 || parsed.result.error) throw new Error(`${what}: not valid ASN.1`);
  if (parsed.offset !== der.byteLength) throw new Error(`${what}: trailing bytes after the ASN.1 value`);
  return parsed.result;
}

const SHORT_NAMES: Readonly<Record<string, string>> = {
  [OID.commonName]: 'CN',
  [OID.countryName]: 'C',
  [OID.localityName]: 'L',
  [OID.stateOrProvinceName]: 'ST',
  [OID.organizationName]: 'O',
  [OID.organizationalUnitName]: 'OU',
  [OID.serialNumber]: 'serialNumber',
};

/** A readable distinguished name, e.g. `O=sigstore.dev, CN=sigstore-tsa` (display only). */
export function nameToString(name: pkijs.RelativeDistinguishedNames): string {
  return name.typesAndValues
    .map((tv) => {
      const key = SHORT_NAMES[tv.type] ?? tv.type;
      const block = tv.value.valueBlock as { value?: unknown };
      const value = typeof block.value === 'string' ? block.value : toHex(tv.value.toBER());
      return `${key}=${value}`;
    })
    .join(', ');
}
