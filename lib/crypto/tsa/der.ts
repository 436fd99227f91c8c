/**
 * A small strict DER reader (X.690 §8 and §10) for the verification side of RFC 3161 (the object
 * identifiers and digest helpers it once held are identifiers.ts's). No dependency.
 *
 * Strict means: definite lengths only, minimal length and tag encodings, no trailing bytes,
 * primitive encodings for strings, minimal INTEGERs, DER BOOLEANs, and bounds checked everywhere.
 * Anything else throws {@link DerError}. Values are views into the input (never copies).
 */
import { toHex } from './identifiers.js';

// ---------------------------------------------------------------------------------------------
// Reader

/** Thrown for input that is not strict DER or not of the expected shape. */
export class DerError extends Error {}

/** Universal tags (X.690 §8.4, X.680 §8.6) as full identifier octets. */
export const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  NUMERIC_STRING: 0x12,
  PRINTABLE_STRING: 0x13,
  TELETEX_STRING: 0x14,
  IA5_STRING: 0x16,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  VISIBLE_STRING: 0x1a,
  UNIVERSAL_STRING: 0x1c,
  BMP_STRING: 0x1e,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

/** Tag classes (X.690 §8.1.2.2). */
export const CLASS = { universal: 0, application: 1, context: 2, private: 3 } as const;

/** Nesting depth beyond which {@link DerElement.children} refuses to descend. */
export const MAX_DEPTH = 32;

/** One TLV; `der` is the whole encoding, `value` its contents octets (views into the input). */
export interface DerElement {
  /** Tag class: 0 universal, 1 application, 2 context-specific, 3 private. */
  cls: number;
  constructed: boolean;
  /** Tag number (any size, X.690 §8.1.2.4). */
  tagNumber: number;
  /** The first identifier octet (class, constructed bit and low tag number), for quick matching. */
  tag: number;
  der: Uint8Array;
  value: Uint8Array;
  depth: number;
}

/**
 * Elements this process has read (one increment per TLV). Work on an attacker's token must grow
 * linearly with its size: tests count this rather than time a clock (a loaded machine stretches
 * the clock, not the work).
 */
let elementsRead = 0;

/** How many DER elements this process has read so far (see `elementsRead`). */
export function derElementsRead(): number {
  return elementsRead;
}

/** Reads one element at `offset` of `buf`, bounded by `end`. */
function readElement(buf: Uint8Array, offset: number, end: number, depth: number): DerElement {
  elementsRead += 1;
  if (depth > MAX_DEPTH) throw new DerError(`nested deeper than ${MAX_DEPTH} levels`);
  let pos = offset;
  if (pos >= end) throw new DerError('truncated: missing identifier octet');
  const first = buf[pos++] as number;
  const cls = first >> 6;
  const constructed = (first & 0x20) !== 0;
  let tagNumber = first & 0x1f;
  if (tagNumber === 0x1f) {
    // High tag number form (X.690 §8.1.2.4): base-128, no leading 0x80, only for numbers >= 31.
    tagNumber = 0;
    for (let i = 0; ; i++) {
      if (pos >= end) throw new DerError('truncated: tag number');
      const b = buf[pos++] as number;
      if (i === 0 && b === 0x80) throw new DerError('non-minimal tag number');
      if (i >= 3) throw new DerError('tag number too large');
      tagNumber = tagNumber * 128 + (b & 0x7f);
      if ((b & 0x80) === 0) break;
    }
    if (tagNumber < 0x1f) throw new DerError('non-minimal tag number');
  }
  if (pos >= end) throw new DerError('truncated: missing length');
  const l0 = buf[pos++] as number;
  let length: number;
  if (l0 < 0x80) {
    length = l0;
  } else if (l0 === 0x80) {
    throw new DerError('indefinite length (BER, not DER)');
  } else {
    const n = l0 & 0x7f;
    if (n > 4) throw new DerError('length too large');
    if (pos + n > end) throw new DerError('truncated: length octets');
    if (buf[pos] === 0) throw new DerError('non-minimal length');
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + (buf[pos++] as number);
    if (length < 0x80) throw new DerError('non-minimal length');
  }
  if (length > end - pos) throw new DerError('truncated: the value is longer than its container');
  return {
    cls,
    constructed,
    tagNumber,
    tag: first,
    der: buf.subarray(offset, pos + length),
    value: buf.subarray(pos, pos + length),
    depth,
  };
}

/** Decodes exactly one element filling all of `buf`. */
export function decodeDer(buf: Uint8Array, what = 'value'): DerElement {
  let el: DerElement;
  try {
    el = readElement(buf, 0, buf.byteLength, 0);
  } catch (err) {
    throw new DerError(`${what}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (el.der.byteLength !== buf.byteLength) throw new DerError(`${what}: trailing bytes after the DER value`);
  return el;
}

/**
 * Decodes the one element at the start of `buf` and returns it with what follows it, for a value
 * in a fixed-size slot padded after its end (the /Contents of a PDF signature, PAdES).
 */
export function decodeDerPrefix(buf: Uint8Array, what = 'value'): { element: DerElement; rest: Uint8Array } {
  let el: DerElement;
  try {
    el = readElement(buf, 0, buf.byteLength, 0);
  } catch (err) {
    throw new DerError(`${what}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return { element: el, rest: buf.subarray(el.der.byteLength) };
}

/** The elements inside a constructed element, in order. */
export function children(el: DerElement): DerElement[] {
  if (!el.constructed) throw new DerError('expected a constructed element');
  const out: DerElement[] = [];
  const v = el.value;
  let pos = 0;
  while (pos < v.byteLength) {
    const child = readElement(v, pos, v.byteLength, el.depth + 1);
    out.push(child);
    pos += child.der.byteLength;
  }
  return out;
}

/**
 * Walks every constructed element below `el`, so that a structural error anywhere (indefinite or
 * non-minimal length, overrun, nesting too deep) is found even in parts that are never decoded
 * further. Contents of primitive elements (e.g. OCTET STRING) are not entered.
 */
export function checkStructure(el: DerElement): void {
  if (!el.constructed) return;
  for (const child of children(el)) checkStructure(child);
}

/** Checks the full identifier octet (universal tags below 31 and context tags below 31). */
export function expectTag(el: DerElement | undefined, tag: number, what: string): DerElement {
  if (!el) throw new DerError(`${what}: missing`);
  if (el.tag !== tag || el.tagNumber >= 0x1f) throw new DerError(`${what}: unexpected tag 0x${el.tag.toString(16)}`);
  return el;
}

/** Whether `el` is the context-specific tag [n], constructed or not as given. */
export function isContext(el: DerElement | undefined, n: number, constructed: boolean): el is DerElement {
  return el !== undefined && el.cls === CLASS.context && el.tagNumber === n && el.constructed === constructed;
}

/** Children of a SEQUENCE (or of another constructed tag when `tag` is given). */
export function sequence(el: DerElement | undefined, what: string, tag: number = TAG.SEQUENCE): DerElement[] {
  return children(expectTag(el, tag, what));
}

/** A cursor over the children of a constructed element, for optional and tagged components. */
export class DerCursor {
  private i = 0;
  constructor(
    private readonly items: DerElement[],
    private readonly what: string,
  ) {}

  /** The next element without consuming it. */
  peek(): DerElement | undefined {
    return this.items[this.i];
  }

  /** The next element; throws when there is none. */
  next(component: string): DerElement {
    const el = this.items[this.i++];
    if (!el) throw new DerError(`${this.what}: missing ${component}`);
    return el;
  }

  /** Consumes and returns the next element if `test` accepts it. */
  optional(test: (el: DerElement) => boolean): DerElement | undefined {
    const el = this.items[this.i];
    if (el && test(el)) {
      this.i++;
      return el;
    }
    return undefined;
  }

  /** Throws when elements are left over. */
  end(): void {
    if (this.i !== this.items.length) throw new DerError(`${this.what}: unexpected extra components`);
  }
}

// ---------------------------------------------------------------------------------------------
// Primitive values

function primitive(el: DerElement | undefined, tag: number, what: string): Uint8Array {
  return expectTag(el, tag, what).value;
}

/** INTEGER as bigint (X.690 §8.3: two's complement, minimal). */
export function readInteger(el: DerElement | undefined, what: string, tag: number = TAG.INTEGER): bigint {
  return integerValue(primitive(el, tag, what), what);
}

/** Decodes INTEGER contents octets. */
export function integerValue(v: Uint8Array, what: string): bigint {
  if (v.byteLength === 0) throw new DerError(`${what}: empty INTEGER`);
  const b0 = v[0] as number;
  if (v.byteLength > 1) {
    const b1 = v[1] as number;
    if ((b0 === 0x00 && b1 < 0x80) || (b0 === 0xff && b1 >= 0x80)) throw new DerError(`${what}: non-minimal INTEGER`);
  }
  let n = BigInt(`0x${toHex(v)}`);
  if (b0 >= 0x80) n -= 1n << BigInt(v.byteLength * 8);
  return n;
}

/** A small non-negative INTEGER as a number. */
export function readSmallInteger(el: DerElement | undefined, what: string, tag: number = TAG.INTEGER): number {
  const n = readInteger(el, what, tag);
  if (n < 0n || n > 0x7fffffffn) throw new DerError(`${what}: INTEGER out of range`);
  return Number(n);
}

/** BOOLEAN (X.690 §11.1: FALSE is 0x00, TRUE is 0xFF). */
export function readBoolean(el: DerElement | undefined, what: string): boolean {
  const v = primitive(el, TAG.BOOLEAN, what);
  if (v.byteLength !== 1 || (v[0] !== 0x00 && v[0] !== 0xff)) throw new DerError(`${what}: not a DER BOOLEAN`);
  return v[0] === 0xff;
}

/** NULL. */
export function readNull(el: DerElement | undefined, what: string): void {
  if (primitive(el, TAG.NULL, what).byteLength !== 0) throw new DerError(`${what}: NULL with contents`);
}

/** OCTET STRING contents (primitive only: X.690 §10.2). */
export function readOctetString(el: DerElement | undefined, what: string, tag: number = TAG.OCTET_STRING): Uint8Array {
  return primitive(el, tag, what);
}

/** BIT STRING: the bytes and the number of unused bits in the last one (X.690 §8.6, §11.2). */
export function readBitString(el: DerElement | undefined, what: string, tag: number = TAG.BIT_STRING): { bytes: Uint8Array; unusedBits: number } {
  const v = primitive(el, tag, what);
  if (v.byteLength === 0) throw new DerError(`${what}: empty BIT STRING`);
  const unusedBits = v[0] as number;
  if (unusedBits > 7 || (v.byteLength === 1 && unusedBits !== 0)) throw new DerError(`${what}: bad unused-bits count`);
  const bytes = v.subarray(1);
  // X.690 §11.2.1: the unused bits are zero.
  if (unusedBits > 0 && ((bytes[bytes.byteLength - 1] as number) & ((1 << unusedBits) - 1)) !== 0) {
    throw new DerError(`${what}: unused bits are not zero`);
  }
  return { bytes, unusedBits };
}

/** The named bits set in a BIT STRING (bit 0 is the most significant bit of the first octet). */
export function bitsSet(bits: { bytes: Uint8Array; unusedBits: number }): number[] {
  const out: number[] = [];
  for (let i = 0; i < bits.bytes.byteLength * 8 - bits.unusedBits; i++) {
    if (((bits.bytes[i >> 3] as number) & (0x80 >> (i & 7))) !== 0) out.push(i);
  }
  return out;
}

/** OBJECT IDENTIFIER in dotted form (X.690 §8.19, subidentifiers minimal). */
export function readOid(el: DerElement | undefined, what: string): string {
  return oidValue(primitive(el, TAG.OID, what), what);
}

/**
 * Longest subidentifier read, in octets. X.690 sets no bound, but the longest arcs in use are the
 * 128-bit UUIDs of X.667 (2.25.n, 19 octets); without a bound, one long arc costs time quadratic in
 * its length (BigInt shifts, then the decimal conversion), seconds for a few hundred kilobytes.
 */
const MAX_SUBIDENTIFIER_OCTETS = 32;

function oidValue(v: Uint8Array, what: string): string {
  if (v.byteLength === 0) throw new DerError(`${what}: empty OBJECT IDENTIFIER`);
  const arcs: bigint[] = [];
  let acc = 0n;
  let start = true;
  let octets = 0;
  for (let i = 0; i < v.byteLength; i++) {
    const b = v[i] as number;
    if (start && b === 0x80) throw new DerError(`${what}: non-minimal OBJECT IDENTIFIER`);
    if (++octets > MAX_SUBIDENTIFIER_OCTETS) throw new DerError(`${what}: OBJECT IDENTIFIER subidentifier too long`);
    acc = (acc << 7n) | BigInt(b & 0x7f);
    start = (b & 0x80) === 0;
    if (start) {
      arcs.push(acc);
      acc = 0n;
      octets = 0;
    }
  }
  if (!start) throw new DerError(`${what}: truncated OBJECT IDENTIFIER`);
  const firstArc = arcs[0] as bigint;
  const head = firstArc < 40n ? [0n, firstArc] : firstArc < 80n ? [1n, firstArc - 40n] : [2n, firstArc - 80n];
  return [...head, ...arcs.slice(1)].join('.');
}

const TWO = (s: string, i: number): number => Number(s.slice(i, i + 2));

function dateOf(what: string, y: number, mo: number, d: number, h: number, mi: number, s: number, ms: number): Date {
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s, ms));
  if (y < 100) date.setUTCFullYear(y);
  // Date.UTC rolls over out-of-range fields; a valid time gives the same fields back.
  if (date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d || date.getUTCHours() !== h || date.getUTCMinutes() !== mi || date.getUTCSeconds() !== s) {
    throw new DerError(`${what}: invalid date`);
  }
  return date;
}

/** UTCTime, DER form `YYMMDDHHMMSSZ` (X.690 §11.8, RFC 5280 §4.1.2.5.1: 50–99 are 19xx). */
export function readUtcTime(el: DerElement, what: string): Date {
  const s = Buffer.from(primitive(el, TAG.UTC_TIME, what)).toString('latin1');
  if (!/^\d{12}Z$/.test(s)) throw new DerError(`${what}: not a DER UTCTime`);
  const yy = TWO(s, 0);
  return dateOf(what, yy < 50 ? 2000 + yy : 1900 + yy, TWO(s, 2), TWO(s, 4), TWO(s, 6), TWO(s, 8), TWO(s, 10), 0);
}

/**
 * GeneralizedTime, DER form `YYYYMMDDHHMMSS[.f+]Z` (X.690 §11.7: no trailing zeros in the
 * fraction, no empty fraction). Fractions below a millisecond are dropped (Date's precision).
 */
export function readGeneralizedTime(el: DerElement, what: string, allowFraction = true): Date {
  const s = Buffer.from(primitive(el, TAG.GENERALIZED_TIME, what)).toString('latin1');
  const m = /^(\d{14})(?:\.(\d*[1-9]))?Z$/.exec(s);
  if (!m || (m[2] !== undefined && !allowFraction)) throw new DerError(`${what}: not a DER GeneralizedTime`);
  const d = m[1] as string;
  const ms = m[2] ? Number(m[2].slice(0, 3).padEnd(3, '0')) : 0;
  return dateOf(what, Number(d.slice(0, 4)), TWO(d, 4), TWO(d, 6), TWO(d, 8), TWO(d, 10), TWO(d, 12), ms);
}

/** RFC 5280 Time ::= CHOICE { utcTime UTCTime, generalTime GeneralizedTime } (no fractions). */
export function readTime(el: DerElement | undefined, what: string): Date {
  if (el?.tag === TAG.UTC_TIME) return readUtcTime(el, what);
  if (el?.tag === TAG.GENERALIZED_TIME) return readGeneralizedTime(el, what, false);
  throw new DerError(`${what}: not a Time`);
}

const STRING_TAGS: ReadonlySet<number> = new Set([
  TAG.UTF8_STRING,
  TAG.NUMERIC_STRING,
  TAG.PRINTABLE_STRING,
  TAG.TELETEX_STRING,
  TAG.IA5_STRING,
  TAG.VISIBLE_STRING,
  TAG.UNIVERSAL_STRING,
  TAG.BMP_STRING,
]);

/** Whether `el` is one of the character string types a DirectoryString or PKIFreeText uses. */
export function isString(el: DerElement): boolean {
  return el.cls === CLASS.universal && !el.constructed && STRING_TAGS.has(el.tagNumber);
}

/** Text of a character string element (for display and name comparison; never validated). */
export function stringValue(el: DerElement): string {
  const v = el.value;
  switch (el.tag) {
    case TAG.UTF8_STRING:
      return Buffer.from(v).toString('utf8');
    case TAG.BMP_STRING: {
      let out = '';
      for (let i = 0; i + 1 < v.byteLength; i += 2) out += String.fromCharCode(((v[i] as number) << 8) | (v[i + 1] as number));
      return out;
    }
    case TAG.UNIVERSAL_STRING: {
      let out = '';
      for (let i = 0; i + 3 < v.byteLength; i += 4) {
        const cp = (((v[i] as number) << 24) | ((v[i + 1] as number) << 16) | ((v[i + 2] as number) << 8) | (v[i + 3] as number)) >>> 0;
        out += cp <= 0x10ffff ? String.fromCodePoint(cp) : '\ufffd';
      }
      return out;
    }
    default:
      return Buffer.from(v).toString('latin1');
  }
}

/** AlgorithmIdentifier ::= SEQUENCE { algorithm OID, parameters ANY OPTIONAL } (RFC 5280 §4.1.1.2). */
export interface AlgorithmIdentifier {
  oid: string;
  params?: DerElement;
  der: Uint8Array;
}

export function readAlgorithmIdentifier(el: DerElement | undefined, what: string): AlgorithmIdentifier {
  const items = sequence(el, what);
  if (items.length < 1 || items.length > 2) throw new DerError(`${what}: malformed AlgorithmIdentifier`);
  const oid = readOid(items[0], `${what} algorithm`);
  const params = items[1];
  return params ? { oid, params, der: (el as DerElement).der } : { oid, der: (el as DerElement).der };
}

/** Whether the parameters are absent or NULL (RFC 5754 §2, RFC 4055 §5). */
export function absentOrNullParams(alg: AlgorithmIdentifier): boolean {
  return alg.params === undefined || (alg.params.tag === TAG.NULL && alg.params.value.byteLength === 0);
}
