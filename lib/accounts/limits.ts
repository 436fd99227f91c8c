import type { TierName, TierTable } from '../config.js';
import { type Clock, systemClock } from './clock.js';
import type { CounterRepository } from './counter-repository.js';

/**
 * Per-minute rate limits and monthly quotas as DynamoDB counters (CONTRACT "Limits").
 *
 * Counter items (counters table):
 * - `rate#<account_id>#<YYYY-MM-DDTHH:MM>`: requests of one account in one UTC minute;
 * - `quota#<account_id>#<YYYY-MM>`: successful evidence operations of one account in one UTC month;
 * - `ip#<ip>#<YYYY-MM-DDTHH:MM>`: requests to public endpoints from one client IP in one minute;
 * - `ipauth#<ip>#<YYYY-MM-DDTHH:MM>`: register and login attempts from one client IP in one minute.
 * Each is `{ pk, count, expires_at }`, `expires_at` being the end of the window in epoch seconds
 * (the table's TTL attribute). Windows are fixed and named in the key, so a new window starts
 * from zero by itself: nothing has to run for a month to begin.
 */

/** A fixed UTC window: its id (part of the counter key), start and end (exclusive). */
export interface Window {
  id: string;
  start: Date;
  end: Date;
}

/** The UTC minute containing `now` (id `2026-11-22T10:15`). */
export function minuteWindow(now: Date): Window {
  const start = Math.floor(now.getTime() / 60_000) * 60_000;
  return { id: new Date(start).toISOString().slice(0, 16), start: new Date(start), end: new Date(start + 60_000) };
}

/** The UTC calendar month containing `now` (id `2026-11`). */
export function monthWindow(now: Date): Window {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const start = new Date(Date.UTC(y, m, 1));
  return { id: start.toISOString().slice(0, 7), start, end: new Date(Date.UTC(y, m + 1, 1)) };
}

/** Counter keys (see the module comment). */
export const counterKeys = {
  rate: (accountId: string, w: Window) => `rate#${accountId}#${w.id}`,
  quota: (accountId: string, w: Window) => `quota#${accountId}#${w.id}`,
  ip: (ip: string, w: Window) => `ip#${ip.slice(0, 64)}#${w.id}`,
  ipAuth: (ip: string, w: Window) => `ipauth#${ip.slice(0, 64)}#${w.id}`,
};

/** Key prefixes of the counters this module owns (the quota reset touches only these). */
export const LIMIT_COUNTER_PREFIXES = ['rate#', 'quota#', 'ip#', 'ipauth#'] as const;

/** Which per-IP bucket: public read endpoints, or register/login (brute-force protection). */
export type IpScope = 'public' | 'auth';

/** Register and login allow this fraction of the public per-IP rate (30 a minute by default). */
export const AUTH_RATE_DIVISOR = 20;

/** Outcome of a fixed-window rate check, with what the RateLimit-* headers need. */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window ends (≥ 1): RateLimit-Reset and Retry-After. */
  resetSeconds: number;
}

/** Outcome of a quota reservation. */
export interface QuotaReservation {
  allowed: boolean;
  limit: number;
  /** Units used this month, this reservation included when allowed. */
  used: number;
  resetsAt: Date;
  /** Seconds until the month ends (≥ 1): Retry-After of a `quota_exceeded`. */
  retryAfterSeconds: number;
  /** The counter reserved from: a refund goes back to the same month even if the request spans midnight. */
  counterKey: string;
}

/** Response of `GET /account/usage` (CONTRACT "Accounts"). */
export interface Usage {
  tier: TierName;
  period_start: string;
  resets_at: string;
  monthly_quota: number;
  used: number;
  remaining: number;
  rate_per_minute: number;
}

const toEpoch = (d: Date) => Math.floor(d.getTime() / 1000);
const secondsUntil = (end: Date, now: Date) => Math.max(1, Math.ceil((end.getTime() - now.getTime()) / 1000));

/** The limits of the service, over the counters table. */
export class LimitService {
  constructor(
    private readonly counters: CounterRepository,
    private readonly tiers: TierTable,
    private readonly publicRatePerMinute: number,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Counts one API-key request against the account's per-minute rate. */
  async consumeRate(accountId: string, tier: TierName): Promise<RateDecision> {
    return this.consumeMinute((w) => counterKeys.rate(accountId, w), this.tiers[tier].rate_per_minute);
  }

  /** Counts one request from `ip` against the per-IP rate of `scope`. */
  async consumeIp(ip: string, scope: IpScope = 'public'): Promise<RateDecision> {
    return scope === 'auth'
      ? this.consumeMinute((w) => counterKeys.ipAuth(ip, w), this.authRatePerMinute())
      : this.consumeMinute((w) => counterKeys.ip(ip, w), this.publicRatePerMinute);
  }

  /** Register and login attempts allowed per client IP and minute. */
  authRatePerMinute(): number {
    return Math.max(1, Math.floor(this.publicRatePerMinute / AUTH_RATE_DIVISOR));
  }

  /**
   * Reserves one unit of the account's monthly quota before an evidence operation.
   *
   * Why reserve-then-refund rather than count-on-success: counting after success would let N
   * concurrent requests at `quota - 1` all pass the check and all succeed (they would all see
   * one unit left). Reserving first makes the conditional increment the gate, so exactly one of
   * them proceeds; the price is that a request that then fails must give its unit back
   * ({@link refundQuota}), so that failed requests consume nothing. A refund lost to a crash
   * costs the customer one unit; we accept that rather than ever letting the quota be exceeded.
   */
  async reserveQuota(accountId: string, tier: TierName): Promise<QuotaReservation> {
    const now = this.clock();
    const month = monthWindow(now);
    const limit = this.tiers[tier].monthly_quota;
    const counterKey = counterKeys.quota(accountId, month);
    const count = await this.counters.increment(counterKey, limit, toEpoch(month.end));
    return {
      allowed: count !== undefined,
      limit,
      used: count ?? limit,
      resetsAt: month.end,
      retryAfterSeconds: secondsUntil(month.end, now),
      counterKey,
    };
  }

  /** Gives back a reserved unit (the operation failed). */
  async refundQuota(reservation: QuotaReservation): Promise<void> {
    if (reservation.allowed) await this.counters.decrement(reservation.counterKey);
  }

  /** Consumption of the current month. */
  async usage(accountId: string, tier: TierName): Promise<Usage> {
    const now = this.clock();
    const month = monthWindow(now);
    const limits = this.tiers[tier];
    const used = await this.counters.read(counterKeys.quota(accountId, month), toEpoch(now));
    return {
      tier,
      period_start: month.start.toISOString(),
      resets_at: month.end.toISOString(),
      monthly_quota: limits.monthly_quota,
      used,
      remaining: Math.max(0, limits.monthly_quota - used),
      rate_per_minute: limits.rate_per_minute,
    };
  }

  /** Resets the current month's quota of one account (operators: goodwill, support, tests). */
  async resetQuota(accountId: string): Promise<void> {
    await this.counters.remove(counterKeys.quota(accountId, monthWindow(this.clock())));
  }

  /** Deletes every limit counter whose window has ended; how many it deleted. */
  async removeExpiredCounters(): Promise<number> {
    return this.counters.removeExpired(LIMIT_COUNTER_PREFIXES, toEpoch(this.clock()));
  }

  private async consumeMinute(key: (w: Window) => string, limit: number): Promise<RateDecision> {
    const now = this.clock();
    const w = minuteWindow(now);
    const count = await this.counters.increment(key(w), limit, toEpoch(w.end));
    return {
      allowed: count !== undefined,
      limit,
      remaining: count === undefined ? 0 : Math.max(0, limit - count),
      resetSeconds: secondsUntil(w.end, now),
    };
  }
}
