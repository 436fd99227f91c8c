/**
 * Small ASN.1 helpers and object identifiers shared by the TSA modules (internal to `tsa/`).
 */
import { randomBytes } from 'node:crypto';
import * as asn1js from 'asn1js';
import type * as pkijs from 'pkijs';
import { SHORT_NAMES, toHex } from './identifiers.js';

// The object identifiers and digest helpers live in the dependency-free der.ts (the verification
// side uses them without asn1js); re-exported here for the issuing side.
export { OID, type HashName, bytesEqual, digest, hashByOid, toHex } from './identifiers.js';
// The X.690 §11.6 SET OF order lives with the DER writer.
export { compareDer } from './der-writer.js';

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

/** Parses one complete BER/DER element; throws when the bytes are not exactly one element. */
export function parseAsn1(der: Uint8Array, what: string): asn1js.AsnType {
  const parsed = asn1js.fromBER(toArrayBuffer(der));
  if (parsed.offset === -1 || parsed.result.error) throw new Error(`${what}: not valid ASN.1`);
  if (parsed.offset !== der.byteLength) throw new Error(`${what}: trailing bytes after the ASN.1 value`);
  return parsed.result;
}

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
