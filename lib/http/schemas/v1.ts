import { z } from '@hono/zod-openapi';
import { ProofResultSchema, ProofsSchema, VerdictStatus } from './verdict.js';
import { FirstRegisteredAt, IsoTime, NullableSha256Hex, QueryInteger, Sha256Hex } from './common.js';

/**
 * Request and response schemas of API v1 (api-v1.md). The same objects validate requests and
 * document them (functions/openapi.ts). Where api-v1.md says "not shown", the decision is written
 * in the schema's description; the decisions of docs/decisions.md are kept for v2.
 */

const Hex = (bytes: number, what: string) =>
  z
    .string()
    .regex(new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`), `must be ${bytes * 2} hexadecimal characters (${what})`)
    .transform((s) => s.toLowerCase());

const TxHash = z.string().openapi({ pattern: '^0x[0-9a-f]{64}$', example: '0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060' });
const Base64 = (description: string) => z.string().openapi({ format: 'byte', description });

/** Body of POST /api/v1/chain/anchor (api-v1.md "Anchor request"). */
export const V1AnchorRequest = z
  .strictObject({
    image_hash: Sha256Hex.describe('SHA-256 of the photo, computed on the device.'),
    signature_hex: Hex(64, 'an Ed25519 signature').describe('Ed25519 signature of the 32 raw bytes of image_hash (the 64-character hex string is accepted too).'),
    public_key_hex: Hex(32, 'an Ed25519 public key').describe("The device's Ed25519 public key; it identifies the chain."),
    chain_hash: Sha256Hex.describe('SHA-256(previous chain_hash, or 32 zero bytes at index 0, || image_hash) over raw bytes, lower-case hex.'),
    chain_index: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).describe("Position in the device's chain; the first entry is 0, then each next free index."),
    previous_hash: NullableSha256Hex
      .optional()
      .describe('chain_hash of the entry before. At index 0: absent, null or 64 zeros. Otherwise required and equal to the stored chain_hash of index - 1.'),
    device_id: z
      .string()
      .min(1)
      .max(128)
      // The control characters (Unicode category Cc) spelled as ranges: a `u`-flag \p{Cc} leaked
      // "/u" into the documented pattern, which then matched nothing. Control characters are the point here:
      // eslint-disable-next-line no-control-regex
      .regex(/^[^\u0000-\u001F\u007F-\u009F]+$/, 'must not contain control characters')
      .nullable()
      .optional()
      .describe('Optional device label (not required; kept with the entry and shown by GET /chain/all). Up to 128 characters.'),
  })
  .openapi('V1AnchorRequest');

export const TxStatus = z
  .enum(['confirmed', 'pending', 'failed'])
  .describe('confirmed: mined successfully. pending: sent, not yet mined within the receipt timeout; it completes later (verify again). failed: mined but reverted (not expected for these 0-value self-transactions).');

/** api-v1.md "Anchor response": exactly these fields. */
export const V1AnchorResponse = z
  .object({
    id: z.number().int().describe("Identifier of the entry: its chain_index (unique per device chain)."),
    image_hash: z.string(),
    chain_index: z.number().int(),
    pq_signature: Base64('ML-DSA-65 (FIPS 204, pure, empty context) signature, 3309 bytes, over the 32 bytes of server_hash; GET /pq/verify/{image_hash} gives server_hash, its statement and the public key.'),
    timestamp_token: Base64('RFC 3161 TimeStampResp, DER; its message imprint is SHA-256 = image_hash, so `openssl ts -verify -data photo.jpg -in token.tsr -CAfile root.pem` checks it.'),
    tx_hash: TxHash.describe('Ledger transaction id, 0x-prefixed; its input data is, in batch mode (the default), ASCII "MERKLE-SHA256:" || the root of the batch the anchor joined (the receipt holds the inclusion path), else image_hash || server_hash.'),
    tx_status: TxStatus,
    anchored_at: IsoTime,
  })
  .openapi('V1AnchorResponse');

/** api-v1.md "Verify response", with the checks behind each flag. */
export const V1VerifyResponse = z
  .object({
    found: z.boolean().describe('True when the hash is anchored. False (404) for an unknown hash; false with registered:true (200) for a hash registered through v2 but not anchored.'),
    image_hash: z.string(),
    chain_index: z.number().int().optional(),
    chain_hash: z.string().optional(),
    previous_hash: z.string().nullable().optional(),
    pq_verified: z
      .boolean()
      .describe('The statement hashes to server_hash and names this record, the ML-DSA-65 signature over server_hash verifies, and the key is one this service publishes (GET /pq/info): proofs statement, pq_signature and pq_key hold.'),
    chain_verified: z.boolean().optional().describe('The device Ed25519 signature verifies and chain_hash recomputes from previous_hash and image_hash (proofs device_signature and chain_link hold).'),
    timestamp_verified: z.boolean().optional().describe('The RFC 3161 token verifies (imprint = image_hash, signature, certificate chain to the TSA root).'),
    ledger_verified: z.boolean().optional().describe('The ledger proof holds: mined, successful, from the service wallet, carrying image_hash || server_hash (batch mode: the batch root, with the anchor\'s inclusion path leading to it); from the chain now, or from the receipt stored at finality.'),
    verified: z.boolean().describe('status is verified: every proof holds.'),
    ledger_final: z.boolean().optional().describe('The transaction reached the configured finality and its receipt was recorded (see the v2 verify).'),
    status: VerdictStatus.optional(),
    summary: z.string().optional().describe('The verdict in one sentence.'),
    proofs: ProofsSchema.optional(),
    tx_hash: z.string().optional(),
    tx_status: z.enum(['confirmed', 'pending', 'failed', 'not_found']).optional().describe('As read from the chain now.'),
    confirmations: z.number().int().optional(),
    explorer_url: z.string().optional(),
    anchored_at: IsoTime.optional(),
    public_key_hex: z.string().optional().describe('The device key.'),
    device_id: z.string().optional(),
    registered: z.boolean().optional().describe('The hash is not anchored, and some account registered it (POST /api/v2/evidence/hash).'),
    registered_at: FirstRegisteredAt,
  })
  .openapi('V1VerifyResponse');

/** Body of POST /api/v1/timestamp. */
export const TimestampRequest = z
  .strictObject({
    hash: Sha256Hex.describe('The SHA-256 hash to time-stamp (the message imprint of the token).'),
    nonce: z
      .union([z.string().regex(/^[1-9][0-9]{0,37}$/, 'must be a positive decimal integer below 10^38'), z.number().int().positive().max(Number.MAX_SAFE_INTEGER)])
      .optional()
      .describe('Optional RFC 3161 nonce (positive integer, decimal string for large values) echoed in the token, to bind the reply to this request. Without it a random 64-bit nonce is used.'),
  })
  .openapi('TimestampRequest');

export const TimestampResponse = z
  .object({
    timestamp_token: Base64('RFC 3161 TimeStampResp (status granted + TimeStampToken), DER. Write it to token.tsr and run `openssl ts -verify -digest <hash> -in token.tsr -CAfile root.pem`.'),
    hash: z.string(),
    hash_algorithm: z.literal('SHA-256'),
    gen_time: IsoTime.describe('genTime of the token.'),
    serial: z.string().describe('serialNumber of the token (decimal).'),
    policy: z.string().describe('TSA policy OID.'),
    nonce: z.string().optional().describe('The nonce echoed in the token (decimal), when one was requested.'),
    tsa_certificates: z.array(z.string()).describe('The TSA certificate chain (PEM), leaf first, root last.'),
  })
  .openapi('TimestampResponse');

export const ChainEntry = z
  .object({
    chain_index: z.number().int(),
    image_hash: z.string(),
    chain_hash: z.string(),
    previous_hash: z.string().nullable(),
    signature_hex: z.string().describe('Ed25519 signature of the device over image_hash.'),
    device_id: z.string().optional(),
    state: z.enum(['anchored', 'anchoring']).describe('anchoring: a request for this entry is still running.'),
    anchored_at: IsoTime.optional(),
    tx_hash: z.string().optional(),
  })
  .openapi('V1ChainEntry');

export const ChainPageResponse = z
  .object({
    public_key_hex: z.string(),
    chain_length: z.number().int().describe('Highest index + 1.'),
    entries: z.array(ChainEntry).describe('In chain_index order.'),
    limit: z.number().int(),
    cursor: z.string().nullable(),
    next_cursor: z.string().nullable().describe('Pass as ?cursor= for the next page; null on the last page.'),
    integrity: z
      .object({
        scope: z.enum(['chain', 'page']).describe('chain: the whole chain was checked. page: this page and the link into the entry before it; the chain is intact when every page says complete.'),
        verdict: z.enum(['complete', 'incomplete', 'broken']).describe('broken: at least one link does not hold. incomplete: indexes are missing (gaps). complete: neither.'),
        complete: z.boolean(),
        checked_from_index: z.number().int(),
        checked_to_index: z.number().int().nullable(),
        gaps: z.array(z.object({ from_index: z.number().int(), to_index: z.number().int() })).describe('Missing indexes, inclusive ranges.'),
        broken_links: z
          .array(
            z.object({
              chain_index: z.number().int(),
              problem: z.enum(['chain_hash_mismatch', 'previous_hash_mismatch']),
              expected: z.string().nullable(),
              found: z.string().nullable(),
            }),
          )
          .describe('chain_hash_mismatch: chain_hash ≠ SHA-256(previous_hash or 32 zero bytes || image_hash). previous_hash_mismatch: previous_hash ≠ chain_hash of the entry before.'),
      })
      .openapi('V1ChainIntegrity'),
  })
  .openapi('V1ChainPage');

export const ChainQuery = z.object({
  limit: QueryInteger('limit', { minimum: 1, maximum: 1000, description: 'Entries per page, 1-1000 (default 100).', example: 100 }),
  cursor: z
    .string()
    .max(32)
    .optional()
    .openapi({ param: { name: 'cursor', in: 'query' }, description: 'next_cursor of the previous page (opaque).' }),
});

export const PqInfoResponse = z
  .object({
    algorithm: z.literal('ML-DSA-65'),
    standard: z.literal('FIPS 204'),
    variant: z.string().describe('Pure ML-DSA with an empty context string (FIPS 204 Algorithms 2 and 3).'),
    security_category: z.literal(3).describe('NIST security category (FIPS 204 Table 1).'),
    oid: z.string().describe('id-ml-dsa-65.'),
    key_id: z.string(),
    public_key: Base64('The raw public key (FIPS 204 pkEncode), 1952 bytes.'),
    fingerprint: z.string().describe('SHA-256 of the raw public key, hex: what the ledger registration carries.'),
    fingerprint_algorithm: z.literal('SHA-256'),
    sizes: z.object({ public_key: z.literal(1952), signature: z.literal(3309), secret_key: z.literal(4032) }).describe('Bytes.'),
    signed_message: z.string().describe('What the service signs: the 32 bytes of server_hash = SHA-256 of the RFC 8785 canonical statement.'),
    trusted_fingerprints: z.array(z.string()).describe('Every key whose signatures still verify (the current one and rotated ones).'),
  })
  .openapi('V1PqInfo');

export const PqVerifyResponse = z
  .object({
    found: z.boolean(),
    image_hash: z.string(),
    verified: z.boolean().describe('signature_valid, key_trusted and statement_matches all hold.'),
    algorithm: z.literal('ML-DSA-65').optional(),
    standard: z.literal('FIPS 204').optional(),
    signature_valid: z.boolean().optional().describe('ML-DSA-65 verify of pq_signature over the 32 bytes of server_hash with public_key, now.'),
    key_trusted: z.boolean().optional().describe('public_key is a key this service signs with (GET /pq/info).'),
    statement_matches: z.boolean().optional().describe('server_hash = SHA-256(statement) and the statement names this image, chain entry and device.'),
    server_hash: z.string().optional(),
    server_hash_recomputed: z.string().optional(),
    signed_message: z.string().optional(),
    key_id: z.string().optional(),
    public_key_fingerprint: z.string().optional(),
    public_key: z.string().optional(),
    pq_signature: z.string().optional(),
    statement: z.string().optional().describe('The RFC 8785 canonical statement (UTF-8) whose SHA-256 is server_hash.'),
    anchored_at: IsoTime.optional(),
    registered: z.boolean().optional().describe('The hash is not anchored, and some account registered it (POST /api/v2/evidence/hash).'),
    registered_at: FirstRegisteredAt,
  })
  .openapi('V1PqVerify');

export const PqRegistrationResponse = z
  .object({
    registered: z.boolean().describe('A ledger transaction carrying the fingerprint was sent (false, 404: not yet registered).'),
    algorithm: z.literal('ML-DSA-65'),
    fingerprint: z.string(),
    key_id: z.string(),
    tx_hash: z.string().optional(),
    tx_status: z.enum(['confirmed', 'pending', 'failed', 'not_found']).optional().describe('As read from the chain now.'),
    verified: z.boolean().optional().describe('The transaction is mined, successful, from the service wallet, and its input data is "ML-DSA-65:" || fingerprint.'),
    block_number: z.number().int().nullable().optional(),
    confirmations: z.number().int().optional(),
    chain_id: z.number().int().optional(),
    network: z.string().optional(),
    from: z.string().optional(),
    input_data: z.string().optional().describe('The expected input data: 0x + hex("ML-DSA-65:") + fingerprint.'),
    explorer_url: z.string().optional(),
    registered_at: IsoTime.optional(),
  })
  .openapi('V1PqRegistration');

export const LedgerStatusResponse = z
  .object({
    network: z.string(),
    chain_id: z.number().int(),
    wallet_address: z.string(),
    balance_wei: z.string().describe('Decimal string (wei).'),
    balance: z.string().describe('In the native coin, decimal.'),
    currency: z.string().nullable(),
    latest_block: z.number().int(),
    pending_transactions: z.number().int().describe('Transactions of the service wallet sent but not yet mined.'),
    low_balance: z.boolean(),
    low_balance_threshold_wei: z.string(),
    warning: z.string().nullable().describe('Set when the balance is below the threshold.'),
    explorer_tx_url_template: z.string(),
  })
  .openapi('V1LedgerStatus');

export const LedgerVerifyResponse = z
  .object({
    found: z.boolean(),
    image_hash: z.string(),
    verified: z.boolean().describe('The ledger proof of the one verdict holds: mined, successful, sent by the service wallet, input data = image_hash || server_hash (batch mode: the batch root, and the inclusion path leads to it).'),
    tx_hash: z.string().optional(),
    tx_status: z.enum(['confirmed', 'pending', 'failed', 'not_found']).optional(),
    block_number: z.number().int().nullable().optional(),
    confirmations: z.number().int().optional(),
    ledger_final: z.boolean().optional().describe('The transaction reached the configured finality and its receipt was recorded.'),
    proof: ProofResultSchema.optional().describe('The ledger proof of the one verdict: its state and why.'),
    data_matches: z.boolean().optional(),
    expected_input_data: z.string().optional(),
    from: z.string().nullable().optional(),
    expected_from: z.string().optional(),
    chain_id: z.number().int().optional(),
    network: z.string().optional(),
    explorer_url: z.string().optional(),
    anchored_at: IsoTime.optional(),
    registered: z.boolean().optional().describe('The hash is not anchored, and some account registered it (POST /api/v2/evidence/hash).'),
    registered_at: FirstRegisteredAt,
  })
  .openapi('V1LedgerVerify');

const StatTotals = z.object({
  registered: z.number().int().describe('Hashes registered for the first time (v2 /evidence/hash).'),
  anchored: z.number().int().describe('Anchors accepted (v1 and v2).'),
  devices: z.number().int().describe('Device chains started (index 0 anchored).'),
  transactions: z.number().int().describe('Ledger transactions sent (anchors and key registrations).'),
});

export const StatsResponse = z
  .object({
    totals: StatTotals,
    last_24h: StatTotals.describe('The current UTC hour and the 23 before it.'),
    last_24h_since: IsoTime,
    as_of: IsoTime,
  })
  .openapi('V1Stats');
