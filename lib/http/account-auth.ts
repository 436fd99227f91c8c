/**
 * Authentication of the account endpoints (JWT) and of the operators' API (admin token). Apart
 * from lib/http/auth.ts (API keys) because these resolve the whole account service (jose, scrypt,
 * the KMS client for the JWT secret), which functions behind an API key must not load.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler, Next } from 'hono';
import type { GuessScope } from '../accounts/limits.js';
import { API_KEY_PATTERN } from '../accounts/api-key-format.js';
import { type AccountDepsProvider, getAccountDeps } from '../deps/accounts.js';
import { InvalidTokenError } from '../accounts/jwt.js';
import type { AppContext, AppEnv, Caller } from './app.js';
import { notFound, tooManyRequests, unauthorized } from './errors.js';
import { setRateLimitHeaders } from './limits.js';

/** Options of {@link jwtAuth} and {@link adminAuth}. */
export interface AuthOptions {
  /** By default the function's own (`c.var.deps.accounts`), else the process-wide ones. */
  deps?: AccountDepsProvider;
}

/** The account dependencies of this request: the option, the function's, or the process-wide ones. */
function accountDepsOf(c: AppContext, options: AuthOptions): ReturnType<AccountDepsProvider> {
  return (options.deps ?? c.var.deps?.accounts ?? getAccountDeps)();
}

/** The environment jwtAuth leaves to the handler: `c.var.caller` with the account. */
export type JwtEnv = AppEnv & { Variables: { caller: Caller } };

/** The token of `Authorization: Bearer <token>`, or undefined. */
function bearerToken(c: AppContext): string | undefined {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(c.req.header('authorization') ?? '');
  return m?.[1];
}

/**
 * Authenticates `Authorization: Bearer <JWT>` for account endpoints: HS256 only, `iss`, `aud`,
 * `iat` and `exp` checked (lib/accounts/jwt.ts). 401 `invalid_token` for no token, a malformed
 * one, `alg: none` or any other algorithm, a bad signature, an expired token, one issued in the
 * future or living longer than configured, a wrong issuer or audience, an API key sent as a
 * bearer token, and a token whose account no longer exists (one rule for every account endpoint).
 * Then the account's per-minute limit of the account endpoints (ACCOUNT_RATE_PER_MINUTE): 429
 * `rate_limit_exceeded` with Retry-After past it, RateLimit-* headers on every answer. The account
 * read and the counter write run side by side. Sets `c.var.caller` (the `sub` claim's account).
 */
export function jwtAuth(options: AuthOptions = {}): MiddlewareHandler<JwtEnv> {
  return async (c, next) => {
    const token = bearerToken(c);
    if (!token) throw unauthorized('invalid_token', 'Missing token: send Authorization: Bearer <JWT> (from POST /api/v2/account/login).');
    if (API_KEY_PATTERN.test(token)) {
      throw unauthorized('invalid_token', 'An API key is not a bearer token: account endpoints take the JWT from POST /api/v2/account/login.');
    }
    const deps = accountDepsOf(c, options);
    let accountId: string;
    try {
      accountId = await deps.tokens.verify(token);
    } catch (error) {
      if (error instanceof InvalidTokenError) throw unauthorized('invalid_token', 'The token is invalid or has expired; log in again.');
      throw error;
    }
    const [account, rate] = await Promise.all([deps.accounts.find(accountId), deps.limits.consumeAccount(accountId)]);
    if (!account) throw unauthorized('invalid_token', 'The account of this token no longer exists.');
    setRateLimitHeaders(c, rate, 'account-endpoints');
    if (!rate.allowed) {
      throw tooManyRequests(
        'rate_limit_exceeded',
        `Rate limit exceeded: the account endpoints allow ${rate.limit} requests per minute per account. Retry in ${rate.resetSeconds} s.`,
        rate.resetSeconds,
        { limit: rate.limit, window: 'minute', scope: 'account' },
      );
    }
    c.set('caller', { accountId });
    await next();
  };
}

/**
 * Lockout against guessing a credential (the login password, the admin token): at most
 * AUTH_FAILURES_PER_WINDOW failed attempts per client address and 15-minute window; past them
 * every attempt from that address gets 429 `too_many_failed_attempts` with Retry-After until the
 * window ends (lib/accounts/limits.ts `admitGuess` explains the reservation). An attempt counts as
 * failed when it was answered 401; anything else (success, 400, 503) gives its slot back.
 */
async function guarded(c: AppContext, next: Next, scope: GuessScope, deps: ReturnType<AccountDepsProvider>): Promise<void> {
  const admission = await deps.limits.admitGuess(scope, c.get('clientIp') || 'unknown');
  if (!admission.allowed) {
    const what = scope === 'login' ? 'failed log-ins' : 'wrong admin tokens';
    throw tooManyRequests(
      'too_many_failed_attempts',
      `Too many ${what} from this address: at most ${admission.limit} per 15 minutes. Retry in ${admission.resetSeconds} s.`,
      admission.resetSeconds,
      { limit: admission.limit, window: '15 minutes', scope: scope === 'login' ? 'ip_login_failures' : 'ip_admin_failures' },
    );
  }
  await next();
  if (c.res.status !== 401) await deps.limits.forgiveGuess(admission);
}

/** {@link guarded} for the login function (its 401 is `invalid_credentials`). */
export function loginLockout(options: AuthOptions = {}): MiddlewareHandler<AppEnv> {
  return (c, next) => guarded(c, next, 'login', accountDepsOf(c, options));
}

/**
 * The operators' API: `Authorization: Bearer $ADMIN_TOKEN`, compared in constant time (both
 * sides hashed to 32 bytes first, so neither content nor length leaks through timing), under the
 * guessing lockout ({@link guarded}). When ADMIN_TOKEN is unset the admin API does not exist:
 * 404, like any unknown path, and nothing is counted.
 */
export function adminAuth(options: AuthOptions = {}): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const deps = accountDepsOf(c, options);
    const expected = deps.config.adminToken;
    if (!expected) throw notFound('not_found', `No endpoint ${c.req.method} ${c.req.path}.`);
    await guarded(c, async () => {
      const given = bearerToken(c);
      if (!given || !timingSafeEqual(digest(given), digest(expected))) {
        throw unauthorized('invalid_admin_token', 'The admin token is missing or wrong.');
      }
      await next();
    }, 'admin', deps);
  };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}
