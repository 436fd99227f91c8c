import { z } from '@hono/zod-openapi';
import { type EvidenceVerdict, PROOF_NAMES, type ProofName } from '../../evidence/verdict.js';

/**
 * The one verdict (lib/evidence/verdict.ts) as every verify answer states it: the overall status,
 * one sentence, and each proof with its state and reason. v1 and v2 verify, the verify page, the
 * PDF and `evidence verify` all render this same verdict.
 */
export const ProofResultSchema = z
  .object({
    state: z
      .enum(['holds', 'fails', 'pending', 'unchecked', 'absent'])
      .describe('holds: checked now and right. fails: checked and wrong. pending: right so far, not complete (not mined yet). unchecked: could not be established. absent: the record has no such proof.'),
    reason: z.string().describe('Why, in one line.'),
  })
  .openapi('ProofResult');

export const ProofsSchema = z
  .object(Object.fromEntries(PROOF_NAMES.map((n) => [n, ProofResultSchema])) as Record<ProofName, typeof ProofResultSchema>)
  .describe(
    'Each proof: statement (SHA-256 of the RFC 8785 statement is server_hash and it names this record), pq_signature (ML-DSA-65 over server_hash), pq_key (a key the service publishes), ' +
      'timestamp (RFC 3161, as of its genTime: a TSA certificate expired since does not undo it, and the reason says so), timestamp_pq (the post-quantum RFC 3161 token, ML-DSA-65 per RFC 9882; absent on records made without it), ledger (the transaction: mined, succeeded, from the service wallet; its input data image_hash || server_hash, or in batch mode ASCII "MERKLE-SHA256:" || the batch root), ' +
      'merkle (batch mode: the RFC 6962 inclusion path leads from SHA-256(0x00 || image_hash || server_hash) to the root the transaction carries; absent for a direct anchor), ' +
      'device_signature (Ed25519 over image_hash), chain_link (chain_hash and previous_hash).',
  )
  .openapi('Proofs');

export const VerdictStatus = z
  .enum(['verified', 'pending', 'failed', 'not_found'])
  .describe(
    'verified: every proof holds. failed: some proof fails. pending: none fails, some is pending (the transaction is not confirmed yet) or unchecked. not_found: no anchored record for this hash (it may be registered: registered_at).',
  );

/** The verdict fields of a hash with no anchored record. */
export function notFoundFields(registered: boolean) {
  return {
    status: 'not_found' as const,
    summary: registered ? 'Not anchored: the hash is registered, but no proof was made for it.' : 'Nothing is anchored for this hash.',
  };
}

/** The verdict's fields of a verify answer. */
export function verdictFields(v: EvidenceVerdict) {
  return { status: v.status, summary: v.summary, proofs: v.proofs };
}
