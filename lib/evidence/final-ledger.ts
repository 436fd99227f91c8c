/**
 * A final transaction's stored receipt as a ledger verdict (pure: no I/O). Once an anchor's
 * transaction is final, its receipt is read from the chain and checked once, and stored on the
 * record (ledger-finality.ts); verification then serves that instead of asking the chain on every
 * read (a final transaction cannot change; `?recheck=1` asks the chain again).
 */
import { checkLedgerData, type LedgerVerdict } from './proof-check.js';
import type { AnchoredEvidence, FinalLedgerReceipt } from './records.js';

/** A ledger verdict as verification reports it, with the stored final receipt when it came from one. */
export type LedgerCheck = Omit<LedgerVerdict, 'transaction' | 'data'> & {
  /** Set when the verdict is the stored final receipt (no chain read). */
  final?: FinalLedgerReceipt;
};

/** The stored final receipt of an anchored record, if it still describes the record's transaction. */
export function storedFinalReceipt(item: AnchoredEvidence): FinalLedgerReceipt | undefined {
  const f = item.ledger_final;
  if (!f || item.tx_status !== 'confirmed') return undefined;
  // It was stored for the transaction the record names, sent by the record's wallet, in its block.
  if (f.from.toLowerCase() !== item.ledger_address.toLowerCase()) return undefined;
  if (item.block_number !== undefined && item.block_number !== f.block_number) return undefined;
  // Stored before the input data was kept with it: the chain is read instead.
  if (typeof f.input_data !== 'string') return undefined;
  return f;
}

/**
 * The ledger verdict of a final record: what was read from the chain when it became final and
 * held then (mined, succeeded, the service's wallet), with the input data checked again now,
 * offline, against the record (image_hash || server_hash, or the batch root its inclusion path
 * leads to): a changed server_hash or a flipped bit in a stored path fails here as on the chain.
 * `confirmations` is the count at finality and stays so.
 */
export function finalLedgerCheck(final: FinalLedgerReceipt, item: AnchoredEvidence): LedgerCheck {
  const data = checkLedgerData(final.input_data ?? '', { image_hash: item.image_hash, server_hash: item.server_hash, merkle: item.merkle });
  return {
    found: true,
    valid: data.ok,
    status: 'confirmed',
    block_number: final.block_number,
    confirmations: final.confirmations,
    data_matches: data.ok,
    from: final.from,
    final,
  };
}
