import { randomUUID } from 'node:crypto';
import { DomainError } from '../errors.js';
import { describeError, log } from '../log.js';
import { tierLabel, type TierName, type TierTable } from './tiers.js';
import { type Clock, systemClock } from './clock.js';
import type { CounterRepository, SweepStep } from './counter-repository.js';
import type { MeterRepository } from './meter-repository.js';

/**
 * Per-minute rate limits and monthly quotas as DynamoDB counters (decisions.md "Limits").
 *
 * Counter items (counters table):
 * - `meter#<account_id>#<YYYY-MM>`: the account meter (meter-repository.ts): the API-key requests
 *   of the current UTC minute AND the evidence operations of the UTC month, with their holds, on
 *   one item, so that one conditional write checks and charges both;
 * - `rate#…` and `quota#…` (the rate and the quota on two items) and `ip#<ip>#<minute>` are no
 *   longer written; their prefixes stay in LIMIT_COUNTER_PREFIXES so that counters of earlier
 *   versions are swept;
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
  meter: (accountId: string, w: Window) => `meter#${accountId}#${w.id}`,
  ipAuth: (ip: string, w: Window) => `ipauth#${ip.slice(0, 64)}#${w.id}`,
  account: (accountId: string, w: Window) => `acct#${accountId}#${w.id}`,
  authFailures: (scope: GuessScope, ip: string, w: Window) => `authfail#${scope}#${ip.slice(0, 64)}#${w.id}`,
};

/** The meter (rate and quota) of an account for the month containing `at`. */
export function quotaCounterKey(accountId: string, at: Date): string {
  return counterKeys.meter(accountId, monthWindow(at));
}

/** Key prefixes of the counters this module owns (the quota reset touches only these). */
export const LIMIT_COUNTER_PREFIXES = ['meter#', 'rate#', 'quota#', 'ip#', 'ipauth#', 'acct#', 'authfail#'] as const;

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
 * The kinds of hold: `r` a request's own (random ref), ended by the request; `a` an anchor's (ref =
 * image hash and claim id) and `g` a hash registration's (ref = image hash), whose outcomes the
 * evidence item and the account's registration tell (quota-holds.ts).
 */
export type HoldKind = 'r' | 'a' | 'g';

/** A hold id: `<kind>:<epoch ms>:<ref>`. */
export function newHoldId(kind: HoldKind, now: Date, ref: string = randomUUID()): string {
  return `${kind}:${now.getTime()}:${ref}`;
}

/** The parts of a hold id (undefined for one that is not ours). */
export function parseHoldId(id: string): { kind: HoldKind; createdAtMs: number; ref: string } | undefined {
  const m = /^([rag]):(\d{1,15}):(.+)$/.exec(id);
  if (!m) return undefined;
  return { kind: m[1] as HoldKind, createdAtMs: Number(m[2]), ref: m[3] as string };
}

/** What one charge of the meter decided: the rate, and with a hold the quota. */
export interface Charge {
  rate: RateDecision;
  quota?: QuotaReservation;
}

/** The 429 `rate_limit_exceeded` of a refused rate unit (Retry-After: until the minute ends). */
export function rateLimitExceeded(rate: RateDecision, tier: TierName): DomainError {
  return new DomainError(
    'limited',
    'rate_limit_exceeded',
    `Rate limit exceeded: the per-minute limit of the ${tierLabel(tier)} tier is ${rate.limit} requests (all keys of the account together). Retry in ${rate.resetSeconds} s.`,
    { limit: rate.limit, window: 'minute', tier },
    rate.resetSeconds,
  );
}

/** Settles that ride on the next charge of their meter, or go out by themselves after this long. */
const SETTLE_FLUSH_MS = 1000;

const toEpoch = (d: Date) => Math.floor(d.getTime() / 1000);
const secondsUntil = (end: Date, now: Date) => Math.max(1, Math.ceil((end.getTime() - now.getTime()) / 1000));

/**
 * The limits of the service, over the counters table. The per-IP limit of the public reads is not
 * here: it is counted in memory or at the edge (ip-rate-window.ts), so a public read writes nothing.
 *
 * API-key requests are charged on the account meter (meter-repository.ts) with one conditional
 * write each: the rate unit, and for an evidence operation the quota unit under a hold. A hold
 * whose operation completed is settled without a write of its own: the settle rides on the next
 * charge of the same meter from this process, or goes out by itself once it has waited
 * SETTLE_FLUSH_MS for one. A settle that never goes out (the process died or froze) is found by the
 * reconciliation (quota-holds.ts), which ends the hold as its operation's record says.
 */
export class LimitService {
  /** Holds this process saw complete, per meter, waiting to ride on a charge: hold id → when it began waiting (performance.now()). */
  private readonly settles = new Map<string, Map<string, number>>();
  /** The minute each meter counted at its last charge from here (which form of the write to try first). */
  private readonly minutes = new Map<string, string>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly counters: CounterRepository,
    private readonly meters: MeterRepository,
    private readonly tiers: TierTable,
    private readonly rates: LimitRates,
    private readonly clock: Clock = systemClock,
  ) {}

  private get publicRatePerMinute(): number {
    return this.rates.publicPerMinute;
  }

  /**
   * Charges one API-key request of the account: its rate unit, and with `holdId` one unit of the
   * monthly quota held under that id, in one conditional write. A request the rate refuses is
   * charged nothing (and its quota is not touched); one the quota refuses spends its rate unit.
   * The hold's month is the one its id names (an anchor resumed across midnight pays in the month
   * it began).
   */
  async charge(accountId: string, tier: TierName, holdId?: string, options: { rate?: boolean } = {}): Promise<Charge> {
    const now = this.clock();
    const minute = minuteWindow(now);
    const at = holdId ? new Date(parseHoldId(holdId)?.createdAtMs ?? now.getTime()) : now;
    const month = monthWindow(at);
    const pk = counterKeys.meter(accountId, month);
    const limits = this.tiers[tier];
    const pending = [...(this.settles.get(pk)?.keys() ?? [])];
    const out = await this.meters.charge({
      pk,
      minute: minute.id,
      rateLimit: options.rate === false && holdId ? null : limits.rate_per_minute,
      ...(holdId ? { hold: { id: holdId, quotaLimit: limits.monthly_quota, atMs: now.getTime() } } : {}),
      settle: pending,
      expiresAt: toEpoch(month.end),
      newMinute: this.minutes.get(pk) !== minute.id,
    });
    this.remember(pk, out.minute);
    if (out.settled) this.settled(pk, pending);
    const rate: RateDecision = {
      allowed: out.rate.allowed,
      limit: limits.rate_per_minute,
      remaining: out.rate.allowed ? Math.max(0, limits.rate_per_minute - out.rate.count) : 0,
      resetSeconds: secondsUntil(minute.end, now),
    };
    if (!holdId) return { rate };
    const quota: QuotaReservation = {
      allowed: out.rate.allowed && out.quota?.allowed === true,
      limit: limits.monthly_quota,
      used: out.quota?.used ?? 0,
      resetsAt: month.end,
      retryAfterSeconds: secondsUntil(month.end, now),
      counterKey: pk,
      holdId,
    };
    return { rate, quota };
  }

  private remember(pk: string, minute: string): void {
    this.minutes.delete(pk);
    this.minutes.set(pk, minute);
    if (this.minutes.size > 10_000) this.minutes.delete(this.minutes.keys().next().value as string);
  }

  private settled(pk: string, ids: readonly string[]): void {
    const set = this.settles.get(pk);
    if (!set) return;
    for (const id of ids) set.delete(id);
    if (set.size === 0) this.settles.delete(pk);
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

  /**
   * One charge with a hold (see {@link charge}), as its quota reservation: not allowed when either
   * limit refused it. For tests and tools that look at the quota alone.
   */
  async reserveQuota(accountId: string, tier: TierName, holdId: string = newHoldId('r', this.clock())): Promise<QuotaReservation> {
    const { rate, quota } = await this.charge(accountId, tier, holdId);
    return { ...(quota as QuotaReservation), allowed: rate.allowed && quota?.allowed === true };
  }

  /** Counts one API-key request against the account's per-minute rate (no quota unit). */
  async consumeRate(accountId: string, tier: TierName): Promise<RateDecision> {
    return (await this.charge(accountId, tier)).rate;
  }

  /** Counts one register or login attempt from `ip` (its DynamoDB counter, shared by every instance). */
  async consumeIp(ip: string): Promise<RateDecision> {
    return this.consumeMinute((w) => counterKeys.ipAuth(ip, w), this.authRatePerMinute());
  }

  /** Register and login attempts allowed per client IP and minute. */
  authRatePerMinute(): number {
    return Math.max(1, Math.floor(this.publicRatePerMinute / AUTH_RATE_DIVISOR));
  }

  /** Gives back a reserved unit (the operation failed); at most once per reservation. */
  async refundQuota(reservation: Pick<QuotaReservation, 'allowed' | 'counterKey' | 'holdId'>): Promise<void> {
    if (!reservation.allowed) return;
    this.settled(reservation.counterKey, [reservation.holdId]);
    await this.meters.endHold(reservation.counterKey, reservation.holdId, true);
  }

  /**
   * Keeps a reserved unit (the operation completed); at most once, and never after a refund. No
   * write of its own: the settle rides on this meter's next charge from this process, or goes out
   * by itself within SETTLE_FLUSH_MS (see the class comment).
   */
  settleQuota(reservation: Pick<QuotaReservation, 'allowed' | 'counterKey' | 'holdId'>): void {
    if (!reservation.allowed) return;
    let set = this.settles.get(reservation.counterKey);
    if (!set) this.settles.set(reservation.counterKey, (set = new Map()));
    if (!set.has(reservation.holdId)) set.set(reservation.holdId, performance.now());
    this.arm();
  }

  /**
   * The timer fires when the oldest waiting settle has waited SETTLE_FLUSH_MS, and sends the meters
   * that have one that old (each meter's waiting settles in one write); younger ones keep waiting
   * for a charge. So under steady traffic a settle almost always rides, and none waits longer.
   */
  private arm(): void {
    if (this.flushTimer || this.settles.size === 0) return;
    let oldest = Infinity;
    for (const ids of this.settles.values()) for (const since of ids.values()) oldest = Math.min(oldest, since);
    this.flushTimer = setTimeout(() => void this.flushSettles({ dueOnly: true }), Math.max(0, oldest + SETTLE_FLUSH_MS - performance.now())).unref();
  }

  /** Sends every settle still waiting (a process about to stop; tests); `dueOnly`: the meters with one that waited SETTLE_FLUSH_MS (the timer's). */
  async flushSettles(options: { dueOnly?: boolean } = {}): Promise<void> {
    this.flushTimer = undefined;
    const due = performance.now() - SETTLE_FLUSH_MS;
    const waiting = [...this.settles]
      .filter(([, ids]) => !options.dueOnly || [...ids.values()].some((since) => since <= due))
      .map(([pk, ids]) => [pk, [...ids.keys()]] as const);
    await Promise.all(
      waiting.map(async ([pk, ids]) => {
        try {
          await this.meters.settle(pk, ids);
          this.settled(pk, ids);
        } catch (error) {
          // Kept for the next charge or flush (a second from now); the reconciliation ends them if this process goes.
          const set = this.settles.get(pk);
          for (const id of ids) if (set?.has(id)) set.set(id, performance.now());
          log.warn('quota settle failed; tried again with the next charge', { counter: pk, ...describeError(error) });
        }
      }),
    );
    this.arm();
  }

  /** Ends a hold found open by the reconciler: true when this call ended it. */
  async endHold(counterKey: string, holdId: string, outcome: 'settle' | 'refund'): Promise<boolean> {
    this.settled(counterKey, [holdId]);
    return this.meters.endHold(counterKey, holdId, outcome === 'refund');
  }

  /**
   * Quota holds not yet ended (the reconciler's input), from the meters with holds only; with
   * `sweep`, also one segment of the table (MeterRepository.listHolds).
   */
  async openHolds(sweep?: SweepStep): Promise<{ holds: { counterKey: string; holdId: string }[]; swept?: boolean }> {
    const r = await this.meters.listHolds(sweep);
    return { holds: r.holds.flatMap((c) => c.holds.map((holdId) => ({ counterKey: c.pk, holdId }))), ...(r.swept !== undefined ? { swept: r.swept } : {}) };
  }

  /** Consumption of the current month. */
  async usage(accountId: string, tier: TierName): Promise<Usage> {
    const now = this.clock();
    const month = monthWindow(now);
    const limits = this.tiers[tier];
    const used = await this.meters.used(counterKeys.meter(accountId, month));
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
    const pk = counterKeys.meter(accountId, monthWindow(this.clock()));
    this.settles.delete(pk);
    await this.meters.remove(pk);
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
