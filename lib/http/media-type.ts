import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './app.js';
import { HttpError } from './errors.js';

/**
 * Refuses a request whose body is not sent as `type` with 415 problem+json `unsupported_media_type`,
 * before the middleware after it runs. The type is compared as RFC 9110 §8.3.1 says: type and
 * subtype case-insensitively, parameters aside; no Content-Type is not the type.
 *
 * Put first, before the credentials: POST /api/v2/tsa takes HTTP Basic credentials, which a
 * browser sends by itself once a user typed them, and an HTML form of any site can post text/plain
 * or a form encoding to it without a CORS preflight (decisions.md "Starter features"). Refused
 * before they are read, such a post counts nothing and draws no `WWW-Authenticate` challenge.
 */
export function requireMediaType(type: string, detail: string): MiddlewareHandler<AppEnv> {
  const wanted = type.toLowerCase();
  return async (c, next) => {
    const given = (c.req.header('content-type') ?? '').split(';')[0]?.trim().toLowerCase();
    if (given !== wanted) throw new HttpError(415, 'unsupported_media_type', 'Unsupported Media Type', detail);
    await next();
  };
}
