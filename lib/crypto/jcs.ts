/**
 * JSON Canonicalization Scheme (JCS), RFC 8785, for the JSON values our statements contain.
 *
 * Input is a JavaScript value as `JSON.parse` would produce it: plain objects, arrays, strings,
 * finite numbers, booleans and null. Anything JSON cannot represent exactly is rejected rather
 * than silently dropped or coerced (unlike `JSON.stringify`, which drops `undefined` members and
 * writes `NaN` as `null`), because a canonical form that loses data would let two different
 * statements share one `server_hash`.
 */

/** A JSON value that {@link canonicalize} accepts. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Thrown when a value cannot be canonicalised; `path` locates it, e.g. `$.chain[2].index`. */
export class JcsError extends TypeError {
  readonly path: string;
  constructor(path: string, message: string) {
    super(`JCS: ${message} at ${path}`);
    this.name = 'JcsError';
    this.path = path;
  }
}

/**
 * Serialises `value` in the canonical form of RFC 8785 §3.2: no whitespace, object members sorted
 * by the UTF-16 code units of their names, ECMAScript number and string serialisation.
 *
 * @throws {JcsError} for `undefined`, bigint, symbols, functions, non-finite numbers, strings with
 *   unpaired surrogates, objects that are not plain objects or arrays, sparse arrays and cycles.
 */
export function canonicalize(value: unknown): string {
  const out: string[] = [];
  write(value, '$', out, new Set());
  return out.join('');
}

/** The canonical form as UTF-8 bytes (RFC 8785 §3.2.4), ready to hash or sign. */
export function canonicalizeToBytes(value: unknown): Uint8Array {
  return new TextEncoder().encode(canonicalize(value));
}

function write(value: unknown, path: string, out: string[], ancestors: Set<object>): void {
  switch (typeof value) {
    case 'string':
      out.push(serialiseString(value, path));
      return;
    case 'number':
      out.push(serialiseNumber(value, path));
      return;
    case 'boolean':
      // RFC 8785 §3.2.2.1: literals as in ECMAScript.
      out.push(value ? 'true' : 'false');
      return;
    case 'object':
      break;
    default:
      // undefined, bigint, symbol, function: no JSON representation (RFC 8259 §3).
      throw new JcsError(path, `${typeof value} is not a JSON value`);
  }
  if (value === null) {
    out.push('null');
    return;
  }
  // A cycle would recurse forever; JSON has no representation for it anyway.
  if (ancestors.has(value)) throw new JcsError(path, 'circular reference');
  ancestors.add(value);
  if (Array.isArray(value)) {
    out.push('[');
    for (let i = 0; i < value.length; i++) {
      // `in` distinguishes a hole from an explicit element; a hole has no JSON value.
      if (!(i in value)) throw new JcsError(`${path}[${i}]`, 'sparse array element');
      if (i > 0) out.push(',');
      write(value[i], `${path}[${i}]`, out, ancestors);
    }
    out.push(']');
  } else {
    const proto: unknown = Object.getPrototypeOf(value);
    // Dates, Maps, Buffers, class instances: JSON.stringify would serialise them through toJSON
    // or lose them; a statement must spell its fields out explicitly.
    if (proto !== Object.prototype && proto !== null) {
      throw new JcsError(path, 'only plain objects and arrays are accepted');
    }
    const record = value as Record<string, unknown>;
    // RFC 8785 §3.2.3: sort member names by their UTF-16 code units, comparing unsigned integers.
    // JS relational comparison of strings is exactly that (ECMA-262 IsLessThan on code units);
    // localeCompare would not be.
    const keys = Object.keys(record).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    out.push('{');
    keys.forEach((key, i) => {
      const memberPath = `${path}[${JSON.stringify(key)}]`;
      if (i > 0) out.push(',');
      out.push(serialiseString(key, memberPath), ':');
      write(record[key], memberPath, out, ancestors);
    });
    out.push('}');
  }
  ancestors.delete(value);
}

/**
 * RFC 8785 §3.2.2.3: numbers are serialised like ECMAScript's Number.prototype.toString
 * (ECMA-262 Number::toString, shortest round-trip digits), which is what `String(n)` does;
 * -0 becomes "0". NaN and the infinities have no JSON form and must be rejected.
 */
function serialiseNumber(n: number, path: string): string {
  if (!Number.isFinite(n)) throw new JcsError(path, `${String(n)} is not a JSON number`);
  return String(n);
}

/**
 * RFC 8785 §3.2.2.2: strings as ECMAScript JSON.stringify writes them: `"` and `\` escaped,
 * U+0000..U+001F escaped with the short forms \b \t \n \f \r where they exist and `\u00xx` with
 * lower-case hex otherwise; every other character written as itself (so U+007F, U+2028 and
 * non-ASCII are not escaped).
 * Unpaired surrogates are rejected: JCS input must be I-JSON (RFC 8785 §3.1), and I-JSON forbids
 * them (RFC 7493 §2.1); they would also have no UTF-8 encoding.
 */
function serialiseString(s: string, path: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1); // NaN past the end
      if (!(next >= 0xdc00 && next <= 0xdfff)) throw new JcsError(path, 'unpaired surrogate in string');
      out += s[i]! + s[i + 1]!;
      i++;
      continue;
    }
    if (c >= 0xdc00 && c <= 0xdfff) throw new JcsError(path, 'unpaired surrogate in string');
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += '\\\\';
    else if (c < 0x20) out += SHORT_ESCAPES[c] ?? `\\u${c.toString(16).padStart(4, '0')}`;
    else out += s[i]!;
  }
  return out + '"';
}

/** The two-character escapes of RFC 8259 §7 that ECMAScript JSON.stringify prefers. */
const SHORT_ESCAPES: Readonly<Record<number, string>> = {
  0x08: '\\b',
  0x09: '\\t',
  0x0a: '\\n',
  0x0c: '\\f',
  0x0d: '\\r',
};
