/**
 * A final transaction's stored receipt (pure: no I/O). Once an anchor's transaction is final, its
 * receipt is read from the chain and checked once, and stored on the record (ledger-finality.ts);
 * the one verdict (verdict.ts, ledger `final`) then serves it instead of asking the chain on every
 * read (a final transaction cannot change; `?recheck=1` asks the chain again).
 */
import type { AnchoredEvidence, FinalLedgerReceipt } from './records.js';

/** The stored final receipt of an anchored record, if it still describes the record's transaction. */
export function storedFinalReceipt(item: AnchoredEvidence): FinalLedgerReceipt | undefined {
  const f = item.ledger_final;
  if (!f || item.tx_status !== 'confirmed') return undefined;
  // It was stored for the transaction the record names, sent by the record's wallet, in its block.
  if (f.from.toLowerCase() !== item.ledger_address.toLowerCase()) return undefined;
  if (item.block_number !== undefined && item.block_number !== f.block_number) return undefined;
  // Stored before the input data and the transaction hash were kept with it: the chain is read instead.
  if (typeof f.input_data !== 'string') return undefined;
  if (typeof f.tx_hash !== 'string' || f.tx_hash !== item.tx_hash.toLowerCase()) return undefined;
  return f;
}
