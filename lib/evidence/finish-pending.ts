import { describeError, log } from '../log.js';
import type { EvidenceRepository } from './repository.js';

/** What the finishing job needs of the ledger sender. */
export interface PendingLedger {
  rebroadcastPending(): Promise<{ resent: number; filled: number; pending: number }>;
  /** With the nonce, any version of a replaced transaction counts (`txHash`: the one mined). */
  waitForReceipt(
    txHash: string,
    timeoutMs: number,
    nonce?: number,
  ): Promise<{ status: 'confirmed' | 'failed'; blockNumber: number; txHash?: string; txHashes?: string[] } | null>;
}

export interface FinishReport {
  resent: number;
  checked: number;
  confirmed: number;
  failed: number;
  stillPending: number;
}

/**
 * Finishes accepted anchors whose transaction was not mined before their request answered:
 * re-sends any transaction the node may have lost (same raw bytes, so the same hash), then
 * records each receipt that has arrived. Idempotent: it only moves records from pending to
 * confirmed/failed, conditional on the transaction hash they name.
 */
export async function finishPendingAnchors(
  deps: { repo: EvidenceRepository; ledger: PendingLedger; clock?: () => Date },
  options: { limit?: number; receiptWaitMs?: number } = {},
): Promise<FinishReport> {
  const clock = deps.clock ?? (() => new Date());
  const report: FinishReport = { resent: 0, checked: 0, confirmed: 0, failed: 0, stillPending: 0 };
  try {
    report.resent = (await deps.ledger.rebroadcastPending()).resent;
  } catch (error) {
    log.warn('finish-pending: rebroadcast failed; receipts are still checked', describeError(error));
  }
  const pending = await deps.repo.listPending(options.limit ?? 200);
  for (const { image_hash } of pending) {
    const item = await deps.repo.get(image_hash);
    if (!item?.tx_hash || item.tx_status !== 'pending') continue;
    report.checked++;
    const receipt = await deps.ledger.waitForReceipt(item.tx_hash, options.receiptWaitMs ?? 0, item.tx_nonce);
    if (!receipt) {
      report.stillPending++;
      continue;
    }
    await deps.repo.setTxStatus(image_hash, item.tx_hash, receipt.status, receipt.blockNumber, clock().toISOString(), receipt);
    if (receipt.status === 'confirmed') report.confirmed++;
    else report.failed++;
  }
  return report;
}
