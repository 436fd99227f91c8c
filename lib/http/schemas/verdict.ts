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
      'timestamp (RFC 3161), ledger (the transaction: mined, succeeded, from the service wallet, its input data), merkle (batch inclusion; absent for a direct anchor), ' +
      'device_signature (Ed25519 over image_hash), chain_link (chain_hash and previous_hash).',
  )
  .openapi('Proofs');

export const VerdictStatus = z
  .enum(['verified', 'pending', 'failed'])
  .describe('verified: every proof holds. failed: some proof fails. pending: none fails, some is pending (the transaction is not confirmed yet) or unchecked.');

/** The verdict's fields of a verify answer. */
export function verdictFields(v: EvidenceVerdict) {
  return { status: v.status, summary: v.summary, proofs: v.proofs };
}
