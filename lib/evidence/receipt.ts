import { encodeBatchData, explorerUrl } from '../ledger/anchor-data.js';
import { storedFinalReceipt } from './final-ledger.js';
import { anchorLeafHash } from './merkle.js';
import type { AnchoredEvidence, TxStatus } from './records.js';
import type { EvidenceStatement } from './statement.js';

/**
 * The self-contained receipt (decisions.md "Evidence"): everything a third party needs to check the
 * evidence without this service — with OpenSSL (the token and the TSA chain), any ML-DSA-65
 * implementation (public key, signature, the statement whose SHA-256 is server_hash) and any
 * Ethereum node (chain id and transaction hash).
 */
export interface EvidenceReceipt {
  receipt_version: 1;
  image_hash: string;
  hash_algorithm: 'SHA-256';
  server_hash: string;
  anchored_at: string;
  /** The statement object; its RFC 8785 canonical form hashes to server_hash. */
  statement: EvidenceStatement;
  /** The exact canonical bytes (UTF-8) that were hashed, for implementations without JCS. */
  statement_canonical: string;
  pq_signature: { algorithm: 'ML-DSA-65'; standard: 'FIPS 204'; key_id: string; public_key: string; signature: string; signed_message: 'server_hash (32 raw bytes)' };
  timestamp: { token: string; format: 'RFC 3161 TimeStampResp, DER, base64'; gen_time: string; serial: string; policy: string; tsa_certificates: string[] };
  /**
   * The post-quantum RFC 3161 token of the same imprint (ML-DSA-65, RFC 9882; its chain ML-DSA-65
   * certificates, RFC 9881), for anchors made while the post-quantum TSA was on
   * (decisions.md "Post-quantum time"). The token carries no certificates: they are here.
   */
  timestamp_pq?: ReceiptPqTimestamp;
  ledger: {
    chain_id: number;
    tx_hash: string;
    from: string;
    block_number: number | null;
    status: TxStatus;
    explorer_url: string;
    input_data: string;
    /** Batch mode: the anchor's place in the tree whose root the transaction carries. */
    merkle?: ReceiptMerkle;
    /** Once final: what the service read from the chain then (final-ledger.ts). */
    final?: ReceiptFinal;
  };
  device: { public_key_hex: string; signature_hex: string; chain_index: number; chain_hash: string; previous_hash: string | null; device_id?: string };
  /** Where its RFC 4998 evidence record is (lib/evidence/archive.ts): the long-term proof, renewed over the years. */
  evidence_record: { url: string; format: 'RFC 4998 EvidenceRecord, DER'; data_object: 'the photo (the first hash tree starts from image_hash)' };
  how_to_verify: string[];
}

/** The post-quantum timestamp as a receipt states it. */
export interface ReceiptPqTimestamp {
  token: string;
  format: 'RFC 3161 TimeStampResp, DER, base64';
  signature_algorithm: 'ML-DSA-65';
  gen_time: string;
  serial: string;
  policy: string;
  tsa_certificates: string[];
}

/** A final transaction as the service recorded it (the one verdict's `final` and `final_since`). */
export interface ReceiptFinal {
  since: string;
  finality: 'latest' | 'finalized';
  block_number: number;
  block_hash: string;
  block_time: string;
  confirmations: number;
  from: string;
}

/** The inclusion proof as a receipt states it (decisions.md "Ledger batching"). */
export interface ReceiptMerkle {
  algorithm: 'RFC 6962 SHA-256';
  leaf: 'SHA-256(0x00 || image_hash || server_hash)';
  leaf_hash: string;
  leaf_index: number;
  tree_size: number;
  path: string[];
  root: string;
}

/** The path of a hash's evidence record (GET /api/v2/evidence/evidence-record/{image_hash}). */
export const evidenceRecordPath = (imageHash: string) => `/api/v2/evidence/evidence-record/${imageHash}`;

export function buildReceipt(item: AnchoredEvidence, explorerTemplate: string, publicBaseUrl = ''): EvidenceReceipt {
  const final = storedFinalReceipt(item);
  return {
    receipt_version: 1,
    image_hash: item.image_hash,
    hash_algorithm: 'SHA-256',
    server_hash: item.server_hash,
    anchored_at: item.anchored_at,
    statement: JSON.parse(item.statement) as EvidenceStatement,
    statement_canonical: item.statement,
    pq_signature: {
      algorithm: 'ML-DSA-65',
      standard: 'FIPS 204',
      key_id: item.pq_key_id,
      public_key: item.pq_public_key,
      signature: item.pq_signature,
      signed_message: 'server_hash (32 raw bytes)',
    },
    timestamp: {
      token: item.tsa_response,
      format: 'RFC 3161 TimeStampResp, DER, base64',
      gen_time: item.tsa_gen_time,
      serial: item.tsa_serial,
      policy: item.tsa_policy,
      tsa_certificates: item.tsa_certificates,
    },
    ...(item.tsa_pq_response
      ? {
          timestamp_pq: {
            token: item.tsa_pq_response,
            format: 'RFC 3161 TimeStampResp, DER, base64' as const,
            signature_algorithm: 'ML-DSA-65' as const,
            gen_time: item.tsa_pq_gen_time ?? '',
            serial: item.tsa_pq_serial ?? '',
            policy: item.tsa_pq_policy ?? '',
            tsa_certificates: item.tsa_pq_certificates ?? [],
          },
        }
      : {}),
    ledger: {
      chain_id: item.ledger_chain_id,
      tx_hash: item.tx_hash,
      from: item.ledger_address,
      block_number: item.block_number ?? null,
      status: item.tx_status,
      explorer_url: explorerUrl(explorerTemplate, item.tx_hash),
      input_data: item.merkle ? encodeBatchData(item.merkle.root) : `0x${item.image_hash}${item.server_hash}`,
      ...(item.merkle
        ? {
            merkle: {
              algorithm: 'RFC 6962 SHA-256',
              leaf: 'SHA-256(0x00 || image_hash || server_hash)',
              leaf_hash: anchorLeafHash(item.image_hash, item.server_hash).toString('hex'),
              leaf_index: item.merkle.leaf_index,
              tree_size: item.merkle.tree_size,
              path: item.merkle.path,
              root: item.merkle.root,
            },
          }
        : {}),
      ...(final
        ? {
            final: {
              since: final.recorded_at,
              finality: final.finality,
              block_number: final.block_number,
              block_hash: final.block_hash,
              block_time: final.block_time,
              confirmations: final.confirmations,
              from: final.from,
            },
          }
        : {}),
    },
    device: {
      public_key_hex: item.public_key_hex,
      signature_hex: item.signature_hex,
      chain_index: item.chain_index,
      chain_hash: item.chain_hash,
      previous_hash: item.previous_hash,
      ...(item.device_id ? { device_id: item.device_id } : {}),
    },
    evidence_record: {
      url: `${publicBaseUrl}${evidenceRecordPath(item.image_hash)}`,
      format: 'RFC 4998 EvidenceRecord, DER',
      data_object: 'the photo (the first hash tree starts from image_hash)',
    },
    how_to_verify: [
      'File: sha256sum photo.jpg must print image_hash.',
      'Timestamp: base64-decode timestamp.token to token.tsr, write tsa_certificates to chain.pem (leaf first, root last) and run: openssl ts -verify -data photo.jpg -in token.tsr -CAfile root.pem -untrusted tsa.pem',
      ...(item.tsa_pq_response
        ? [
            'Post-quantum timestamp (timestamp_pq, ML-DSA-65, RFC 9882): evidence verify with the post-quantum root pinned; or OpenSSL 3.5 or later (earlier versions cannot read ML-DSA keys, and openssl ts -verify cannot verify ML-DSA tokens in any version yet): openssl ts -reply -in token-pq.tsr -token_out -out token-pq.der, then openssl cms -verify -inform DER -in token-pq.der -binary -CAfile pq-root.pem -certfile pq-tsa.pem -purpose timestampsign -out tstinfo.der, and the messageImprint in tstinfo.der (openssl asn1parse -inform DER -in tstinfo.der) must be image_hash',
          ]
        : []),
      'Statement: SHA-256 of statement_canonical (UTF-8) must equal server_hash; it is the RFC 8785 form of statement.',
      'Post-quantum signature: ML-DSA-65 (FIPS 204, pure, empty context) verify of pq_signature.signature over the 32 bytes of server_hash with pq_signature.public_key.',
      item.merkle
        ? 'Ledger (batch): eth_getTransactionByHash(ledger.tx_hash) on any node of chain ledger.chain_id; its input must equal ledger.input_data ("MERKLE-SHA256:" || merkle.root) and it must be mined successfully. ' +
          'Then leaf = SHA-256(0x00 || image_hash || server_hash) must lead by merkle.path (RFC 6962; verify as RFC 9162 §2.1.3.2 with merkle.leaf_index and merkle.tree_size) to merkle.root.'
        : 'Ledger: eth_getTransactionByHash(ledger.tx_hash) on any node of chain ledger.chain_id; its input must equal ledger.input_data (image_hash || server_hash) and it must be mined successfully.',
      'Device: Ed25519 verify of device.signature_hex over the 32 raw bytes of image_hash with device.public_key_hex; chain_hash = SHA-256(previous_hash or 32 zero bytes || image_hash).',
      'Long term: download evidence_record.url (made within about a minute of the anchor, renewed before its timestamps expire) and check it against the photo with any RFC 4998 verifier and the TSA root: evidence verify photo.jpg --evidence-record <file>.',
    ],
  };
}
