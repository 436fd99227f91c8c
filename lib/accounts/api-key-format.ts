import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { randomBase62, toBase62 } from './random.js';

/**
 * The API key format (decisions.md "API keys"), chosen so that a secret scanner can recognise a
 * leaked key offline, the way GitHub's tokens work:
 *
 *     eas_<32 random base62 characters><6 base62 characters of CRC32>
 *
 * - `eas_`: the one fixed service prefix ("evidence anchoring service");
 * - 32 characters from [0-9A-Za-z], uniformly random: 32 · log2(62) ≈ 190 bits;
 * - CRC32 (zlib) of everything before it, in base62, zero-padded to 6 characters.
 *
 * Base62 keeps the key one "word" (a double-click selects it all; no `-`/`_` inside). A key
 * whose checksum does not match is refused before any database lookup.
 */
export const API_KEY_PREFIX = 'eas_';

const SECRET_CHARS = 32;
const CHECKSUM_CHARS = 6;

/** What a scanner looks for (the checksum then tells a real key from a look-alike). */
export const API_KEY_PATTERN = /^eas_[0-9A-Za-z]{38}$/;

/** Characters shown in key listings: the prefix and 8 characters (~48 of 190 bits). */
const DISPLAY_CHARS = API_KEY_PREFIX.length + 8;

/** A new random API key. */
export function generateApiKey(): string {
  const body = API_KEY_PREFIX + randomBase62(SECRET_CHARS);
  return body + checksum(body);
}

/** True when `value` has the API key shape and its checksum matches. */
export function isWellFormedApiKey(value: string): boolean {
  if (!API_KEY_PATTERN.test(value)) return false;
  const body = value.slice(0, -CHECKSUM_CHARS);
  return value.slice(-CHECKSUM_CHARS) === checksum(body);
}

/** SHA-256 of the key, lower-case hex: what the service stores, and the table key. */
export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}

/** The first characters of a key, enough to recognise it in a list; never enough to use it. */
export function apiKeyDisplayPrefix(apiKey: string): string {
  return apiKey.slice(0, DISPLAY_CHARS);
}

function checksum(body: string): string {
  return toBase62(crc32(body) >>> 0, CHECKSUM_CHARS);
}
