/**
 * Recording an anchor's transaction as final (the reconciler's step after its receipt, or the
 * anchor's own write when mined is final: {@link finalAtOnce}): the transaction is read from the chain once more and judged by the one checker (verify.ts
 * checkLedger); when it holds and its block is final, its receipt (block, block time,
 * confirmations at finality) is stored on the record with one idempotent conditional write
 * (EvidenceRepository.recordFinalLedger), so that verification never asks the chain about it again.
 *
 * Final means what the ledger sender already waits for (LEDGER_CONFIRMATION_TAG): `finalized`
 * (Polygon): the block is at or below the node's finalized block; `latest` (the local chain,
 * which never reorganises): mined.
 */
import type { RpcBlock, RpcReader } from '../ledger/rpc-reader.js';
import { checkLedgerTransaction, type LedgerRead, type LedgerVerdict } from './proof-check.js';
import type { AnchoredEvidence, FinalLedgerReceipt } from './records.js';
import type { EvidenceRepository } from './repository.js';
import { readLedger } from './ledger-read.js';

/** What reading finality needs: a read-only node and the configured finality rule. */
export interface FinalityReader {
  rpc: Pick<RpcReader, 'getTransaction' | 'getTransactionReceipt' | 'blockNumber' | 'getBlock'>;
  confirmationTag: 'latest' | 'finalized';
}

/** What a node says now about one transaction and its block: read once, judged for each anchor it carries. */
export interface TransactionFinality {
  read: LedgerRead;
  /** The block that holds it (null while it is not mined). */
  block: RpcBlock | null;
  /** The node's finalized block (`finalized` rule only). */
  finalized: RpcBlock | null;
}

/** Reads the transaction, its receipt, its block (and the finalized block under the `finalized` rule). */
export async function readTransactionFinality(reader: FinalityReader, txHash: string): Promise<TransactionFinality> {
  const read = await readLedger(reader.rpc, txHash);
  const mined = read.tx?.blockNumber;
  if (mined === null || mined === undefined) return { read, block: null, finalized: null };
  const [block, finalized] = await Promise.all([
    reader.rpc.getBlock(mined),
    reader.confirmationTag === 'finalized' ? reader.rpc.getBlock('finalized') : Promise.resolve(null),
  ]);
  return { read, block, finalized };
}

/**
 * The ledger verdict of one anchor on what was read, and its final receipt when the transaction
 * holds for it (the one checker, proof-check.ts) and its block is final. Pure: a batch's anchors
 * share one read.
 */
export function judgeFinality(
  confirmationTag: FinalityReader['confirmationTag'],
  { read, block, finalized }: TransactionFinality,
  item: Pick<AnchoredEvidence, 'image_hash' | 'server_hash' | 'ledger_address' | 'merkle' | 'tx_hash'>,
  now: Date,
): { check: LedgerVerdict; final: FinalLedgerReceipt | null } {
  const check = checkLedgerTransaction(read, { image_hash: item.image_hash, server_hash: item.server_hash, from: item.ledger_address, merkle: item.merkle });
  if (!check.valid || check.block_number === null) return { check, final: null };
  const tx = read.tx; // its input data is kept with the receipt, so that every verify can check it again offline
  if (!block || block.number !== check.block_number || !tx) return { check, final: null };
  if (confirmationTag === 'finalized' && (!finalized || finalized.number < block.number)) return { check, final: null };
  return {
    check,
    final: {
      block_number: block.number,
      block_hash: block.hash,
      block_time: new Date(block.timestamp * 1000).toISOString(),
      confirmations: check.confirmations,
      from: (check.from ?? '').toLowerCase(),
      finality: confirmationTag,
      recorded_at: now.toISOString(),
      tx_hash: item.tx_hash.toLowerCase(),
      input_data: tx.input,
    },
  };
}

/**
 * Under the `latest` rule (mined is final) the anchor's own write can carry its final receipt: the
 * transaction the request just saw mined is read and judged once, right away (one read shared by
 * every anchor of a batch), and the reconciler never has to read nor write the anchor again. Under
 * `finalized`, or when the node does not answer (the RPC reader's deadline), null: the reconciler
 * records it later, as before.
 */
export async function readFinalAtOnce(reader: FinalityReader | undefined, receipt: { status: string; txHash: string } | null): Promise<TransactionFinality | null> {
  if (!reader || reader.confirmationTag !== 'latest' || receipt?.status !== 'confirmed') return null;
  return readTransactionFinality(reader, receipt.txHash).catch(() => null);
}

/** The ledger verdict read now, and the final receipt when the transaction holds and is final. */
export async function readLedgerFinality(
  reader: FinalityReader,
  item: AnchoredEvidence,
  now: Date,
): Promise<{ check: LedgerVerdict; final: FinalLedgerReceipt | null }> {
  return judgeFinality(reader.confirmationTag, await readTransactionFinality(reader, item.tx_hash), item, now);
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
