import { createServer, type Server } from 'node:http';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { type AppBindings, createApp, problemDocument } from '../http/app.js';
import { DEFAULT_HEADERS_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS } from '../config.js';
import { HttpError } from '../http/errors.js';
import { PortInUseError } from './net.js';
import { GATEWAY_FUNCTIONS, HTTP_FUNCTIONS, toHonoPath } from './routes.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** What the local server calls per request: a Hono app's fetch (the request, and @hono/node-server's env with the socket). */
export type LocalFetch = (request: Request, env?: unknown) => Response | Promise<Response>;

/** A function module as every file in functions/ exports it. */
interface FunctionModule {
  app: { fetch(request: Request, env?: unknown): Response | Promise<Response> };
  handler: unknown;
}

/**
 * The local stand-in for API Gateway: one route per function of infra/functions.json, each
 * forwarding the untouched request to that function's own Hono app, the very object its
 * Lambda handler wraps. Like API Gateway, unrouted requests never reach a function.
 */
export async function buildLocalApi(): Promise<Hono> {
  const api = new Hono();
  for (const spec of HTTP_FUNCTIONS) {
    const mod = (await import(pathToFileURL(path.join(ROOT, spec.file)).href)) as FunctionModule;
    const { app } = mod;
    const methods = spec.public ? [spec.method, 'OPTIONS'] : [spec.method];
    if (spec.method === 'GET') methods.push('HEAD');
    api.on(methods, toHonoPath(spec.path), (c) => app.fetch(c.req.raw, c.env));
  }
  // Like API Gateway's `ANY <path>` routes (serverless-functions.cjs): every other method of a
  // known path reaches methodNotAllowed (405 with Allow). Registered after the exact routes, so
  // those match first, as API Gateway prefers them.
  for (const spec of GATEWAY_FUNCTIONS) {
    const { app } = (await import(pathToFileURL(path.join(ROOT, spec.file)).href)) as FunctionModule;
    for (const p of new Set(HTTP_FUNCTIONS.map((f) => f.path))) api.all(toHonoPath(p), (c) => app.fetch(c.req.raw, c.env));
  }
  // Any other path: the app factory's own 404, shaped as every function's problem (absolute type,
  // instance, request id, nosniff, an access-log line).
  const unrouted = createApp();
  api.notFound((c) => unrouted.fetch(c.req.raw, c.env as AppBindings));
  return api;
}

/** Options of {@link listenLocalApi}. */
export interface LocalApiOptions {
  port: number;
  hostname: string;
  /** HEADERS_TIMEOUT_MS: a request whose headers are not all in by then is answered 408 and closed (default 10 s). */
  headersTimeoutMs?: number;
  /** REQUEST_TIMEOUT_MS: the same for the whole request, body included (default 30 s). */
  requestTimeoutMs?: number;
}

/**
 * Serves the local API on `hostname:port` (npm start, the tests): @hono/node-server's request
 * listener on a Node HTTP server, with the errors raised before any function runs rendered as
 * problem+json like every other error (RFC 9457), where @hono/node-server and Node answer with an
 * empty body:
 * - a request the adapter cannot turn into a Request (a backslash in the path, a bad host): 400;
 * - a request Node's parser refuses (headers over 16 KiB: 431; anything else: 400), and one that
 *   is not all in within its deadline (408, below), written to the socket directly, with
 *   Connection: close, and the connection closed (the parser's state is lost).
 * Each with an absolute `type` under PUBLIC_BASE_URL, as every function's problem has (problemDocument).
 * In production API Gateway answers these cases itself, before any function, with bodies of its
 * own: an HTTP API has no gateway responses to reshape them.
 *
 * Deadlines (docs/configuration.md): Node's own defaults let a client that sends its headers a
 * byte at a time hold a connection for 60 to 90 s (headersTimeout 60 s, checked every 30 s) and a
 * slow body for 5 minutes; here the headers must be in within `headersTimeoutMs`, the whole
 * request within `requestTimeoutMs`, checked every second (at most half the headers' deadline).
 */
export async function listenLocalApi(api: { fetch: LocalFetch }, options: LocalApiOptions): Promise<Server> {
  const headersTimeout = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const requestTimeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const server = createServer(
    { headersTimeout, requestTimeout, connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(headersTimeout / 2))) },
    getRequestListener(api.fetch, {
      hostname: options.hostname,
      errorHandler: (error) => {
        const e = new HttpError(400, 'malformed_request', 'Bad Request', `The request could not be read: ${requestErrorReason(error)}.`);
        return new Response(JSON.stringify(problemDocument(e)), { status: 400, headers: { 'Content-Type': 'application/problem+json', Connection: 'close' } });
      },
    }),
  );
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // Node's own rule: an answer may be written only while no answer of this connection has begun.
    const answering = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (error.code === 'ECONNRESET' || !socket.writable || answering) {
      socket.destroy();
      return;
    }
    const e =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? new HttpError(431, 'headers_too_large', 'Request Header Fields Too Large', 'The request headers are larger than 16 KiB; nothing was read.')
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? new HttpError(408, 'request_timeout', 'Request Timeout', `The request was not all in within its deadline (headers ${headersTimeout} ms, the whole request ${requestTimeout} ms); nothing was done.`)
          : new HttpError(400, 'malformed_request', 'Bad Request', 'The HTTP request could not be parsed; nothing was read.');
    const body = JSON.stringify(problemDocument(e));
    // Closed once written: a client that keeps sending holds nothing.
    socket.end(
      `HTTP/1.1 ${e.status} ${e.title}\r\n` + `Content-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      () => socket.destroy(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new PortInUseError(options.port, options.hostname, 'the API', { cause: error }) : error);
    server.once('error', onError);
    server.listen(options.port, options.hostname, () => {
      server.off('error', onError);
      resolve();
    });
  });
  return server;
}

/** What the adapter said, in a fixed vocabulary (never the raw request text). */
function requestErrorReason(error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  if (/backslash/i.test(message)) return 'a backslash in the path (percent-encode it as %5C)';
  if (/host/i.test(message)) return 'a missing or malformed Host header';
  return 'a malformed request line or URL';
}
