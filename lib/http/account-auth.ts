/**
 * Authentication of the account endpoints (JWT) and of the operators' API (admin token). Apart
 * from lib/http/auth.ts (API keys) because these resolve the whole account service (jose, scrypt,
 * the KMS client for the JWT secret), which functions behind an API key must not load.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { API_KEY_PATTERN } from '../accounts/api-key-format.js';
import { type AccountDepsProvider, getAccountDeps } from '../deps/accounts.js';
import { InvalidTokenError } from '../accounts/jwt.js';
import type { AppContext, AppEnv } from './app.js';
import { notFound, unauthorized } from './errors.js';

/** Options of {@link jwtAuth} and {@link adminAuth}. */
export interface AuthOptions {
  deps?: AccountDepsProvider;
}

/** The token of `Authorization: Bearer <token>`, or undefined. */
function bearerToken(c: AppContext): string | undefined {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(c.req.header('authorization') ?? '');
  return m?.[1];
}

/**
 * Authenticates `Authorization: Bearer <JWT>` for account endpoints: HS256 only, `iss`, `aud` and
 * `exp` checked. 401 `invalid_token` for no token, a malformed one, `alg: none` or any other
 * algorithm, a bad signature, an expired token, a wrong issuer or audience, and an API key sent as
 * a bearer token. Sets `accountId` (the `sub` claim).
 */
export function jwtAuth(options: AuthOptions = {}): MiddlewareHandler<AppEnv> {
  const resolve = options.deps ?? getAccountDeps;
  return async (c, next) => {
    const token = bearerToken(c);
    if (!token) throw unauthorized('invalid_token', 'Missing token: send Authorization: Bearer <JWT> (from POST /api/v2/account/login).');
    if (API_KEY_PATTERN.test(token)) {
      throw unauthorized('invalid_token', 'An API key is not a bearer token: account endpoints take the JWT from POST /api/v2/account/login.');
    }
    let accountId: string;
    try {
      accountId = await resolve().tokens.verify(token);
    } catch (error) {
      if (error instanceof InvalidTokenError) throw unauthorized('invalid_token', 'The token is invalid or has expired; log in again.');
      throw error;
    }
    c.set('accountId', accountId);
    await next();
  };
}

/**
 * The operators' API: `Authorization: Bearer $ADMIN_TOKEN`, compared in constant time (both
 * sides hashed to 32 bytes first, so neither content nor length leaks through timing). When
 * ADMIN_TOKEN is unset the admin API does not exist: 404, like any unknown path.
 */
export function adminAuth(options: AuthOptions = {}): MiddlewareHandler<AppEnv> {
  const resolve = options.deps ?? getAccountDeps;
  return async (c, next) => {
    const expected = resolve().config.adminToken;
    if (!expected) throw notFound('not_found', `No endpoint ${c.req.method} ${c.req.path}.`);
    const given = bearerToken(c);
    if (!given || !timingSafeEqual(digest(given), digest(expected))) {
      throw unauthorized('invalid_admin_token', 'The admin token is missing or wrong.');
    }
    await next();
  };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}
