import { randomUUID } from 'node:crypto';
import type { TierName, TierTable } from './tiers.js';
import { type Clock, systemClock } from './clock.js';
import type { CounterRepository, SweepStep } from './counter-repository.js';

/**
 * Per-minute rate limits and monthly quotas as DynamoDB counters (decisions.md "Limits").
 *
 * Counter items (counters table):
 * - `rate#<account_id>#<YYYY-MM-DDTHH:MM>`: requests of one account in one UTC minute;
 * - `quota#<account_id>#<YYYY-MM>`: successful evidence operations of one account in one UTC month;
 * - `ip#<ip>#<YYYY-MM-DDTHH:MM>`: no longer written (public reads are limited at the edge or in
 *   process, ip-rate-window.ts); the prefix stays in LIMIT_COUNTER_PREFIXES so that the counters
 *   of earlier versions are swept;
 * - `ipauth#<ip>#<YYYY-MM-DDTHH:MM>`: register and login attempts from one client IP in one minute;
 * - `acct#<account_id>#<YYYY-MM-DDTHH:MM>`: requests of one account to the JWT account endpoints in one minute;
 * - `authfail#<scope>#<ip>#<YYYY-MM-DDTHH:MM>`: failed login (`login`) or admin-token (`admin`)
 *   attempts from one client IP in one 15-minute window (the id is the window's first minute).
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

/** The fixed UTC window of `minutes` minutes containing `now` (id: its first minute). */
export function minutesWindow(now: Date, minutes: number): Window {
  const size = minutes * 60_000;
  const start = Math.floor(now.getTime() / size) * size;
  return { id: new Date(start).toISOString().slice(0, 16), start: new Date(start), end: new Date(start + size) };
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
  ipAuth: (ip: string, w: Window) => `ipauth#${ip.slice(0, 64)}#${w.id}`,
  account: (accountId: string, w: Window) => `acct#${accountId}#${w.id}`,
  authFailures: (scope: GuessScope, ip: string, w: Window) => `authfail#${scope}#${ip.slice(0, 64)}#${w.id}`,
};

/** The quota counter of an account for the month containing `at`. */
export function quotaCounterKey(accountId: string, at: Date): string {
  return counterKeys.quota(accountId, monthWindow(at));
}

/** Key prefixes of the counters this module owns (the quota reset touches only these). */
export const LIMIT_COUNTER_PREFIXES = ['rate#', 'quota#', 'ip#', 'ipauth#', 'acct#', 'authfail#'] as const;

/** Which per-IP bucket: public read endpoints, or register/login (brute-force protection). */
export type IpScope = 'public' | 'auth';

/** Which credential a guess is against: the login password or the operators' admin token. */
export type GuessScope = 'login' | 'admin';

/** Failed guesses are counted per client address in fixed windows of this many minutes. */
export const GUESS_WINDOW_MINUTES = 15;

/** The per-minute and per-window numbers {@link LimitService} enforces besides the tier table. */
export interface LimitRates {
  /** Public endpoints, per client address and minute (PUBLIC_RATE_PER_MINUTE). */
  publicPerMinute: number;
  /** JWT account endpoints, per account and minute (ACCOUNT_RATE_PER_MINUTE). */
  accountPerMinute: number;
  /** Failed login or admin-token attempts per client address and 15-minute window (AUTH_FAILURES_PER_WINDOW). */
  authFailuresPerWindow: number;
}

/**
 * A guess attempt admitted by {@link LimitService.admitGuess}: its failure slot is reserved, and
 * given back by {@link LimitService.forgiveGuess} when the credential was right.
 */
export interface GuessAdmission extends RateDecision {
  counterKey: string;
}

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
  /** The hold this reservation is (see quota-holds.ts): settled or refunded exactly once. */
  holdId: string;
}

/** Response of `GET /account/usage` (decisions.md "Accounts"). */
export interface Usage {
  tier: TierName;
  period_start: string;
  resets_at: string;
  monthly_quota: number;
  used: number;
  remaining: number;
  rate_per_minute: number;
}

/**
 * A hold id: `<kind>:<epoch ms>:<ref>`. Kind `r` is a request's own hold (random ref), kind `a` an
 * anchor's (ref = image hash and claim id), whose outcome the evidence item tells.
 */
export function newHoldId(kind: 'r' | 'a', now: Date, ref: string = randomUUID()): string {
  return `${kind}:${now.getTime()}:${ref}`;
}

/** The parts of a hold id (undefined for one that is not ours). */
export function parseHoldId(id: string): { kind: 'r' | 'a'; createdAtMs: number; ref: string } | undefined {
  const m = /^([ra]):(\d{1,15}):(.+)$/.exec(id);
  if (!m) return undefined;
  return { kind: m[1] as 'r' | 'a', createdAtMs: Number(m[2]), ref: m[3] as string };
}

const toEpoch = (d: Date) => Math.floor(d.getTime() / 1000);
const secondsUntil = (end: Date, now: Date) => Math.max(1, Math.ceil((end.getTime() - now.getTime()) / 1000));

/**
 * The limits of the service, over the counters table. The per-IP limit of the public reads is not
 * here: it is counted in memory or at the edge (ip-rate-window.ts), so a public read writes nothing.
 */
export class LimitService {
  constructor(
    private readonly counters: CounterRepository,
    private readonly tiers: TierTable,
    private readonly rates: LimitRates,
    private readonly clock: Clock = systemClock,
  ) {}

  private get publicRatePerMinute(): number {
    return this.rates.publicPerMinute;
  }

  /** Counts one request of an account to the JWT account endpoints (keys, usage, info). */
  async consumeAccount(accountId: string): Promise<RateDecision> {
    return this.consumeMinute((w) => counterKeys.account(accountId, w), this.rates.accountPerMinute);
  }

  /**
   * Admits one guess of a credential from `ip` (login password, admin token) unless that address
   * already failed `authFailuresPerWindow` times in the current 15-minute window; then
   * `allowed: false`, and the caller answers 429 until the window ends, even for the right
   * credential (that is what stops guessing).
   *
   * Why reserve a failure slot before checking rather than count failures afterwards: counting
   * after the check would let N concurrent guesses all pass a count of `limit - 1`; reserving
   * first makes the conditional increment the gate, so at most `limit` guesses are ever checked
   * per window. A right credential gives its slot back ({@link forgiveGuess}). Only the address
   * is counted, never the e-mail address: a per-account lock would let anyone lock a customer
   * out of their own account, whereas this lock ends with its window and binds only the
   * guessing address.
   */
  async admitGuess(scope: GuessScope, ip: string): Promise<GuessAdmission> {
    const now = this.clock();
    const w = minutesWindow(now, GUESS_WINDOW_MINUTES);
    const limit = this.rates.authFailuresPerWindow;
    const counterKey = counterKeys.authFailures(scope, ip, w);
    const count = await this.counters.increment(counterKey, limit, toEpoch(w.end));
    return {
      allowed: count !== undefined,
      limit,
      remaining: count === undefined ? 0 : Math.max(0, limit - count),
      resetSeconds: secondsUntil(w.end, now),
      counterKey,
    };
  }

  /** Gives back the failure slot of an admitted guess whose credential was right. */
  async forgiveGuess(admission: GuessAdmission): Promise<void> {
    if (admission.allowed) await this.counters.decrement(admission.counterKey);
  }

  /** Counts one API-key request against the account's per-minute rate. */
  async consumeRate(accountId: string, tier: TierName): Promise<RateDecision> {
    return this.consumeMinute((w) => counterKeys.rate(accountId, w), this.tiers[tier].rate_per_minute);
  }

  /** Counts one register or login attempt from `ip` (its DynamoDB counter, shared by every instance). */
  async consumeIp(ip: string): Promise<RateDecision> {
    return this.consumeMinute((w) => counterKeys.ipAuth(ip, w), this.authRatePerMinute());
  }

  /** Register and login attempts allowed per client IP and minute. */
  authRatePerMinute(): number {
    return Math.max(1, Math.floor(this.publicRatePerMinute / AUTH_RATE_DIVISOR));
  }

  /**
   * Reserves one unit of the account's monthly quota before an evidence operation.
   *
   * Why reserve-then-settle rather than count-on-success: counting after success would let N
   * concurrent requests at `quota - 1` all pass the check and all succeed (they would all see
   * one unit left). Reserving first makes the conditional increment the gate, so exactly one of
   * them proceeds. The unit is a hold (`holdId`, recorded on the counter in the same write): the
   * request settles it when the operation completed and refunds it when it failed; a hold that a
   * crash or an outage left open is ended by the reconciler (quota-holds.ts), so that an account
   * pays exactly for the operations that completed.
   */
  async reserveQuota(accountId: string, tier: TierName, requestedHoldId?: string): Promise<QuotaReservation> {
    const now = this.clock();
    const holdId = requestedHoldId ?? newHoldId('r', now);
    // An anchor's hold names its time (newHoldId): its month is the one the anchor recorded.
    const at = new Date(parseHoldId(holdId)?.createdAtMs ?? now.getTime());
    const month = monthWindow(at);
    const limit = this.tiers[tier].monthly_quota;
    const counterKey = quotaCounterKey(accountId, at);
    const count = await this.counters.increment(counterKey, limit, toEpoch(month.end), holdId);
    return {
      allowed: count !== undefined,
      limit,
      used: count ?? limit,
      resetsAt: month.end,
      retryAfterSeconds: secondsUntil(month.end, now),
      counterKey,
      holdId,
    };
  }

  /** Gives back a reserved unit (the operation failed); at most once per reservation. */
  async refundQuota(reservation: QuotaReservation): Promise<void> {
    if (reservation.allowed) await this.counters.endHold(reservation.counterKey, reservation.holdId, true);
  }

  /** Keeps a reserved unit (the operation completed); at most once, and never after a refund. */
  async settleQuota(reservation: QuotaReservation): Promise<void> {
    if (reservation.allowed) await this.counters.endHold(reservation.counterKey, reservation.holdId, false);
  }

  /** Ends a hold found open by the reconciler: true when this call ended it. */
  async endHold(counterKey: string, holdId: string, outcome: 'settle' | 'refund'): Promise<boolean> {
    return this.counters.endHold(counterKey, holdId, outcome === 'refund');
  }

  /**
   * Quota counters with open holds (the reconciler's input), from the counters with holds only;
   * with `sweep`, also one segment of the table (CounterRepository.listHolds).
   */
  async openHolds(sweep?: SweepStep): Promise<{ holds: { counterKey: string; holdId: string }[]; swept?: boolean }> {
    const r = await this.counters.listHolds('quota#', sweep);
    return { holds: r.holds.flatMap((c) => c.holds.map((holdId) => ({ counterKey: c.pk, holdId }))), ...(r.swept !== undefined ? { swept: r.swept } : {}) };
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
