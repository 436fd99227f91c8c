/**
 * A final transaction's stored receipt as a ledger verdict (pure: no I/O). Once an anchor's
 * transaction is final, its receipt is read from the chain and checked once, and stored on the
 * record (ledger-finality.ts); verification then serves that instead of asking the chain on every
 * read (a final transaction cannot change; `?recheck=1` asks the chain again).
 */
import type { LedgerVerdict } from './proof-check.js';
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
  return f;
}

/**
 * The ledger verdict of a final record: what was read from the chain when it became final and
 * held then (mined, succeeded, the service's wallet, image_hash || server_hash). `confirmations`
 * is the count at finality and stays so.
 */
export function finalLedgerCheck(final: FinalLedgerReceipt): LedgerCheck {
  return {
    found: true,
    valid: true,
    status: 'confirmed',
    block_number: final.block_number,
    confirmations: final.confirmations,
    data_matches: true,
    from: final.from,
    final,
  };
}
