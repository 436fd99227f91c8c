/**
 * A small DER writer (X.690 §8, §10, §11) for the issuing side of RFC 3161: the counterpart of the
 * reader in der.ts, with no dependency. Each function returns the complete encoding of one value
 * (identifier, length and contents octets) as a fresh Uint8Array, so values compose by nesting
 * and pre-encoded DER (certificates, Names, serial numbers taken from a certificate) is passed
 * through as it is. Only tag numbers below 31 are written (low tag number form, X.690 §8.1.2.2):
 * RFC 3161, RFC 5652 and RFC 5035 need no others.
 */
import { TAG } from './der.js';

/** Identifier octets: class bits and the constructed bit (X.690 §8.1.2.2, §8.1.2.5). */
const CONSTRUCTED = 0x20;
const CONTEXT = 0x80;

/**
 * Length octets (X.690 §8.1.3): the short form below 128; otherwise the long form with as few
 * octets as possible, which DER requires (X.690 §10.1).
 */
function lengthOctets(length: number): Uint8Array {
  if (!Number.isSafeInteger(length) || length < 0) throw new RangeError(`DER length out of range: ${length}`);
  if (length < 0x80) return Uint8Array.of(length);
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
  return Uint8Array.of(0x80 | bytes.length, ...bytes);
}

function checkIdentifier(identifier: number): void {
  if (!Number.isInteger(identifier) || identifier < 0 || identifier > 0xff || (identifier & 0x1f) === 0x1f) {
    throw new RangeError(`DER identifier octet 0x${identifier.toString(16)} is not a low tag number form`);
  }
}

/**
 * One TLV whose contents are the concatenation of `parts` (each already encoded, or raw contents
 * octets for a primitive type). The definite form is always used (X.690 §10.1).
 */
export function tlv(identifier: number, parts: readonly Uint8Array[]): Uint8Array {
  checkIdentifier(identifier);
  let contentLength = 0;
  for (const part of parts) contentLength += part.byteLength;
  const length = lengthOctets(contentLength);
  const out = new Uint8Array(1 + length.byteLength + contentLength);
  out[0] = identifier;
  out.set(length, 1);
  let offset = 1 + length.byteLength;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

/** SEQUENCE / SEQUENCE OF (X.690 §8.9, §8.10): the components in the order given. */
export function sequence(...components: Uint8Array[]): Uint8Array {
  return tlv(TAG.SEQUENCE, components);
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

/** SET OF in DER: the encodings of the components sorted (X.690 §11.6). `components` is not modified. */
export function setOf(components: readonly Uint8Array[]): Uint8Array {
  return tlv(TAG.SET, [...components].sort(compareDer));
}

/**
 * The components sorted as for {@link setOf}, for a SET OF written under another tag (e.g. the
 * signed attributes' [0] IMPLICIT SET OF Attribute, RFC 5652 §5.3).
 */
export function sortedForSetOf(components: readonly Uint8Array[]): Uint8Array[] {
  return [...components].sort(compareDer);
}

/** [n] EXPLICIT: a constructed context-specific tag around the complete encoding of `inner` (X.690 §8.14.2). */
export function explicit(tagNumber: number, inner: Uint8Array): Uint8Array {
  return tlv(CONTEXT | CONSTRUCTED | tagNumber, [inner]);
}

/**
 * [n] IMPLICIT of a constructed type: the components as contents, under a constructed
 * context-specific tag (X.690 §8.14.3), e.g. SignedData.certificates [0] IMPLICIT CertificateSet.
 */
export function implicitConstructed(tagNumber: number, components: readonly Uint8Array[]): Uint8Array {
  return tlv(CONTEXT | CONSTRUCTED | tagNumber, components);
}

/** [n] IMPLICIT of a primitive type: `contents` as the contents octets under a primitive context tag. */
export function implicitPrimitive(tagNumber: number, contents: Uint8Array): Uint8Array {
  return tlv(CONTEXT | tagNumber, [contents]);
}

/**
 * The same encoding under another identifier octet (IMPLICIT tagging changes only the identifier,
 * X.690 §8.14.3), e.g. the signed attributes between [0] IMPLICIT in SignerInfo and the SET OF tag
 * the signature covers (RFC 5652 §5.4). Both identifiers must use the low tag number form.
 */
export function retag(encoding: Uint8Array, identifier: number): Uint8Array {
  checkIdentifier(identifier);
  const first = encoding[0];
  if (first === undefined || (first & 0x1f) === 0x1f) throw new RangeError('retag: not a low tag number encoding');
  if ((first & CONSTRUCTED) !== (identifier & CONSTRUCTED)) throw new RangeError('retag: IMPLICIT tagging keeps the constructed bit');
  const out = Uint8Array.from(encoding);
  out[0] = identifier;
  return out;
}

/** Contents octets of an INTEGER: minimal two's complement (X.690 §8.3.2). */
function integerContents(value: bigint): Uint8Array {
  if (value === 0n) return Uint8Array.of(0);
  let hex = (value < 0n ? -value : value).toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  const magnitude = Buffer.from(hex, 'hex');
  if (value > 0n) {
    // A set top bit would read as negative: one 0x00 octet in front (§8.3.2 b) allows exactly this.
    return (magnitude[0] as number) & 0x80 ? Uint8Array.of(0, ...magnitude) : new Uint8Array(magnitude);
  }
  // Negative: 2^(8n) - |value| in the fewest octets n whose top bit is set (§8.3.2 a).
  let octets = magnitude.byteLength;
  if (((magnitude[0] as number) & 0x80) !== 0 && !(magnitude[0] === 0x80 && magnitude.subarray(1).every((b) => b === 0))) octets++;
  const twos = (1n << BigInt(octets * 8)) + value;
  return Uint8Array.from(Buffer.from(twos.toString(16).padStart(octets * 2, '0'), 'hex'));
}

/** INTEGER (X.690 §8.3) from a bigint or a safe integer number. */
export function integer(value: bigint | number): Uint8Array {
  if (typeof value === 'number' && !Number.isSafeInteger(value)) throw new RangeError(`INTEGER: ${value} is not a safe integer`);
  return tlv(TAG.INTEGER, [integerContents(BigInt(value))]);
}

/** BOOLEAN: TRUE is 0xFF in DER (X.690 §11.1). */
export function boolean(value: boolean): Uint8Array {
  return Uint8Array.of(TAG.BOOLEAN, 1, value ? 0xff : 0x00);
}

/** NULL: no contents octets (X.690 §8.8). */
export function nullValue(): Uint8Array {
  return Uint8Array.of(TAG.NULL, 0);
}

/** OCTET STRING, primitive as DER requires (X.690 §10.2, §8.7). */
export function octetString(bytes: Uint8Array): Uint8Array {
  return tlv(TAG.OCTET_STRING, [bytes]);
}

const utf8 = new TextEncoder();

/** UTF8String, primitive (X.690 §10.2, §8.23.10). */
export function utf8String(text: string): Uint8Array {
  return tlv(TAG.UTF8_STRING, [utf8.encode(text)]);
}

const DOTTED_OID = /^[0-2](\.(0|[1-9][0-9]*))+$/;

/**
 * OBJECT IDENTIFIER from dotted form (X.690 §8.19): the first two arcs combined as 40·X + Y
 * (§8.19.4, X ≤ 2, Y < 40 unless X = 2), each subidentifier base 128 with the high bit set on every
 * octet but the last and no leading 0x80 octet (§8.19.2).
 */
export function oid(dotted: string): Uint8Array {
  if (!DOTTED_OID.test(dotted)) throw new RangeError(`OBJECT IDENTIFIER: "${dotted}" is not in dotted form`);
  const arcs = dotted.split('.').map((a) => BigInt(a));
  const [first, second] = arcs as [bigint, bigint];
  if (first < 2n && second >= 40n) throw new RangeError(`OBJECT IDENTIFIER: "${dotted}": the second arc must be below 40`);
  const out: number[] = [];
  for (const sub of [first * 40n + second, ...arcs.slice(2)]) {
    const septets: number[] = [];
    for (let n = sub; ; n >>= 7n) {
      septets.unshift(Number(n & 0x7fn) | (septets.length > 0 ? 0x80 : 0));
      if (n < 0x80n) break;
    }
    out.push(...septets);
  }
  return tlv(TAG.OID, [Uint8Array.from(out)]);
}

const pad2 = (n: number): string => String(n).padStart(2, '0');

/**
 * GeneralizedTime in the DER form (X.690 §11.7): `YYYYMMDDHHMMSS[.f...]Z`, in UTC, the fraction
 * without trailing zeros and left out when zero. RFC 3161 §2.4.2 asks the same of genTime. A Date
 * holds milliseconds, so the fraction has at most three digits; e.g. 5 ms is `.005`, 50 ms `.05`,
 * 500 ms `.5`.
 */
export function generalizedTime(date: Date): Uint8Array {
  const ms = date.getTime();
  if (!Number.isFinite(ms)) throw new RangeError('GeneralizedTime: invalid date');
  const year = date.getUTCFullYear();
  // Four digits of year (X.680 §46.2 a, the calendar date of ISO 8601 basic format).
  if (year < 0 || year > 9999) throw new RangeError(`GeneralizedTime: year ${year} does not have four digits`);
  let text =
    String(year).padStart(4, '0') +
    pad2(date.getUTCMonth() + 1) +
    pad2(date.getUTCDate()) +
    pad2(date.getUTCHours()) +
    pad2(date.getUTCMinutes()) +
    pad2(date.getUTCSeconds());
  const millis = date.getUTCMilliseconds();
  if (millis !== 0) text += `.${String(millis).padStart(3, '0').replace(/0+$/, '')}`;
  text += 'Z';
  return tlv(TAG.GENERALIZED_TIME, [Buffer.from(text, 'latin1')]);
}

/**
 * BIT STRING of a named bit list (X.690 §8.6, §11.2.2): bit 0 is the most significant bit of the
 * first octet; trailing zero bits are removed, so the unused-bits count is that of the last set bit,
 * and no bits set is the empty bit string (a single 0x00 octet).
 */
export function namedBitString(bits: readonly number[]): Uint8Array {
  if (bits.length === 0) return Uint8Array.of(TAG.BIT_STRING, 1, 0);
  for (const bit of bits) if (!Number.isInteger(bit) || bit < 0) throw new RangeError(`BIT STRING: bad bit number ${bit}`);
  const highest = Math.max(...bits);
  const bytes = new Uint8Array(Math.floor(highest / 8) + 1);
  for (const bit of bits) bytes[bit >> 3] = (bytes[bit >> 3] as number) | (0x80 >> (bit & 7));
  return tlv(TAG.BIT_STRING, [Uint8Array.of(7 - (highest & 7)), bytes]);
}
