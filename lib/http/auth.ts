import type { MiddlewareHandler } from 'hono';
import type { AuthenticatedKey } from '../accounts/key-auth.js';
import { getKeyAuthDeps, type KeyAuthDepsProvider } from '../deps/key-auth.js';
import type { QuotaReservation, RateDecision } from '../accounts/limits.js';
import { assertFeature, type Feature, isTierName, tierAllows, tierLabel, type TierName } from '../accounts/tiers.js';
import type { AppContext, AppEnv } from './app.js';
import { HttpError, tooManyRequests, unauthorized } from './errors.js';
import { refundQuota, runWithQuota, setRateLimitHeaders } from './limits.js';

/** Options of {@link apiKeyAuth}. */
export interface ApiKeyAuthOptions {
  /** The feature the endpoint provides; the caller's tier must include it (else 403 `tier_insufficient`). */
  feature: Feature;
  /**
   * A quota-counted endpoint (v2 hash, anchor, full; v1 anchor, timestamp): also reserve one unit
   * of the monthly quota, and give it back when the request fails (decisions.md "Limits").
   */
  quota?: boolean;
  /**
   * Dependencies (tests inject a clock or a config); by default the process-wide key
   * authenticator and limits only (lib/deps/key-auth.ts), not the account service.
   */
  deps?: KeyAuthDepsProvider;
  /**
   * Also take the key as the password of HTTP Basic credentials (RFC 7617; any user name), as
   * standard RFC 3161 clients and PDF signers send them for a `tsaUrl`. A 401 then carries a
   * `WWW-Authenticate: Basic` challenge with this realm, which clients that wait for one need.
   */
  basicRealm?: string;
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/;

/**
 * Authenticates `X-API-Key` for evidence endpoints, in this order:
 * 1. the key: 401 `invalid_api_key` when missing, malformed (checked offline, no lookup), unknown
 *    or deactivated, and for a JWT sent as an API key;
 * 2. the per-minute rate of the account (all its keys together): every authenticated request
 *    counts (decisions.md "Limits"), so the RateLimit-* headers are on every response from here on,
 *    and 429 `rate_limit_exceeded` with Retry-After once the minute's budget is spent;
 * 3. the tier gate: 403 `tier_insufficient` naming the tier needed;
 * 4. with `quota`, the monthly quota: 429 `quota_exceeded` with Retry-After until the month ends;
 *    the unit is given back when the handler answers ≥ 400 or throws (lib/http/limits.ts).
 * Sets the context variables `accountId`, `tier` and `keyId` (read them with {@link apiKeyCaller}).
 *
 * Round trips: the key's GetItem (it carries the tier, lib/accounts/key-auth.ts), then the rate
 * counter's and (with `quota`) the quota counter's conditional updates together. The answers are
 * those of the checks made one after the other: a request the rate refuses gets its quota unit
 * back before the 429 (it never counts; a concurrent request may see the unit taken meanwhile, as
 * with any request that fails after its reservation); a request the tier gate refuses reserves no
 * quota; a request refused for quota has spent its rate unit, as every authenticated request does.
 */
export function apiKeyAuth(options: ApiKeyAuthOptions): MiddlewareHandler<AppEnv> {
  const resolve = options.deps ?? getKeyAuthDeps;
  const refuse = (detail: string) =>
    options.basicRealm === undefined
      ? unauthorized('invalid_api_key', detail)
      : new HttpError(401, 'invalid_api_key', 'Unauthorized', detail, {}, { 'WWW-Authenticate': `Basic realm="${options.basicRealm}", charset="UTF-8"` });
  return async (c, next) => {
    const key = c.req.header('x-api-key')?.trim() || (options.basicRealm !== undefined ? basicPassword(c.req.header('authorization')) : undefined);
    if (!key) {
      throw refuse(
        options.basicRealm === undefined
          ? 'Missing API key: send it in the X-API-Key header.'
          : 'Missing API key: send it in the X-API-Key header, or as the password of HTTP Basic credentials (any user name).',
      );
    }
    if (JWT_SHAPE.test(key)) {
      throw unauthorized(
        'invalid_api_key',
        'The X-API-Key header holds a JWT. Evidence endpoints take an API key (eas_…); the JWT is for account endpoints (Authorization: Bearer).',
      );
    }
    const deps = resolve();
    const caller = await deps.apiKeys.authenticate(key);
    if (!caller) throw refuse('The API key is malformed, unknown or deactivated.');
    c.set('accountId', caller.accountId);
    c.set('tier', caller.tier);
    c.set('keyId', caller.keyId);

    const { limits } = deps;
    const reserve = options.quota === true && tierAllows(caller.tier, options.feature);
    const [rateResult, quotaResult] = await Promise.allSettled([
      limits.consumeRate(caller.accountId, caller.tier),
      reserve ? limits.reserveQuota(caller.accountId, caller.tier) : undefined,
    ]);
    const reservation: QuotaReservation | undefined = quotaResult.status === 'fulfilled' ? quotaResult.value : undefined;
    if (rateResult.status === 'rejected') {
      if (reservation) await refundQuota(limits, reservation, caller.accountId);
      throw rateResult.reason;
    }
    const rate: RateDecision = rateResult.value;
    setRateLimitHeaders(c, rate, 'account');
    if (!rate.allowed) {
      if (reservation) await refundQuota(limits, reservation, caller.accountId);
      throw tooManyRequests(
        'rate_limit_exceeded',
        `Rate limit exceeded: the per-minute limit of the ${tierLabel(caller.tier)} tier is ${rate.limit} requests (all keys of the account together). Retry in ${rate.resetSeconds} s.`,
        rate.resetSeconds,
        { limit: rate.limit, window: 'minute', tier: caller.tier },
      );
    }
    assertFeature(caller.tier, options.feature);
    if (!options.quota) return next();
    if (quotaResult.status === 'rejected') throw quotaResult.reason;
    if (!reservation) throw new Error('apiKeyAuth: no quota reservation');
    await runWithQuota(c, next, limits, reservation, caller.accountId, caller.tier);
  };
}

/** The password of `Authorization: Basic base64(user:password)` (RFC 7617 §2), or undefined. */
function basicPassword(header: string | undefined): string | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const password = colon === -1 ? '' : decoded.slice(colon + 1).trim();
  return password || undefined;
}

/** The caller that {@link apiKeyAuth} authenticated (throws if it did not run). */
export function apiKeyCaller(c: AppContext): AuthenticatedKey {
  const accountId = c.get('accountId');
  const tier = c.get('tier');
  const keyId = c.get('keyId');
  if (typeof accountId !== 'string' || !isTierName(tier) || typeof keyId !== 'string') {
    throw new Error('apiKeyCaller() needs apiKeyAuth() before the handler');
  }
  return { accountId, tier: tier as TierName, keyId };
}
