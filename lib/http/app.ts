/**
 * THE HANDLER SHAPE (issue 35): every HTTP function is written one way, as Hono writes it.
 *
 *   // functions/<area>/<endpoint>.ts
 *   export const route = createRoute({ method, path, …, middleware: [apiKeyAuth({ … })] as const, … });
 *   export const app = createApp({ publicCors: true, deps: { evidence: getEvidenceRepo } });
 *   app.openapi(route, async (c) => {
 *     const repo = c.var.deps.evidence();         // dependencies: through middleware, on c.var
 *     const { accountId } = c.var.caller;         // the caller: set by the auth middleware
 *     return c.json(await domainOperation(repo, accountId, c.req.valid('json')), 200);
 *   });
 *   export const handler = handle(app);
 *
 * 1. One app per module, built at module level by {@link createApp}; `handler` (the Lambda entry
 *    serverless.yml names) wraps it, and the local server dispatches to the same `app`. No
 *    factories: a test that needs other dependencies passes them per request as the binding
 *    `deps` (`app.request(url, init, { deps: { accounts: () => testDeps } })`), which the
 *    request-context middleware lays over the module's own.
 * 2. Dependencies through middleware: the module names the providers it uses (the lazy getters of
 *    lib/deps, the one composition root) in `createApp({ deps })`; createApp's request-context
 *    middleware puts them on `c.var.deps`, and the handler calls them where it needs them (a
 *    provider that fails, e.g. a key that cannot be read, fails there, after auth and validation).
 *    A handler never builds an adapter and never calls a lib/deps getter itself: the module
 *    imports them only to name them (test/functions/handler-shape.test.ts holds this).
 * 3. Every middleware of a function is in its route's `middleware` (auth, limits, bulkhead), so
 *    that the variables it sets are typed in the handler.
 * 4. One way to get the caller: `c.var.caller`, set by apiKeyAuth (account, tier, key) and
 *    jwtAuth (account) (lib/http/auth.ts, lib/http/account-auth.ts).
 * 5. lib/http/routes holds only what two modules share: a route the OpenAPI document needs without
 *    the function's heavy app (certificate, docs assets), or one implementation behind two routes
 *    (anchor and full). It never builds an app of its own for a Lambda.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { cors } from 'hono/cors';
import { etag } from 'hono/etag';
import { HTTPException } from 'hono/http-exception';
import type { TierName } from '../accounts/tiers.js';
import type { AccountDepsProvider } from '../deps/accounts.js';
import { DomainError, type DomainErrorKind } from '../errors.js';
import { describeError, log } from '../log.js';
import { getConfig } from '../deps/core.js';
import { compressBody } from './compress.js';
import { HttpError, badRequest, dependencyUnavailable, payloadTooLarge } from './errors.js';

/** Largest accepted request body (decisions.md "Formats": 64 KiB, else 413). */
export const MAX_BODY_BYTES = 64 * 1024;

/** Who calls: set by the API-key middleware (with tier and key) or the JWT middleware (the account alone). */
export interface Caller {
  accountId: string;
  tier?: TierName;
  keyId?: string;
}

/**
 * The dependencies a function names in `createApp({ deps })`: providers (lib/deps getters),
 * called by the handler when it needs them. `accounts` is also what the account middleware
 * (jwtAuth, adminAuth, loginLockout) and the limits of an account function use.
 */
export interface AppDeps {
  accounts?: AccountDepsProvider;
}

/** What middleware leaves on the context for the handlers. */
export interface AppVariables {
  requestId: string;
  clientIp: string;
  /** Set by the API-key or JWT middleware: the one way to learn who calls. */
  caller?: Caller;
  /** The function's dependencies (see the rule at the top of this file). */
  deps: AppDeps;
  [key: string]: unknown;
}

/** Bindings differ by host: API Gateway gives `event`/`lambdaContext`, @hono/node-server gives `incoming`; a test may give `deps`. */
export type AppBindings = Record<string, unknown>;
export type AppEnv<D extends object = AppDeps> = { Variables: AppVariables & { deps: D }; Bindings: AppBindings };
/**
 * The context as the shared helpers (errors, limits, headers) take it: any function's, whatever
 * its `deps` and `caller` (Hono's own helpers take a `Context` the same way).
 */
export type AppContext = Context;

export interface AppOptions {
  /** Public endpoints answer CORS requests from any origin (they carry no credentials). */
  publicCors?: boolean;
  /**
   * An ETag (a digest of the body) on every 2xx GET, and 304 for a matching If-None-Match
   * (RFC 9110 §13.1.2): for reads whose answer rarely changes (receipts, verify).
   */
  etag?: boolean;
  /** The largest request body taken (default {@link MAX_BODY_BYTES}; the batch anchor takes 100 entries). */
  maxBodyBytes?: number;
}

/**
 * The app factory every function uses: request id and JSON access log, CORS for public
 * endpoints, the 64 KiB body limit, schema validation errors as 400 problem+json, and the one
 * `onError`. Each function is its own app (its own Lambda); the local server dispatches to the
 * same app objects, so local and deployed behaviour cannot diverge.
 */
export function createApp<D extends object = AppDeps>(options: AppOptions & { deps?: D } = {}): OpenAPIHono<AppEnv<D>> {
  const app = new OpenAPIHono<AppEnv<D>>({
    defaultHook: (result) => {
      if (!result.success) throw validationError(result.error);
    },
  });
  // Every answer, JSON, problem+json, HTML or PDF, locally and on Lambda: browsers take the
  // Content-Type as given (the edge adds the same header, infra/edge-waf.cjs). Outermost, so
  // that answers made by onError and notFound carry it too.
  app.use('*', async (c, next) => {
    await next();
    c.header('X-Content-Type-Options', 'nosniff');
  });
  app.use('*', requestContext(options.deps ?? {}));
  if (options.publicCors) {
    app.use(
      '*',
      cors({
        origin: '*',
        allowMethods: ['GET', 'HEAD', 'OPTIONS'],
        exposeHeaders: ['X-Request-Id', 'RateLimit-Policy', 'RateLimit', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After', 'ETag'],
        maxAge: 600,
      }),
    );
  }
  app.use('*', compressBody());
  // SHA-1 of the body with node:crypto, synchronously: Hono's default digests through WebCrypto,
  // one thread-pool job and promise per response, which was a fifth of a verify's CPU time.
  // (An ETag is a cache validator, not a security property: SHA-1 is what Hono uses too.)
  if (options.etag) app.use('*', etag({ generateDigest: etagDigest }));
  app.use(
    '*',
    bodyLimit({
      maxSize: options.maxBodyBytes ?? MAX_BODY_BYTES,
      onError: () => {
        throw payloadTooLarge(`The request body is larger than ${options.maxBodyBytes ?? MAX_BODY_BYTES} bytes.`);
      },
    }),
  );
  app.onError(renderError);
  app.notFound((c) => problem(c, new HttpError(404, 'not_found', 'Not Found', `No endpoint ${c.req.method} ${c.req.path}.`)));
  return app;
}

/**
 * Request id (from a sane `X-Request-Id`, API Gateway's id, or a new UUID), client IP, the
 * function's dependencies and one access-log line. The dependencies on `c.var.deps` are the
 * function's own providers, with a test's laid over them when the request carries the binding
 * `deps` (which neither API Gateway nor the local server sets). (One middleware rather than two:
 * the smallest bundles have no bytes to spare.)
 */
function requestContext(deps: object): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    const given = c.req.header('x-request-id');
    const lambdaId = (c.env?.event as { requestContext?: { requestId?: string } } | undefined)?.requestContext?.requestId;
    const requestId = given && /^[A-Za-z0-9._-]{1,64}$/.test(given) ? given : (lambdaId ?? randomUUID());
    c.set('requestId', requestId);
    c.set('clientIp', clientIp(c));
    c.set('deps', { ...deps, ...(c.env?.deps as object | undefined) });
    try {
      const edge = getConfig().edgeOriginSecret;
      if (edge !== undefined) {
        // Behind the edge (infra/edge-waf.cjs): only requests that came through it, which carry
        // its secret, are served, so the WAF's per-IP limit cannot be gone around; the client is
        // the viewer the edge saw, not the edge server that called API Gateway.
        if (!sameSecret(c.req.header('x-edge-origin'), edge)) {
          throw new HttpError(403, 'edge_required', 'Forbidden', 'Not through the edge.');
        }
        const viewer = viewerAddress(c.req.header('cloudfront-viewer-address'));
        if (viewer) c.set('clientIp', viewer);
      }
      await next();
    } finally {
      c.header('X-Request-Id', requestId);
      log.info('request', {
        request_id: requestId,
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        duration_ms: Math.round((performance.now() - started) * 10) / 10,
        ...(c.var.caller ? { account_id: c.var.caller.accountId } : {}),
      });
    }
  };
}

/** The ETag digest of a response body (see createApp). */
function etagDigest(body: Uint8Array): ArrayBuffer {
  const d = createHash('sha1').update(body).digest();
  return d.buffer.slice(d.byteOffset, d.byteOffset + d.byteLength) as ArrayBuffer;
}

/** Constant-time comparison of a presented secret with the configured one. */
function sameSecret(given: string | undefined, expected: string): boolean {
  const a = Buffer.from(given ?? '');
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The address in CloudFront-Viewer-Address (`<ip>:<port>`, IPv6 unbracketed), set by CloudFront
 * itself; trusted only on a request that carried the edge's secret.
 */
function viewerAddress(header: string | undefined): string | undefined {
  const m = header ? /^(.+):\d{1,5}$/.exec(header.trim()) : null;
  return m?.[1];
}

/** The caller's IP as API Gateway or the local socket saw it (never a client-supplied header). */
function clientIp(c: AppContext): string {
  const event = c.env?.event as { requestContext?: { http?: { sourceIp?: string } } } | undefined;
  const fromGateway = event?.requestContext?.http?.sourceIp;
  if (fromGateway) return fromGateway;
  const incoming = c.env?.incoming as { socket?: { remoteAddress?: string } } | undefined;
  return incoming?.socket?.remoteAddress ?? 'unknown';
}

/** Turns zod issues into a 400 that names each bad field. */
export function validationError(error: { issues: { path: PropertyKey[]; message: string; code?: string }[] }): HttpError {
  const errors = error.issues.map((i) => ({
    field: i.path.map(String).join('.') || '(body)',
    message: i.message,
  }));
  const first = errors[0];
  const detail = first ? `${first.field}: ${first.message}` : 'The request is invalid.';
  return badRequest('invalid_request', detail, { errors });
}

/**
 * The one error handler: our errors as they are; Hono's as problems; an adapter's "dependency
 * down" (ledger, database) as 503 naming it; anything else a logged, generic 500.
 */
export function renderError(error: Error, c: AppContext): Response {
  return problem(c, toHttpError(error, c));
}

/** What {@link renderError} answers for an error (the batch anchor puts it in an entry's slot); the log line of a 503 or 500 is written here. */
export function toHttpError(error: unknown, c: AppContext): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof DomainError) return fromDomain(error);
  if (error instanceof HTTPException) {
    const status = error.status;
    if (status === 413) return payloadTooLarge(`The request body is larger than ${MAX_BODY_BYTES} bytes.`);
    if (status === 400) {
      const detail = /json/i.test(error.message) ? 'The request body is not valid JSON.' : error.message || 'Bad request.';
      return badRequest(/json/i.test(error.message) ? 'malformed_json' : 'invalid_request', detail);
    }
    if (status === 415) {
      return new HttpError(415, 'unsupported_media_type', 'Unsupported Media Type', 'Send the body as JSON with Content-Type: application/json.');
    }
    return new HttpError(status as 400, 'http_error', error.message || 'Error', error.message || 'Error');
  }
  const unavailable = dependencyUnavailable(error);
  if (unavailable) {
    log.warn('dependency unavailable', { request_id: c.get('requestId'), code: unavailable.code, ...describeError(error), ...dependencyDetail(error as Error) });
    return unavailable;
  }
  log.error('unhandled error', { request_id: c.get('requestId'), ...describeError(error) });
  return new HttpError(500, 'internal_error', 'Internal Server Error', 'An unexpected error occurred. Quote the request id when you report it.', {
    request_id: c.get('requestId'),
  });
}

const DOMAIN_STATUS = {
  invalid: [400, 'Bad Request'],
  unauthenticated: [401, 'Unauthorized'],
  forbidden: [403, 'Forbidden'],
  not_found: [404, 'Not Found'],
  conflict: [409, 'Conflict'],
  limited: [429, 'Too Many Requests'],
  unavailable: [503, 'Service Unavailable'],
} as const satisfies Record<DomainErrorKind, readonly [number, string]>;

/** A domain error (lib/errors.ts) as the HTTP error it means. */
function fromDomain(error: DomainError): HttpError {
  const [status, title] = DOMAIN_STATUS[error.kind];
  const headers: Record<string, string> = {};
  if (error.retryAfterSeconds !== undefined) headers['Retry-After'] = String(error.retryAfterSeconds);
  if (error.kind === 'unauthenticated') headers['WWW-Authenticate'] = 'Bearer';
  return new HttpError(status, error.code, title, error.detail, error.extensions, headers);
}

/** The adapter's sanitised detail (error code, reason), for the log line only. */
export function dependencyDetail(error: Error): Record<string, unknown> {
  const { reason, detail } = error as { reason?: unknown; detail?: unknown };
  return { ...(typeof reason === 'string' ? { reason } : {}), ...(typeof detail === 'string' ? { detail } : {}) };
}

/**
 * Renders a problem: `type` absolute under PUBLIC_BASE_URL (it serves a page explaining the type),
 * `instance` the path the problem occurred at, and `request_id`, which identifies the occurrence
 * in our logs (RFC 9457 §3.1.5 leaves `instance` to us; a path is what a client can act on).
 */
function problem(c: AppContext, error: HttpError): Response {
  for (const [k, v] of Object.entries(error.headers)) c.header(k, v);
  const body = problemDocument(error, { instance: c.req.path, requestId: c.get('requestId') });
  return c.newResponse(JSON.stringify(body), error.status, { 'Content-Type': 'application/problem+json' });
}

/**
 * The problem document of `error` as every answer carries it, the functions' and the ones the
 * local server writes itself (lib/local/server.ts) alike: `type` absolute under PUBLIC_BASE_URL,
 * `instance` and `request_id` when the occurrence has them.
 */
export function problemDocument(error: HttpError, occurrence: { instance?: string; requestId?: string } = {}): Record<string, unknown> {
  const body = error.toJSON();
  body.type = `${publicBase()}${String(body.type)}`;
  if (occurrence.instance !== undefined) body.instance = occurrence.instance;
  if (occurrence.requestId !== undefined) body.request_id ??= occurrence.requestId;
  return body;
}

/** PUBLIC_BASE_URL, or nothing (a relative `type`) when the configuration cannot be read. */
function publicBase(): string {
  try {
    return getConfig().publicBaseUrl.replace(/\/$/, '');
  } catch {
    return '';
  }
}
