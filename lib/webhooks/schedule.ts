/**
 * When a delivery is tried again, and when an endpoint is disabled (docs/webhooks.md "Retries").
 * Pure: the clock and the randomness are parameters.
 *
 * The first attempt is made as soon as the delivery exists; after a failed attempt n (1-based) the
 * next one waits schedule[n-1] seconds, jittered by ±10 % so that the deliveries of one outage do
 * not all come back in the same second; after the last wait's attempt fails, the delivery fails.
 * With the default schedule that is 8 attempts over about 27 h 35 min.
 */
import type { DeliveryAttempt } from './records.js';

/** 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (the Standard Webhooks reference schedule). */
export const DEFAULT_RETRY_SCHEDULE_SECONDS: readonly number[] = [5, 300, 1800, 7200, 18000, 36000, 36000];

/** How long an endpoint may fail every attempt before it is disabled. */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 3600_000;

/** ±10 % jitter. */
const JITTER = 0.1;

/**
 * When the attempt after `attempts` failed ones is due (epoch ms), or undefined when the schedule
 * is exhausted and the delivery fails. `random` is in [0, 1).
 */
export function nextAttemptAt(schedule: readonly number[], failedAttempts: number, nowMs: number, random: number): number | undefined {
  const wait = schedule[failedAttempts - 1];
  if (wait === undefined) return undefined;
  return nowMs + Math.round(wait * 1000 * (1 - JITTER + 2 * JITTER * random));
}

/** The outcome of one attempt, as the schedule reads it. */
export type AttemptVerdict = 'delivered' | 'gone' | 'retry';

/** Only 2xx counts as delivered; 410 Gone disables the endpoint at once; everything else is tried again. */
export function verdictOf(attempt: DeliveryAttempt): AttemptVerdict {
  if (attempt.status >= 200 && attempt.status < 300) return 'delivered';
  if (attempt.status === 410) return 'gone';
  return 'retry';
}

/** True when an endpoint failing since `failingSince` (ISO) has failed long enough to be disabled. */
export function failedTooLong(failingSince: string | undefined, nowMs: number): boolean {
  return failingSince !== undefined && nowMs - Date.parse(failingSince) >= DISABLE_AFTER_FAILING_MS;
}
