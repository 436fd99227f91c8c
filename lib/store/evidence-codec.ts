import { createHash } from 'node:crypto';

/**
 * How an evidence item's proofs are laid out at rest (docs/decisions.md "Cost"), so
 * that each write of the item costs fewer capacity units (DynamoDB bills an update by the size of
 * the whole item, 1 WCU per started KB, not by the bytes that changed):
 * - values that are the same on every item an ML-DSA key or a TSA signs (`pq_public_key`, 2.6 KB
 *   as stored before; `tsa_certificates`, 1.5 KB) are stored once, as a content-addressed item
 *   `blob#<sha256 of its JSON>` of the same table, and the evidence item keeps `<name>_ref`, the
 *   hash. A blob is written before the first item that names it, and never changes or goes away,
 *   so a reference always resolves and a resolved value can be kept for the life of the process;
 * - base64 values unique to the item (`pq_signature`, `tsa_response`) are stored as bytes (3/4 of
 *   the size), when the string is canonical base64 (it then decodes back to the same string).
 * The domain never sees the layout: the store encodes what it writes and decodes what it reads,
 * and an item written before (inline strings) reads as it always did.
 */

/** Attributes stored once per distinct value, by reference. */
export const SHARED_ATTRIBUTES = ['pq_public_key', 'tsa_certificates', 'tsa_pq_certificates'] as const;
/** Base64 attributes stored as bytes. */
export const BINARY_ATTRIBUTES = ['pq_signature', 'tsa_response', 'tsa_pq_response'] as const;
/** Key prefix of the blob items (an image hash is 64 hex digits: no clash). */
export const BLOB_PREFIX = 'blob#';

export const refAttribute = (name: string) => `${name}_ref`;

/** A value stored once: its item key and value. */
export interface Blob {
  key: string;
  value: unknown;
}

/** The key of the blob that holds `value`. */
export function blobKey(value: unknown): string {
  return BLOB_PREFIX + createHash('sha256').update(JSON.stringify(value)).digest('hex');
}

/** Fields as written: shared values replaced by their blob's key, base64 by bytes; and the blobs they need. */
export function encodeFields(fields: Record<string, unknown>): { fields: Record<string, unknown>; blobs: Blob[] } {
  const out: Record<string, unknown> = { ...fields };
  const blobs: Blob[] = [];
  for (const name of SHARED_ATTRIBUTES) {
    const value = out[name];
    if (value === undefined) continue;
    const key = blobKey(value);
    blobs.push({ key, value });
    out[refAttribute(name)] = key;
    delete out[name];
  }
  for (const name of BINARY_ATTRIBUTES) {
    const value = out[name];
    if (typeof value !== 'string') continue;
    const bytes = Buffer.from(value, 'base64');
    if (bytes.toString('base64') === value) out[name] = new Uint8Array(bytes);
  }
  return { fields: out, blobs };
}

/** Names to remove as written: a shared attribute is removed with its reference. */
export function encodeRemove(names: readonly string[]): string[] {
  return names.flatMap((n) => ((SHARED_ATTRIBUTES as readonly string[]).includes(n) ? [n, refAttribute(n)] : [n]));
}

/** The blob keys an item read from the table names and that `known` cannot resolve. */
export function missingBlobs(item: Record<string, unknown>, known: (key: string) => boolean): string[] {
  return SHARED_ATTRIBUTES.map((n) => item[refAttribute(n)]).filter((k): k is string => typeof k === 'string' && !known(k));
}

/** The item as the domain knows it (every value inline, base64 as strings). */
export function decodeItem(item: Record<string, unknown>, blob: (key: string) => unknown): Record<string, unknown> {
  const out: Record<string, unknown> = { ...item };
  for (const name of SHARED_ATTRIBUTES) {
    const key = out[refAttribute(name)];
    if (typeof key !== 'string') continue;
    const value = blob(key);
    if (value === undefined) throw new Error(`evidence ${String(item.image_hash)}: ${name} names ${key}, which is not stored`);
    out[name] = value;
    delete out[refAttribute(name)];
  }
  for (const name of BINARY_ATTRIBUTES) {
    const value = out[name];
    if (value instanceof Uint8Array) out[name] = Buffer.from(value).toString('base64');
  }
  return out;
}
