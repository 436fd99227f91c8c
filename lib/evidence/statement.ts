import { canonicalize } from '../crypto/jcs.js';
import { sha256Hex } from '../crypto/hash.js';

/**
 * The canonical statement the service vouches for. `server_hash` = SHA-256 of its RFC 8785
 * canonical JSON, so anyone can recompute it from the receipt; the ML-DSA-65 signature covers
 * the 32 bytes of `server_hash`, and the ledger transaction carries it next to `image_hash`.
 * `statement_type` separates this structure from any other JSON we might ever sign.
 */
/** The statement_type of every statement this service signs. */
export const STATEMENT_TYPE = 'evidence-anchor-v1';

export interface EvidenceStatement {
  statement_type: typeof STATEMENT_TYPE;
  image_hash: string;
  hash_algorithm: 'SHA-256';
  chain_index: number;
  chain_hash: string;
  previous_hash: string | null;
  device_public_key: string;
  device_signature: string;
  anchored_at: string;
}

export function buildStatement(fields: Omit<EvidenceStatement, 'statement_type' | 'hash_algorithm'>): EvidenceStatement {
  return {
    statement_type: STATEMENT_TYPE,
    image_hash: fields.image_hash,
    hash_algorithm: 'SHA-256',
    chain_index: fields.chain_index,
    chain_hash: fields.chain_hash,
    previous_hash: fields.previous_hash,
    device_public_key: fields.device_public_key,
    device_signature: fields.device_signature,
    anchored_at: fields.anchored_at,
  };
}

/** RFC 8785 canonical form of the statement. */
export function canonicalStatement(statement: EvidenceStatement): string {
  return canonicalize(statement);
}

/** server_hash = SHA-256(JCS(statement)), lower-case hex. */
export function computeServerHash(statement: EvidenceStatement): string {
  return sha256Hex(canonicalStatement(statement));
}
