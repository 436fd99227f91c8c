import type { MiddlewareHandler, Next } from 'hono';
import type { TierName } from '../accounts/tiers.js';
import { getKeyAuthDeps, type KeyAuthDepsProvider } from '../deps/key-auth.js';
import { IpRateWindow } from '../accounts/ip-rate-window.js';
import type { IpScope, LimitService, QuotaReservation, RateDecision } from '../accounts/limits.js';
import { quotaExceeded } from '../accounts/quota-holds.js';
import { describeError, log } from '../log.js';
import type { AppContext, AppEnv } from './app.js';
import { isStoreUnavailable } from '../errors.js';
import { tooManyRequests } from './errors.js';

/** Options shared by the limit middleware. */
export interface LimitOptions {
  /**
   * Dependencies (tests inject a clock or a config); by default the function's account
   * dependencies when it names them (`c.var.deps.accounts`), else the process-wide key-auth ones.
   * Only the limits are used, so the full AccountDeps provider fits as well.
   */
  deps?: KeyAuthDepsProvider;
}

/** Which limit a RateLimit policy names (its name in `RateLimit-Policy` and `RateLimit`). */
export type RatePolicyName = 'account' | 'account-endpoints' | 'ip' | 'ip-auth';

/**
 * Sets the rate-limit fields, before `next()`, so they stay on the final response, error
 * responses included. Two generations, because clients read both:
 * - the current draft-ietf-httpapi-ratelimit-headers fields (Structured Fields, RFC 9651):
 *   `RateLimit-Policy: "<name>";q=<quota>;w=60` (the policy: quota units per 60-second window)
 *   and `RateLimit: "<name>";r=<remaining>;t=<seconds until the window ends>`;
 * - the older draft's `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`, kept for
 *   the clients written against them.
 */
export function setRateLimitHeaders(c: AppContext, d: RateDecision, policy: RatePolicyName): void {
  c.header('RateLimit-Policy', `"${policy}";q=${d.limit};w=60`);
  c.header('RateLimit', `"${policy}";r=${d.remaining};t=${d.resetSeconds}`);
  c.header('RateLimit-Limit', String(d.limit));
  c.header('RateLimit-Remaining', String(d.remaining));
  c.header('RateLimit-Reset', String(d.resetSeconds));
}

/**
 * Runs the handler under a quota reservation: 429 `quota_exceeded` (Retry-After until the month
 * ends) when it was refused; otherwise `next()`, and the unit is given back when the response is
 * ≥ 400 or the handler threw.
 */
export async function runWithQuota(
  c: AppContext,
  next: Next,
  limits: LimitService,
  reservation: QuotaReservation,
  accountId: string,
  tier: TierName,
): Promise<void> {
  if (!reservation.allowed) throw quotaExceeded(reservation, tier);
  let succeeded = false;
  try {
    await next();
    // Errors thrown below were already turned into the response by onError: the status tells.
    // A handler that answers 2xx for a refused request (an RFC 3161 rejection is a 200 reply
    // with status `rejection`) marks it with {@link markNotCompleted}: it consumes nothing either.
    succeeded = c.res.status < 400 && c.get(NOT_COMPLETED) !== true;
  } finally {
    if (!succeeded) await refundQuota(limits, reservation, accountId);
  }
  if (!succeeded) return;
  // Completed: the unit stays counted. The settle rides on a later charge (LimitService); one that
  // never goes out (the process died) leaves the hold open, and the reconciler then refunds it
  // (the customer is never charged twice; at worst not at all).
  limits.settleQuota(reservation);
}

const NOT_COMPLETED = 'quotaNotCompleted';

/**
 * Marks the request as not completed although its HTTP status is a success (decisions.md "Limits": a
 * request that fails consumes nothing), so that {@link runWithQuota} refunds its unit.
 */
export function markNotCompleted(c: AppContext): void {
  c.set(NOT_COMPLETED, true);
}

/** Gives a reserved unit back (no-op for a refused one); a failure is logged, never thrown. */
export async function refundQuota(limits: LimitService, reservation: QuotaReservation, accountId: string): Promise<void> {
  try {
    await limits.refundQuota(reservation);
  } catch (error) {
    // The response stands; the hold stays open and the reconciler refunds it (quota-holds.ts).
    log.warn('quota refund failed; the reconciler refunds the hold', { account_id: accountId, counter: reservation.counterKey, ...describeError(error) });
  }
}

/** Options of {@link publicRateLimit}. */
export interface PublicRateLimitOptions extends LimitOptions {
  /**
   * `public` (default): the public endpoints' per-IP rate (PUBLIC_RATE_PER_MINUTE, 600 by default),
   * enforced where PUBLIC_RATE_LIMIT says: `edge` (AWS: the WAF rate-based rule in front of the
   * API; this middleware then does nothing) or `process` (locally: counted in memory). Either way a
   * public read writes nothing to DynamoDB.
   * `auth`: register and login, a separate and stricter bucket against password guessing
   * (1/20 of the public rate, 30 a minute by default), always on its DynamoDB counter, shared by
   * every instance (those are account endpoints, not reads).
   */
  scope?: IpScope;
  /**
   * When the counter cannot be written (the database is down), let the request through instead of
   * answering 503 (only the `auth` scope writes a counter).
   */
  failOpen?: boolean;
}

/**
 * The in-memory windows of the public reads, one per limit service (per set of dependencies: the
 * process-wide one, or a test's). Here rather than in LimitService so that only the functions with
 * a public read carry it. A WeakMap, not a ProcessCache (lib/memo.ts): a window is the state of
 * its limit service and must go with it (a test's), never be dropped while it counts.
 */
const publicWindows = new WeakMap<LimitService, IpRateWindow>();

function publicWindowOf(limits: LimitService): IpRateWindow {
  let w = publicWindows.get(limits);
  if (!w) publicWindows.set(limits, (w = new IpRateWindow()));
  return w;
}

/** Per-client-IP fixed-window rate limit (`c.get('clientIp')`); 429 `rate_limit_exceeded`. */
export function publicRateLimit(options: PublicRateLimitOptions = {}): MiddlewareHandler<AppEnv> {
  const scope = options.scope ?? 'public';
  return async (c, next) => {
    const resolve = options.deps ?? c.var.deps?.accounts ?? getKeyAuthDeps;
    const ip = c.get('clientIp') || 'unknown';
    let d: RateDecision;
    if (scope === 'public') {
      const deps = resolve();
      // At the edge, the WAF counted this request before it reached us (infra/edge-waf.cjs).
      if (deps.config.publicRateLimit === 'edge') return next();
      d = publicWindowOf(deps.limits).consume(ip, deps.config.publicRatePerMinute, deps.clock());
    } else {
      try {
        d = await resolve().limits.consumeIp(ip);
      } catch (error) {
        if (!options.failOpen || !isStoreUnavailable(error)) throw error;
        return next();
      }
    }
    setRateLimitHeaders(c, d, scope === 'auth' ? 'ip-auth' : 'ip');
    if (!d.allowed) {
      const what =
        scope === 'auth'
          ? `Too many register or login attempts from this address: at most ${d.limit} per minute.`
          : `Rate limit exceeded: public endpoints allow ${d.limit} requests per minute per client address.`;
      throw tooManyRequests('rate_limit_exceeded', `${what} Retry in ${d.resetSeconds} s.`, d.resetSeconds, {
        limit: d.limit,
        window: 'minute',
        scope: scope === 'auth' ? 'ip_auth' : 'ip',
      });
    }
    await next();
  };
}
