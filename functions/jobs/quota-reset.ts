import { type QuotaResetResult, runQuotaReset } from '../../lib/accounts/quota-reset.js';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { log } from '../../lib/log.js';

/**
 * The monthly quota reset (lib/accounts/quota-reset.ts says what it does): EventBridge
 * `cron(0 0 1 * ? *)`, 00:00 UTC on the 1st. `npm run admin -- reset-quotas [account]` runs the same.
 */

/** The EventBridge scheduled event, as far as this job reads it. */
export interface ScheduledEvent {
  id?: string;
  time?: string;
  'detail-type'?: string;
}

/**
 * Lambda entry point. The event's time is logged but not used: deleting what has expired as of
 * now is right for an on-time run, a late run and a replay alike.
 */
export async function handler(event: ScheduledEvent = {}): Promise<QuotaResetResult> {
  const result = await runQuotaReset({ deps: getAccountDeps() });
  log.info('quota reset', { event_id: event.id, scheduled_time: event.time, ...result });
  return result;
}
