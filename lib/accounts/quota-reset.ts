import type { AccountService } from './accounts.js';
import type { LimitService } from './limits.js';

/**
 * The monthly quota reset: run by the scheduled job (functions/jobs/quota-reset.ts, EventBridge
 * `cron(0 0 1 * ? *)`, 00:00 UTC on the 1st) and by `npm run admin -- reset-quotas [account]`.
 *
 * What "reset" means. Quota counters are keyed by month (`quota#<account>#2026-11`), so a new
 * month starts at zero by itself: no run is needed for anyone to get their quota back, and a
 * missed or late run never locks anyone out. What a run does:
 * - without an account: deletes every limit counter (quota, rate, per-IP) whose window has ended.
 *   At 00:00 on the 1st that is every quota counter of the month just ended, so the monthly
 *   counters are reset as decisions.md "Limits" says; it is also the clean-up that the table's TTL does
 *   only eventually in AWS (up to days late) and never on dynalite. Other counters in the table
 *   (statistics) are left alone, and so is every counter of a window still running.
 * - with an account (e-mail or id): resets that account's current month to zero (operators'
 *   goodwill after an incident, support, demos).
 * Idempotent: both are deletions conditioned on the window being over (or of one fixed key), so
 * a second run, a retried or duplicated EventBridge delivery, or two runs at once end in the same
 * state and never touch a running window.
 */

/** What a run did. */
export interface QuotaResetResult {
  /** Limit counters of ended windows deleted by this run. */
  expired_counters_deleted: number;
  /** The account whose current month was reset, when one was given. */
  account_reset?: string;
}

/** What a run needs: the accounts (to find the one named) and the limit counters. */
export interface QuotaResetDeps {
  accounts: Pick<AccountService, 'find'>;
  limits: Pick<LimitService, 'resetQuota' | 'removeExpiredCounters'>;
}

/** Options of {@link runQuotaReset}. */
export interface QuotaResetOptions {
  /** E-mail address or account id: reset that account's current month instead of the sweep. */
  account?: string | undefined;
  deps: QuotaResetDeps;
}

/** Thrown when the account to reset does not exist. */
export class UnknownAccountError extends Error {
  constructor(readonly account: string) {
    super(`no account "${account}"`);
    this.name = 'UnknownAccountError';
  }
}

/** The reset itself (the scheduled job and the admin CLI both call this). */
export async function runQuotaReset({ account, deps }: QuotaResetOptions): Promise<QuotaResetResult> {
  if (account !== undefined) {
    const found = await deps.accounts.find(account);
    if (!found) throw new UnknownAccountError(account);
    await deps.limits.resetQuota(found.account_id);
    return { expired_counters_deleted: 0, account_reset: found.account_id };
  }
  return { expired_counters_deleted: await deps.limits.removeExpiredCounters() };
}
