import { z } from '@hono/zod-openapi';
import { ProofsSchema, VerdictStatus } from './verdict.js';
import { FirstRegisteredAt, IsoTime, NullableSha256Hex, Sha256Hex } from './common.js';

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
    tx_hash: z
      .string()
      .describe(
        'The ledger transaction. In batch mode (LEDGER_BATCH_WINDOW_MS > 0, the default) its input is ASCII "MERKLE-SHA256:" followed by the root of the RFC 6962 tree of the window the anchor joined ' +
          '(anchors of one window share it; the receipt gives the leaf index and the inclusion path from SHA-256(0x00 || image_hash || server_hash) to that root); with LEDGER_BATCH_WINDOW_MS=0 its input is image_hash || server_hash.',
      ),
    ledgerscan_url: z.string().url(),
  })
  .openapi('AnchorResult');

/** api-v2.md "Verification result", with the one verdict behind its flags (lib/evidence/verdict.ts). */
export const VerificationResult = z
  .object({
    verified: z.boolean().describe('status is verified: every proof holds.'),
    image_hash: z.string(),
    chain_hash: z.string().optional(),
    chain_index: z.number().int().optional(),
    anchored_at: IsoTime.optional(),
    has_pq_signature: z
      .boolean()
      .describe('The statement hashes to server_hash and names this record, the ML-DSA-65 signature over server_hash verifies, and the key is one this service publishes (proofs statement, pq_signature and pq_key all hold).'),
    has_blockchain: z.boolean().describe('The ledger proof holds.'),
    has_timestamp: z.boolean().describe('The timestamp proof holds.'),
    ledger_tx: z.string().optional(),
    ledgerscan_url: z.string().optional(),
    registered_at: FirstRegisteredAt,
    timestamp_time: IsoTime.optional(),
    confirmations: z
      .number()
      .int()
      .optional()
      .describe(
        'Blocks from the transaction\'s block to the latest one, inclusive (1 = just mined), as of ledger_checked_at when present (a final transaction served from its stored receipt: when finality was recorded), else as of this answer (its Date header).',
      ),
    ledger_final: z
      .boolean()
      .optional()
      .describe(
        'true once the transaction reached the configured finality and its receipt was recorded; it stays true (a recheck may add confirmations, and fails the ledger proof if the transaction left the block recorded at finality).',
      ),
    ledger_final_since: IsoTime.optional().describe('When the service recorded that the transaction reached finality (present once ledger_final is true).'),
    ledger_checked_at: IsoTime.optional().describe(
      'When confirmations were counted, if earlier than this answer: a final transaction served from its stored receipt (then ledger_final_since). Absent: counted for this answer, as of its Date header.',
    ),
    block_number: z.number().int().optional().describe('The block of the ledger transaction (once mined).'),
    block_time: IsoTime.optional().describe("The timestamp of the transaction's block (from the finalized receipt)."),
    status: VerdictStatus.optional(),
    summary: z.string().optional().describe('The verdict in one sentence.'),
    proofs: ProofsSchema.optional(),
  })
  .openapi('VerificationResult');

/** `?recheck=1` of the public verify: ask the chain even when the transaction is final. */
export const RecheckQuery = z.object({
  recheck: z
    .enum(['0', '1'])
    .optional()
    .openapi({
      param: { name: 'recheck', in: 'query' },
      description:
        '1: read the ledger transaction from the chain now even when it is final (by default a final transaction is served from its stored finalized receipt, without a chain read), and read the record from the table rather than from the instance.',
      example: '1',
    }),
});

const Base64 = z.string().openapi({ format: 'byte' });
const LowerHex64 = z.string().regex(/^[0-9a-f]{64}$/).openapi({ example: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' });

/** The statement the service vouches for (lib/evidence/statement.ts); its RFC 8785 form hashes to server_hash. */
export const EvidenceStatementSchema = z
  .object({
    statement_type: z.literal('evidence-anchor-v1'),
    image_hash: LowerHex64,
    hash_algorithm: z.literal('SHA-256'),
    chain_index: z.number().int().min(0),
    chain_hash: LowerHex64,
    previous_hash: LowerHex64.nullable().openapi({ type: ['string', 'null'] }),
    device_public_key: z.string().regex(/^[0-9a-f]{64}$/),
    device_signature: z.string().regex(/^[0-9a-f]{128}$/),
    anchored_at: IsoTime,
  })
  .openapi('EvidenceStatement');

/** GET /api/v2/evidence/receipt/{image_hash}: lib/evidence/receipt.ts `EvidenceReceipt`, field for field. */
export const EvidenceReceiptSchema = z
  .object({
    receipt_version: z.literal(1),
    image_hash: LowerHex64,
    hash_algorithm: z.literal('SHA-256'),
    server_hash: LowerHex64.describe('SHA-256 of statement_canonical (UTF-8).'),
    anchored_at: IsoTime,
    statement: EvidenceStatementSchema,
    statement_canonical: z.string().describe('The exact RFC 8785 canonical form of statement that was hashed, for implementations without JCS.'),
    pq_signature: z.object({
      algorithm: z.literal('ML-DSA-65'),
      standard: z.literal('FIPS 204'),
      key_id: z.string(),
      public_key: Base64.describe('The 1952-byte ML-DSA-65 public key.'),
      signature: Base64.describe('The 3309-byte signature (pure ML-DSA, empty context) over the 32 raw bytes of server_hash.'),
      signed_message: z.literal('server_hash (32 raw bytes)'),
    }),
    timestamp: z.object({
      token: Base64.describe('The RFC 3161 TimeStampResp (§2.4.2), DER; its message imprint is SHA-256 = image_hash.'),
      format: z.literal('RFC 3161 TimeStampResp, DER, base64'),
      gen_time: IsoTime,
      serial: z.string(),
      policy: z.string().openapi({ example: '2.25.32470788606908332339531699348079175478' }),
      tsa_certificates: z.array(z.string()).describe('PEM, leaf first, root last. Pin the root you trust; this copy only shows consistency.'),
    }),
    timestamp_pq: z
      .object({
        token: Base64.describe('A second RFC 3161 TimeStampResp over the same imprint (SHA-256 = image_hash), signed with ML-DSA-65 (CMS per RFC 9882: signatureAlgorithm id-ml-dsa-65, digest SHA-512, signed attributes), DER. It carries no certificates (certReq false): they are in tsa_certificates.'),
        format: z.literal('RFC 3161 TimeStampResp, DER, base64'),
        signature_algorithm: z.literal('ML-DSA-65'),
        gen_time: IsoTime,
        serial: z.string(),
        policy: z.string().openapi({ example: '2.25.240188381855450738062415899808185980756' }).describe('The post-quantum TSA policy (TSA_PQ_POLICY_OID).'),
        tsa_certificates: z.array(z.string()).describe('The ML-DSA-65 chain (RFC 9881), PEM, leaf first, root last. Pin the post-quantum root you trust. On the command line it takes OpenSSL 3.5 or later and `openssl cms -verify` (`openssl ts -verify` cannot verify ML-DSA tokens yet); docs/verify-without-us.md "Post-quantum time".'),
      })
      .optional()
      .describe('Present on anchors made while the post-quantum TSA was on (every anchor then gets both tokens; the request does not ask for it). Absent on older anchors and where the post-quantum TSA is off (TSA_PQ=off, a remote TSA, AWS without TSA_PQ_KMS_KEY_ID).'),
    ledger: z.object({
      chain_id: z.number().int(),
      tx_hash: z.string().regex(/^0x[0-9a-f]{64}$/),
      from: z.string().describe('The service wallet that sent the transaction.'),
      block_number: z.number().int().nullable().openapi({ type: ['integer', 'null'] }),
      status: z.enum(['pending', 'confirmed', 'failed']).describe('As last recorded by the service; verify asks the chain.'),
      explorer_url: z.string().url(),
      input_data: z
        .string()
        .regex(/^0x(?:[0-9a-f]{128}|4d45524b4c452d5348413235363a[0-9a-f]{64})$/)
        .describe(
          'The transaction input. Direct mode: 0x || image_hash || server_hash. Batch mode (LEDGER_BATCH_WINDOW_MS > 0): 0x || ASCII "MERKLE-SHA256:" || the batch\'s Merkle root (merkle.root).',
        ),
      merkle: z
        .object({
          algorithm: z.literal('RFC 6962 SHA-256'),
          leaf: z.literal('SHA-256(0x00 || image_hash || server_hash)'),
          leaf_hash: LowerHex64.describe('The anchor\'s leaf hash.'),
          leaf_index: z.number().int().min(0).describe('The leaf\'s position in the batch (0-based, leaves in image_hash order).'),
          tree_size: z.number().int().min(1).describe('How many anchors the batch holds.'),
          path: z.array(LowerHex64).describe('The RFC 6962 inclusion (audit) path: sibling hashes from the leaf up, nearest first; inner nodes are SHA-256(0x01 || left || right). Verify with RFC 9162 §2.1.3.2.'),
          root: LowerHex64.describe('The batch\'s Merkle root, carried by the transaction\'s input data.'),
        })
        .optional()
        .describe('Batch mode only: where the anchor sits in the Merkle tree whose root the transaction carries. Absent for a direct anchor (one transaction per hash).'),
      final: z
        .object({
          since: IsoTime.describe('When the service recorded that the transaction reached the configured finality.'),
          finality: z.enum(['latest', 'finalized']).describe('latest: mined counts as final (a chain that never reorganises); finalized: at or below the node\'s finalized block.'),
          block_number: z.number().int(),
          block_hash: z.string().regex(/^0x[0-9a-f]{64}$/),
          block_time: IsoTime,
          confirmations: z.number().int().min(1).describe('Confirmations when finality was recorded.'),
          from: z.string().describe('The sender as read from the chain then.'),
        })
        .optional()
        .describe(
          'Present once the transaction is final: what the service read from the chain then. A verifier reading the chain later must find the transaction in this block (else the ledger proof fails); `final` and `final_since` of every verify answer come from here.',
        ),
    }),
    device: z.object({
      public_key_hex: z.string(),
      signature_hex: z.string(),
      chain_index: z.number().int().min(0),
      chain_hash: LowerHex64,
      previous_hash: LowerHex64.nullable().openapi({ type: ['string', 'null'] }),
      device_id: z.string().optional().describe('v1 only: the optional device label.'),
    }),
    evidence_record: z
      .object({
        url: z.string().describe('GET it (no credentials): the DER EvidenceRecord, application/octet-stream; 404 evidence_record_pending until its archive timestamp is made (about a minute after the anchor).'),
        format: z.literal('RFC 4998 EvidenceRecord, DER'),
        data_object: z.literal('the photo (the first hash tree starts from image_hash)'),
      })
      .describe('The RFC 4998 evidence record of the photo: long-term proof of its existence, renewed by the service before its timestamps weaken.'),
    how_to_verify: z.array(z.string()),
  })
  .openapi('EvidenceReceipt', {
    description:
      'Self-contained bundle to check the evidence without this service: the statement and its RFC 8785 canonical form, the ML-DSA-65 public key and signature, ' +
      'the RFC 3161 TimeStampResp with the TSA certificates, the ledger transaction, and the device key, signature and chain position.',
  });
