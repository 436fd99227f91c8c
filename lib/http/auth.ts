import type { MiddlewareHandler } from 'hono';
import type { AuthenticatedKey } from '../accounts/key-auth.js';
import { getKeyAuthDeps, type KeyAuthDepsProvider } from '../deps/key-auth.js';
import { type Charge, type LimitService, newHoldId, type QuotaReservation, rateLimitExceeded } from '../accounts/limits.js';
import { quotaExceeded } from '../accounts/quota-holds.js';
import type { QuotaPort } from '../evidence/ports.js';
import { assertFeature, type Feature, isTierName, tierAllows } from '../accounts/tiers.js';
import { describeError, log } from '../log.js';
import type { AppContext, AppEnv } from './app.js';

/** The environment apiKeyAuth leaves to the handler: `c.var.caller` with account, tier and key. */
export type ApiKeyEnv = AppEnv & { Variables: { caller: AuthenticatedKey } };
import { HttpError, unauthorized } from './errors.js';
import { runWithQuota, setRateLimitHeaders } from './limits.js';

/** Options of {@link apiKeyAuth}. */
export interface ApiKeyAuthOptions {
  /** The feature the endpoint provides; the caller's tier must include it (else 403 `tier_insufficient`). */
  feature: Feature;
  /**
   * How the request is charged on the account meter (lib/accounts/limits.ts, decisions.md "Limits"):
   * - `rate` (default): its rate unit only;
   * - `quota`: its rate unit and one unit of the monthly quota under a hold of the request's own,
   *   in one write; the unit goes back when the handler answers ≥ 400 or throws;
   * - `handler`: the handler charges rate and quota together with {@link chargeRequest}, under a
   *   hold its operation's record names (an anchor's evidence item, a registration), once the body
   *   is valid. A request that ends before the handler charged it (a 400) spends its rate unit.
   * For a tier without the feature, only the rate unit, then 403.
   */
  charge?: 'rate' | 'quota' | 'handler';
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
/** Context variables of a charge made in the handler ({@link chargeRequest}). */
const LIMITS = 'keyLimits';
const CHARGED = 'charged';

/**
 * Authenticates `X-API-Key` for evidence endpoints, in this order:
 * 1. the key: 401 `invalid_api_key` when missing, malformed (checked offline, no lookup), unknown
 *    or deactivated, and for a JWT sent as an API key;
 * 2. the per-minute rate of the account (all its keys together): every authenticated request
 *    counts (decisions.md "Limits"), so the RateLimit-* headers are on every response from here on,
 *    and 429 `rate_limit_exceeded` with Retry-After once the minute's budget is spent;
 * 3. the tier gate: 403 `tier_insufficient` naming the tier needed;
 * 4. with a quota charge, the monthly quota: 429 `quota_exceeded` with Retry-After until the month ends.
 * Sets `c.var.caller` (account, tier and key id), typed in the handler of a route that lists it.
 *
 * Round trips: none for the key while this instance read it less than API_KEY_CACHE_MS ago
 * (lib/accounts/key-auth.ts), then one conditional write on the account meter, which checks and
 * charges the rate and the quota together. The answers are those of the checks made one after the
 * other: a request the rate refuses is charged nothing; a request the tier gate refuses spends its
 * rate unit and holds no quota; a request refused for quota has spent its rate unit, as every
 * authenticated request does.
 */
export function apiKeyAuth(options: ApiKeyAuthOptions): MiddlewareHandler<ApiKeyEnv> {
  const resolve = options.deps ?? getKeyAuthDeps;
  const mode = options.charge ?? 'rate';
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
    c.set('caller', caller);

    const { limits } = deps;
    if (mode === 'rate' || !tierAllows(caller.tier, options.feature)) {
      await chargeRate(c, limits, caller);
      assertFeature(caller.tier, options.feature);
      return next();
    }
    if (mode === 'handler') {
      c.set(LIMITS, limits);
      await next();
      // Refused before the handler charged it (its body was invalid): the rate unit is still spent.
      if (c.get(CHARGED) !== true) await chargeRate(c, limits, caller).catch((error: unknown) => log.warn('rate unit of a refused request not counted', describeError(error)));
      return;
    }
    const { rate, quota } = await limits.charge(caller.accountId, caller.tier, newHoldId('r', deps.clock()));
    setRateLimitHeaders(c, rate, 'account');
    if (!rate.allowed) throw rateLimitExceeded(rate, caller.tier);
    if (!quota) throw new Error('apiKeyAuth: no quota reservation');
    await runWithQuota(c, next, limits, quota, caller.accountId, caller.tier);
  };
}

/** Charges the rate unit alone (RateLimit-* headers set; 429 when the minute's budget is spent). */
async function chargeRate(c: AppContext, limits: LimitService, caller: AuthenticatedKey): Promise<void> {
  c.set(CHARGED, true);
  const { rate } = await limits.charge(caller.accountId, caller.tier);
  setRateLimitHeaders(c, rate, 'account');
  if (!rate.allowed) throw rateLimitExceeded(rate, caller.tier);
}

/**
 * For a handler of an endpoint with `charge: 'handler'`: charges the request's rate unit and one
 * quota unit under `holdId` in one write (RateLimit-* headers set), for the handler's operation
 * to settle or refund (LimitService). Throws 429 `rate_limit_exceeded` when the rate refused it
 * (nothing charged) and 429 `quota_exceeded` when the quota did (its rate unit spent).
 */
export async function chargeRequest(c: AppContext, holdId: string): Promise<QuotaReservation> {
  const charge = await chargeQuota(c, holdId);
  if (!charge.rate.allowed) throw rateLimitExceeded(charge.rate, keyCaller(c).tier);
  const quota = charge.quota as QuotaReservation;
  if (!quota.allowed) throw quotaExceeded(quota, keyCaller(c).tier);
  return quota;
}

/** The charge of {@link chargeRequest} as it came (the caller decides what a refusal means). */
export async function chargeQuota(c: AppContext, holdId: string): Promise<Charge> {
  const limits = requestLimits(c);
  const caller = keyCaller(c);
  c.set(CHARGED, true);
  const charge = await limits.charge(caller.accountId, caller.tier, holdId);
  setRateLimitHeaders(c, charge.rate, 'account');
  return charge;
}

/**
 * The anchor's quota port for this request (`charge: 'handler'`): its charges go to the meter the
 * middleware used and set the RateLimit-* headers; holds end through `base`.
 */
export function requestQuotaPort(c: AppContext, base: QuotaPort): QuotaPort {
  return {
    charge: async (accountId, tier, holdId, rate) => {
      const limits = requestLimits(c);
      c.set(CHARGED, true);
      const charge = await limits.charge(accountId, tier, holdId, { rate });
      if (rate) setRateLimitHeaders(c, charge.rate, 'account');
      return charge;
    },
    end: (hold, outcome) => base.end(hold, outcome),
  };
}

/** The limits {@link apiKeyAuth} used (a handler's charge goes to the same meter). */
export function requestLimits(c: AppContext): LimitService {
  const limits = c.get(LIMITS) as LimitService | undefined;
  if (!limits) throw new Error("chargeRequest() needs apiKeyAuth({ charge: 'handler' }) before the handler");
  return limits;
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

/** The caller {@link apiKeyAuth} authenticated, for the charges above (throws if it did not run). */
function keyCaller(c: AppContext): AuthenticatedKey {
  const caller = c.var.caller;
  if (!caller || !isTierName(caller.tier) || typeof caller.keyId !== 'string') {
    throw new Error('chargeRequest() needs apiKeyAuth() before the handler');
  }
  return { accountId: caller.accountId, tier: caller.tier, keyId: caller.keyId };
}
