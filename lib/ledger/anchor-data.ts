import { createHash } from 'node:crypto';

/**
 * The input data of the service's ledger transactions (no ethers here: verifiers load this).
 *
 *   anchor:          image_hash (32 bytes) || server_hash (32 bytes)               = 64 bytes
 *   PQ-key register: ASCII "ML-DSA-65:" || SHA-256(ML-DSA-65 public key) (32 bytes) = 42 bytes
 *   anchor batch:    ASCII "MERKLE-SHA256:" || RFC 6962 Merkle root (32 bytes)     = 46 bytes
 *                    (the root of the anchors' leaves, SHA-256(0x00 || image_hash || server_hash);
 *                    each anchor's receipt carries its leaf index and inclusion path)
 *
 * Every transaction is a 0-value transaction from the service wallet to itself, so the data is
 * the whole statement; anyone can read it back with eth_getTransactionByHash.
 */

export const ANCHOR_DATA_BYTES = 64;
export const PQ_KEY_PREFIX = 'ML-DSA-65:';
const PQ_PREFIX_BYTES = Buffer.from(PQ_KEY_PREFIX, 'ascii');
export const PQ_KEY_DATA_BYTES = PQ_PREFIX_BYTES.length + 32;
export const BATCH_PREFIX = 'MERKLE-SHA256:';
const BATCH_PREFIX_BYTES = Buffer.from(BATCH_PREFIX, 'ascii');
export const BATCH_DATA_BYTES = BATCH_PREFIX_BYTES.length + 32;

export class InvalidLedgerDataError extends Error {
  readonly code = 'invalid_ledger_data' as const;
  constructor(message: string) {
    super(message);
    this.name = 'InvalidLedgerDataError';
  }
}

export interface AnchorData {
  /** 64 lower-case hex characters. */
  imageHash: string;
  /** 64 lower-case hex characters. */
  serverHash: string;
}

export interface PqKeyData {
  algorithm: 'ML-DSA-65';
  /** SHA-256 of the raw ML-DSA-65 public key, 64 lower-case hex characters. */
  fingerprint: string;
}

export interface BatchData {
  /** The Merkle root of the batch, 64 lower-case hex characters. */
  root: string;
}

export type LedgerData = ({ kind: 'anchor' } & AnchorData) | ({ kind: 'pq-key' } & PqKeyData) | ({ kind: 'batch' } & BatchData);

/** A 32-byte value from 64 hex characters (optional 0x, any case) or 32 raw bytes. */
function hash32(value: string | Uint8Array, name: string): Buffer {
  if (typeof value === 'string') {
    const hex = value.startsWith('0x') || value.startsWith('0X') ? value.slice(2) : value;
    if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new InvalidLedgerDataError(`${name} must be 32 bytes (64 hex characters)`);
    return Buffer.from(hex, 'hex');
  }
  if (!(value instanceof Uint8Array) || value.length !== 32) throw new InvalidLedgerDataError(`${name} must be 32 bytes`);
  return Buffer.from(value);
}

/** Transaction data as bytes, from 0x-prefixed hex (as JSON-RPC returns it) or bytes. */
function dataBytes(data: string | Uint8Array): Buffer {
  if (typeof data !== 'string') return Buffer.from(data);
  if (!/^0x([0-9a-fA-F]{2})*$/.test(data)) throw new InvalidLedgerDataError('transaction data must be 0x-prefixed hex of whole bytes');
  return Buffer.from(data.slice(2), 'hex');
}

const toHex = (bytes: Uint8Array): string => `0x${Buffer.from(bytes).toString('hex')}`;

/** Data of an anchor transaction: `0x` + image_hash + server_hash (128 hex characters). */
export function encodeAnchorData(imageHash: string | Uint8Array, serverHash: string | Uint8Array): string {
  return toHex(Buffer.concat([hash32(imageHash, 'image_hash'), hash32(serverHash, 'server_hash')]));
}

/** Reads an anchor transaction's data; throws InvalidLedgerDataError unless it is exactly 64 bytes. */
export function decodeAnchorData(data: string | Uint8Array): AnchorData {
  const bytes = dataBytes(data);
  if (bytes.length !== ANCHOR_DATA_BYTES) {
    throw new InvalidLedgerDataError(`anchor data must be ${ANCHOR_DATA_BYTES} bytes, got ${bytes.length}`);
  }
  return { imageHash: bytes.subarray(0, 32).toString('hex'), serverHash: bytes.subarray(32).toString('hex') };
}

/** SHA-256 fingerprint of a raw ML-DSA-65 public key, as registered on the ledger. */
export function pqKeyFingerprint(publicKey: Uint8Array): string {
  return createHash('sha256').update(publicKey).digest('hex');
}

/** Data of a PQ-key registration: ASCII `ML-DSA-65:` + the 32-byte fingerprint. */
export function encodePqKeyData(fingerprint: string | Uint8Array): string {
  return toHex(Buffer.concat([PQ_PREFIX_BYTES, hash32(fingerprint, 'fingerprint')]));
}

/** Reads a PQ-key registration's data; throws InvalidLedgerDataError for any other prefix or length. */
export function decodePqKeyData(data: string | Uint8Array): PqKeyData {
  const bytes = dataBytes(data);
  if (bytes.length !== PQ_KEY_DATA_BYTES) {
    throw new InvalidLedgerDataError(`PQ-key data must be ${PQ_KEY_DATA_BYTES} bytes, got ${bytes.length}`);
  }
  if (!bytes.subarray(0, PQ_PREFIX_BYTES.length).equals(PQ_PREFIX_BYTES)) {
    throw new InvalidLedgerDataError(`PQ-key data must start with "${PQ_KEY_PREFIX}"`);
  }
  return { algorithm: 'ML-DSA-65', fingerprint: bytes.subarray(PQ_PREFIX_BYTES.length).toString('hex') };
}

/** Data of an anchor batch: ASCII `MERKLE-SHA256:` + the 32-byte Merkle root. */
export function encodeBatchData(root: string | Uint8Array): string {
  return toHex(Buffer.concat([BATCH_PREFIX_BYTES, hash32(root, 'root')]));
}

/** Reads an anchor batch's data; throws InvalidLedgerDataError for any other prefix or length. */
export function decodeBatchData(data: string | Uint8Array): BatchData {
  const bytes = dataBytes(data);
  if (bytes.length !== BATCH_DATA_BYTES) throw new InvalidLedgerDataError(`batch data must be ${BATCH_DATA_BYTES} bytes, got ${bytes.length}`);
  if (!bytes.subarray(0, BATCH_PREFIX_BYTES.length).equals(BATCH_PREFIX_BYTES)) throw new InvalidLedgerDataError(`batch data must start with "${BATCH_PREFIX}"`);
  return { root: bytes.subarray(BATCH_PREFIX_BYTES.length).toString('hex') };
}

/** Reads any of the formats (they differ in length); throws InvalidLedgerDataError for anything else. */
export function decodeLedgerData(data: string | Uint8Array): LedgerData {
  const bytes = dataBytes(data);
  if (bytes.length === ANCHOR_DATA_BYTES) return { kind: 'anchor', ...decodeAnchorData(bytes) };
  if (bytes.length === PQ_KEY_DATA_BYTES) return { kind: 'pq-key', ...decodePqKeyData(bytes) };
  if (bytes.length === BATCH_DATA_BYTES) return { kind: 'batch', ...decodeBatchData(bytes) };
  throw new InvalidLedgerDataError(`not a ledger record: ${bytes.length} bytes (expected ${ANCHOR_DATA_BYTES}, ${PQ_KEY_DATA_BYTES} or ${BATCH_DATA_BYTES})`);
}

/** The explorer link of a transaction: every `{tx_hash}` in the template becomes the lower-case hash. */
export function explorerUrl(template: string, txHash: string): string {
  if (!/^0x[0-9a-fA-F]{64}$/.test(txHash)) throw new InvalidLedgerDataError('a transaction hash is 0x followed by 64 hex characters');
  return template.split('{tx_hash}').join(txHash.toLowerCase());
}
