import { parseHoldId } from '../accounts/limits.js';
import { type HoldReport, type HoldVerdict, type OpenHold } from '../accounts/quota-holds.js';
import { DomainError } from '../errors.js';
import { describeError, log } from '../log.js';
import { isStoreUnavailable } from '../errors.js';
import { type AnchorDeps, DEFAULT_LEASE_MS, finishPublishing } from './anchor-steps.js';
import { type FinalityReader, recordLedgerFinality } from './ledger-finality.js';
import type { SweepStep } from './ports.js';
import { type AnchoredEvidence, type EvidenceItem, isAnchored } from './records.js';

/**
 * The reconciler (docs/state-machines.md): at start-up and on its schedule it settles every anchor
 * that an interrupted invocation left unfinished, so that nothing stays in limbo:
 * - `publishing` → finished with the transaction already signed (re-sent byte for byte; a new one
 *   only when that one provably can never be mined);
 * - `anchored` with the transaction pending → its receipt recorded, and the chain link set anchored;
 * - `anchored` with the transaction confirmed → once final, its finalized receipt stored on the
 *   record (ledger-finality.ts), which verification then serves without asking the chain;
 * - quota holds left open → settled when their anchor or registration names them, refunded
 *   otherwise (an anchor's claim that never published is barred first, so that it never can:
 *   lib/accounts/quota-holds.ts).
 * A request that died holding a chain link but before publishing leaves only that link: the next
 * claim of its index frees it once its lease lapsed (EvidenceRepository.claimLink).
 * Every step is the same conditional write the requests use, so reconcilers, requests and
 * retries may run at once: each move happens once.
 */
export interface ReconcileDeps extends AnchorDeps {
  /** Re-sends what the ledger's records hold and the node lacks (the ledger sender's job); optional. */
  rebroadcast?: () => Promise<{ resent: number }>;
  /**
   * Ends the quota holds left open (bound to lib/accounts/quota-holds.ts reconcileQuotaHolds), as
   * of `nowMs` (the reconciler's clock: a hold's age decides what may be done with it); `sweep` as
   * in {@link ReconcileOptions}.
   */
  reconcileHolds?: (judge: (hold: OpenHold) => Promise<HoldVerdict>, sweep: SweepStep | undefined, nowMs: number) => Promise<HoldReport>;
  /** Reads finality from the chain (ledger-finality.ts); without it confirmed anchors simply leave the index. */
  finality?: FinalityReader;
}

export interface ReconcileReport {
  /** Unfinished items examined. */
  checked: number;
  /** publishing anchors finished. */
  finished: number;
  /** Receipts recorded for anchored items. */
  confirmed: number;
  /** Finalized receipts stored (ledger-finality.ts). */
  finalized: number;
  /** Items still waiting: a live lease, or a transaction not yet mined. */
  waiting: number;
  /** Items that could not be advanced now (a dependency down); the next pass retries. */
  failed: number;
  /** How long the oldest anchor still waiting for its ledger transaction has waited (ms); 0 for none. */
  oldestWaitingMs: number;
  resent: number;
  holds?: HoldReport | undefined;
  /** For each table a sweep step read this pass: whether it reached the end of the table. */
  swept?: { evidence?: boolean; holds?: boolean };
}

/** An item whose transaction was announced this long ago or more is resumed (younger: its request is still on it). */
const PUBLISHING_GRACE_MS = DEFAULT_LEASE_MS;
/** A hold of an anchor that never named it is refunded after this long (the reservation runs beside the claim). */
const UNNAMED_HOLD_GRACE_MS = 30_000;

/**
 * What one pass reads (docs/decisions.md "Cost"). By default only the work left: the
 * sparse indexes of unfinished anchors and of counters with open holds, so a pass costs the same
 * on a table of ten items or of ten million.
 */
export interface ReconcileOptions {
  /** Also scan every item of the evidence table (an operator's tool: its cost grows with the table). */
  fullScan?: boolean;
  /**
   * One step of a safety sweep over the tables themselves (lib/store/segment-scan.ts): the local
   * net for an index entry that dynalite lost to a SIGKILL. `npm start` sweeps each table once at
   * start and once after each restart of the database, a segment per pass, and reads the indexes
   * alone otherwise; AWS never sweeps (DynamoDB's indexes lose nothing).
   */
  sweep?: { evidence?: SweepStep | undefined; holds?: SweepStep | undefined };
  /** Most unfinished anchors read from the index per pass (500). */
  limit?: number;
  concurrency?: number;
}

export async function reconcileAnchors(deps: ReconcileDeps, options: ReconcileOptions = {}): Promise<ReconcileReport> {
  const clock = deps.clock ?? (() => new Date());
  const report: ReconcileReport = { checked: 0, finished: 0, confirmed: 0, finalized: 0, waiting: 0, failed: 0, resent: 0, oldestWaitingMs: 0 };
  if (deps.rebroadcast) {
    try {
      report.resent = (await deps.rebroadcast()).resent;
    } catch (error) {
      log.warn('reconcile: ledger re-send failed; anchors are still examined', describeError(error));
    }
  }
  const sweep = options.sweep ?? {};
  const [listed, scanned] = await Promise.all([
    options.fullScan ? deps.repo.scanUnfinished() : deps.repo.listUnfinished(options.limit ?? 500),
    !options.fullScan && sweep.evidence ? deps.repo.scanUnfinishedSegment(sweep.evidence) : undefined,
  ]);
  if (scanned) report.swept = { ...report.swept, evidence: scanned.complete };
  const queue = [...new Set([...listed, ...(scanned?.hashes ?? [])])];
  // The queue's items in batches of 100 (one request, not one per anchor); an item that moves on
  // meanwhile is refused its next conditional write and read again.
  const read = new Map((queue.length > 0 ? await deps.repo.getMany(queue) : []).map((item) => [item.image_hash, item]));
  // A dependency that is down (503) fails every anchor that needs it: the pass stops at the first
  // such failure and leaves the rest to the next pass, with one log line instead of one per anchor.
  let down: { image_hash: string; error: ReturnType<typeof describeError> } | undefined;
  const worker = async () => {
    for (let h = queue.shift(); h !== undefined && !down; h = queue.shift()) {
      report.checked++;
      try {
        await advance(deps, h, clock().getTime(), report, read.get(h) ?? null);
      } catch (error) {
        report.failed++;
        if (error instanceof DomainError && error.kind === 'unavailable') down ??= { image_hash: h, error: describeError(error) };
        else if (isUnavailable(error)) down ??= { image_hash: h, error: describeError(error) };
        else log.warn('reconcile: an anchor could not be advanced now', { image_hash: h, ...describeError(error) });
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 8 }, worker));
  if (down) {
    report.failed += queue.length;
    log.warn('reconcile: a dependency is down; the unfinished anchors wait for the next pass', { left: queue.length + 1, first: down.image_hash, ...down.error });
  }

  if (deps.reconcileHolds) {
    report.holds = await deps.reconcileHolds((hold) => (hold.kind === 'a' ? judgeAnchorHold(deps, hold.ref, hold.holdId, hold.ageMs) : judgeRegistrationHold(deps, hold)), sweep.holds, clock().getTime());
    if (report.holds.swept !== undefined) report.swept = { ...report.swept, holds: report.holds.swept };
  }
  if (report.checked > 0 || report.resent > 0 || (report.holds?.open ?? 0) > 0) log.info('reconcile', { ...report, holds: report.holds });
  return report;
}

/** An outage of the database or the ledger (not a fault of the anchor itself). */
function isUnavailable(error: unknown): boolean {
  return isStoreUnavailable(error) || (error as { code?: unknown } | null)?.code === 'ledger_unavailable';
}

/** Counts an anchor still waiting for its transaction, and how long it has (the pending-too-long alarm's metric). */
function waited(report: ReconcileReport, nowMs: number, anchoredAt: string | undefined): void {
  report.waiting++;
  const since = Date.parse(anchoredAt ?? '');
  if (Number.isFinite(since)) report.oldestWaitingMs = Math.max(report.oldestWaitingMs, nowMs - since);
}

async function advance(deps: ReconcileDeps, imageHash: string, nowMs: number, report: ReconcileReport, prefetched: EvidenceItem | null): Promise<void> {
  const item = prefetched ?? (await deps.repo.get(imageHash));
  if (!item) return;
  if (!item.anchor_state) {
    await deps.repo.clearUnfinished(item);
    return;
  }
  switch (item.anchor_state) {
    case 'publishing': {
      const since = Date.parse(item.anchored_at ?? '') || 0;
      if (nowMs - since < PUBLISHING_GRACE_MS) {
        report.waiting++;
        return;
      }
      const done = await finishPublishing(deps, item, 0);
      report.finished++;
      if (done.tx_status === 'pending') waited(report, nowMs, item.anchored_at);
      return;
    }
    case 'anchored': {
      if (item.tx_status === 'confirmed' && !item.ledger_final && deps.finality && isAnchored(item)) {
        await finalize(deps, deps.finality, item, report);
        return;
      }
      if (item.tx_status === 'failed' || item.ledger_final || !item.tx_hash || (item.tx_status === 'confirmed' && !deps.finality)) {
        await deps.repo.clearUnfinished(item);
        return;
      }
      if (item.tx_status !== 'pending') return;
      const receipt = await deps.ledger.waitForReceipt(item.tx_hash, 0, item.tx_nonce);
      if (!receipt) {
        waited(report, nowMs, item.anchored_at);
        return;
      }
      const at = (deps.clock ?? (() => new Date()))().toISOString();
      const now = await deps.repo.setTxStatus(item, receipt.status, receipt.blockNumber, at, {
        ...(receipt.txHash ? { txHash: receipt.txHash } : {}),
        ...(receipt.txHashes ? { txHashes: receipt.txHashes } : {}),
      });
      if (!now) return; // another invocation recorded it meanwhile
      report.confirmed++;
      // The receipt the sender waited for is final by the same rule: store it in this pass.
      if (isAnchored(now) && now.tx_status === 'confirmed' && deps.finality) await finalize(deps, deps.finality, now, report);
      return;
    }
  }
}

/** Stores the finalized receipt of a confirmed anchor (ledger-finality.ts); not final yet: the next pass. */
async function finalize(deps: ReconcileDeps, finality: FinalityReader, item: AnchoredEvidence, report: ReconcileReport): Promise<void> {
  const outcome = await recordLedgerFinality({ repo: deps.repo, finality }, item, (deps.clock ?? (() => new Date()))());
  if (outcome === 'recorded') report.finalized++;
  else if (outcome === 'already') {
    const now = await deps.repo.get(item.image_hash);
    if (now?.ledger_final) await deps.repo.clearUnfinished(now);
  } else report.waiting++;
}

/**
 * What an open quota hold of a hash registration (`g:<ms>:<image hash>`, on the meter of its
 * account) comes to: the account's registration item names the hold of the request that made it.
 * Named → kept; not named (the request died before its write, or it was a repeat that gives its
 * unit back) → refunded once the request is surely over.
 */
async function judgeRegistrationHold(deps: ReconcileDeps, hold: OpenHold): Promise<HoldVerdict> {
  const accountId = hold.counterKey.split('#')[1] ?? '';
  if (!/^[0-9a-f]{64}$/.test(hold.ref) || !accountId) return 'refund';
  const registration = await deps.repo.getRegistration(hold.ref, accountId);
  if (registration?.hold === hold.holdId) return 'settle';
  if (registration) return 'refund'; // a repeat: the registration names its first request's hold
  if (hold.ageMs < UNNAMED_HOLD_GRACE_MS) return 'wait';
  // Barred, the hold can never pay for a registration: its unit goes back. Registered meanwhile: judged again next pass.
  return (await deps.repo.barRegistration(hold.ref, accountId, hold.holdId)) === 'barred' ? 'refund' : 'wait';
}

/**
 * What an open quota hold of an anchor (`a:<ms>:<image hash>:<claim id>`) comes to: the evidence
 * item names the hold that pays for it. Publishing or anchored under this hold → kept. An anchor
 * under another hold → refunded (this claim can never publish over it). No anchor on the hash:
 * while the request may still publish, wait; after the grace the claim is barred (it can never
 * publish from then on) and the hold refunded.
 */
async function judgeAnchorHold(deps: ReconcileDeps, ref: string, holdId: string, ageMs: number): Promise<HoldVerdict> {
  const [imageHash = '', claimId = ''] = ref.split(':');
  if (!parseHoldId(holdId) || !/^[0-9a-f]{64}$/.test(imageHash) || !claimId) return 'refund';
  const item = await deps.repo.get(imageHash);
  if (item?.anchor_state) return item.quota_hold === holdId ? 'settle' : 'refund';
  if (ageMs < UNNAMED_HOLD_GRACE_MS) return 'wait';
  // Barred, the claim can never publish: its unit goes back. An anchor published meanwhile: judged again next pass.
  return (await deps.repo.barClaim(imageHash, claimId)) === 'barred' ? 'refund' : 'wait';
}
