import { DomainError } from '../errors.js';
import type { SweepStep } from './counter-repository.js';
import { type LimitService, parseHoldId, type QuotaReservation } from './limits.js';
import { tierLabel, type TierName } from './tiers.js';

/**
 * Exact charging (decisions.md "Faults and retries"): every reserved unit of the monthly quota is a
 * hold on the counter item (limits.ts), ended exactly once — settled when its operation completed,
 * refunded when it did not. A request ends its own hold; one that died (a killed Lambda, a refund
 * lost to a database outage) leaves it open, and this reconciliation ends it:
 * - an anchor's hold (kind `a`) follows its evidence item, which records the hold it is paid by,
 *   and a hash registration's (kind `g`) follows the account's registration item, which records
 *   the hold of the request that made it: the `judge` (lib/evidence/reconcile.ts) says keep,
 *   refund, or wait while the operation may still name it;
 * - a request's own hold (kind `r`) still open after `requestMaxMs` belongs to a request that
 *   never answered: refunded. (A request that completed and then failed to settle is refunded
 *   too: the customer is never charged for an answer that may not have reached them.)
 * A hold younger than {@link OWNER_GRACE_MS} is left to its request, unread.
 */
export type HoldVerdict = 'settle' | 'refund' | 'wait';

export interface HoldReport {
  open: number;
  settled: number;
  refunded: number;
  /** With a sweep step: whether its segment reached the end of the counters table. */
  swept?: boolean;
}

/** An open hold as the judge sees it: its meter, its id and the id's parts. */
export interface OpenHold {
  counterKey: string;
  holdId: string;
  kind: 'a' | 'g';
  ref: string;
  ageMs: number;
}

/**
 * A hold this young is still its request's to end: the request settles it within a second of its
 * publish (limits.ts settleQuota) or gives its unit back, so judging it would only cost a read and
 * a write for what the request does anyway. (A batch anchor holds up to 50 units of a device for
 * the second or two before their turn: a pass of the reconciler then would judge each of them.)
 */
export const OWNER_GRACE_MS = 10_000;

export async function reconcileQuotaHolds(
  limits: LimitService,
  judge: (hold: OpenHold) => Promise<HoldVerdict>,
  options: { nowMs: number; requestMaxMs: number; sweep?: SweepStep | undefined },
): Promise<HoldReport> {
  const found = await limits.openHolds(options.sweep);
  const report: HoldReport = { open: 0, settled: 0, refunded: 0, ...(found.swept !== undefined ? { swept: found.swept } : {}) };
  for (const { counterKey, holdId } of found.holds) {
    report.open++;
    const hold = parseHoldId(holdId);
    const age = hold ? options.nowMs - hold.createdAtMs : Number.POSITIVE_INFINITY;
    if (age < OWNER_GRACE_MS) continue;
    let verdict: HoldVerdict;
    if (hold && hold.kind !== 'r') verdict = await judge({ counterKey, holdId, kind: hold.kind, ref: hold.ref, ageMs: age });
    else verdict = age >= options.requestMaxMs ? 'refund' : 'wait';
    if (verdict === 'wait') continue;
    if (await limits.endHold(counterKey, holdId, verdict)) report[verdict === 'settle' ? 'settled' : 'refunded']++;
  }
  return report;
}

/** The 429 `quota_exceeded` of a refused reservation (Retry-After: until the month ends). */
export function quotaExceeded(reservation: QuotaReservation, tier: TierName): DomainError {
  const resetsAt = reservation.resetsAt.toISOString();
  return new DomainError(
    'limited',
    'quota_exceeded',
    `Monthly quota exhausted: the ${tierLabel(tier)} tier includes ${reservation.limit} evidence operations per calendar month (UTC) and this account has used them. The quota resets at ${resetsAt}; a higher tier raises it.`,
    { limit: reservation.limit, window: 'month', tier, resets_at: resetsAt },
    reservation.retryAfterSeconds,
  );
}
