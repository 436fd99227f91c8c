import { z } from '@hono/zod-openapi';
import { IsoTime, NullableSha256Hex, Sha256Hex } from './common.js';

const Hex = (bytes: number, what: string) =>
  z
    .string()
    .regex(new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`), `must be ${bytes * 2} hexadecimal characters (${what})`)
    .transform((s) => s.toLowerCase());

/** Body of POST /api/v2/evidence/anchor and /full (api-v2.md "Anchor request"). */
export const AnchorRequest = z
  .strictObject({
    sha256_hash: Sha256Hex.describe('SHA-256 of the file, computed on the device.'),
    chain_index: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).describe("Position in the device's chain; the first entry is 0."),
    chain_hash: Sha256Hex.describe('SHA-256(previous chain_hash, or 32 zero bytes at index 0, || sha256_hash) over raw bytes.'),
    previous_hash: NullableSha256Hex.describe('chain_hash of the previous entry; null at index 0.'),
    signature_hex: Hex(64, 'an Ed25519 signature').describe('Ed25519 signature of the 32 raw bytes of sha256_hash (the 64-character hex string is accepted too).'),
    public_key_hex: Hex(32, 'an Ed25519 public key').describe("The device's Ed25519 public key; it identifies the chain."),
  })
  .openapi('AnchorRequest');

/** api-v2.md "Anchor result": exactly these fields. */
export const AnchorResult = z
  .object({
    status: z.literal('anchored'),
    image_hash: z.string(),
    server_hash: z.string().describe('SHA-256 of the RFC 8785 canonical statement; see the receipt.'),
    anchored_at: IsoTime,
    has_timestamp: z.boolean(),
    pq_signed: z.boolean(),
    pq_algorithm: z.literal('ML-DSA-65'),
    blockchain_anchored: z.boolean().describe('True once the transaction is mined; false while it is still pending (it completes later).'),
    tx_hash: z.string(),
    ledgerscan_url: z.string().url(),
  })
  .openapi('AnchorResult');

/** api-v2.md "Verification result". */
export const VerificationResult = z
  .object({
    verified: z.boolean(),
    image_hash: z.string(),
    chain_hash: z.string().optional(),
    chain_index: z.number().int().optional(),
    anchored_at: IsoTime.optional(),
    has_pq_signature: z.boolean(),
    has_blockchain: z.boolean(),
    has_timestamp: z.boolean(),
    ledger_tx: z.string().optional(),
    ledgerscan_url: z.string().optional(),
    registered_at: IsoTime.optional(),
    timestamp_time: IsoTime.optional(),
    confirmations: z.number().int().optional(),
  })
  .openapi('VerificationResult');
