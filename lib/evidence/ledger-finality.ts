/**
 * Recording an anchor's transaction as final (the reconciler's step after its receipt): the
 * transaction is read from the chain once more and judged by the one checker (verify.ts
 * checkLedger); when it holds and its block is final, its receipt (block, block time,
 * confirmations at finality) is stored on the record with one idempotent conditional write
 * (EvidenceRepository.recordFinalLedger), so that verification never asks the chain about it again.
 *
 * Final means what the ledger sender already waits for (LEDGER_CONFIRMATION_TAG): `finalized`
 * (Polygon): the block is at or below the node's finalized block; `latest` (the local chain,
 * which never reorganises): mined.
 */
import type { RpcReader } from '../ledger/rpc-reader.js';
import { checkLedgerTransaction, type LedgerVerdict } from './proof-check.js';
import type { AnchoredEvidence, FinalLedgerReceipt } from './records.js';
import type { EvidenceRepository } from './repository.js';
import { readLedger } from './ledger-read.js';

/** What reading finality needs: a read-only node and the configured finality rule. */
export interface FinalityReader {
  rpc: Pick<RpcReader, 'getTransaction' | 'getTransactionReceipt' | 'blockNumber' | 'getBlock'>;
  confirmationTag: 'latest' | 'finalized';
}

/** The ledger verdict read now, and the final receipt when the transaction holds and is final. */
export async function readLedgerFinality(
  reader: FinalityReader,
  item: AnchoredEvidence,
  now: Date,
): Promise<{ check: LedgerVerdict; final: FinalLedgerReceipt | null }> {
  const read = await readLedger(reader.rpc, item.tx_hash);
  const check = checkLedgerTransaction(read, { image_hash: item.image_hash, server_hash: item.server_hash, from: item.ledger_address, merkle: item.merkle });
  if (!check.valid || check.block_number === null) return { check, final: null };
  const tx = read.tx; // its input data is kept with the receipt, so that every verify can check it again offline
  const [block, finalized] = await Promise.all([
    reader.rpc.getBlock(check.block_number),
    reader.confirmationTag === 'finalized' ? reader.rpc.getBlock('finalized') : Promise.resolve(null),
  ]);
  if (!block || block.number !== check.block_number || !tx) return { check, final: null };
  if (reader.confirmationTag === 'finalized' && (!finalized || finalized.number < block.number)) return { check, final: null };
  return {
    check,
    final: {
      block_number: block.number,
      block_hash: block.hash,
      block_time: new Date(block.timestamp * 1000).toISOString(),
      confirmations: check.confirmations,
      from: (check.from ?? '').toLowerCase(),
      finality: reader.confirmationTag,
      recorded_at: now.toISOString(),
      tx_hash: item.tx_hash.toLowerCase(),
      input_data: tx.input,
    },
  };
}

/**
 * Records the final receipt of an anchored, confirmed record that has none yet: 'recorded' (this
 * call stored it), 'already' (another writer did), or 'not_final' (not final yet, or it does not
 * hold: the record stays unfinished and the next pass looks again).
 */
export async function recordLedgerFinality(
  deps: { repo: Pick<EvidenceRepository, 'recordFinalLedger'>; finality: FinalityReader },
  item: AnchoredEvidence,
  now: Date,
): Promise<'recorded' | 'already' | 'not_final'> {
  if (item.ledger_final) return 'already';
  const { final } = await readLedgerFinality(deps.finality, item, now);
  if (!final) return 'not_final';
  return (await deps.repo.recordFinalLedger(item, final)) ? 'recorded' : 'already';
}
