import { randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * `length` characters drawn uniformly from [0-9A-Za-z] with a CSPRNG: each character carries
 * log2(62) ≈ 5.95 bits. Rejection sampling (bytes ≥ 248 are dropped) keeps the distribution
 * uniform; a plain `byte % 62` would favour the first 8 characters.
 */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** `value` (an unsigned 32-bit integer or less) in base62, left-padded with zeros to `width`. */
export function toBase62(value: number, width: number): string {
  let n = value;
  let out = '';
  do {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  } while (n > 0);
  return out.padStart(width, '0');
}

/** A random identifier with a readable type prefix, e.g. `acc_…` or `key_…` (~119 bits). */
export function randomId(prefix: string): string {
  return `${prefix}_${randomBase62(20)}`;
}
