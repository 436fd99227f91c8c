/**
 * HTML responses of the web pages: the security headers on every page, content negotiation for
 * pages that also answer JSON, and errors as pages instead of problem+json.
 */
import type { Child } from 'hono/jsx';
import type { AppContext } from '../http/app.js';
import { dependencyDetail, renderError } from '../http/app.js';
import { dependencyUnavailable, HttpError } from '../http/errors.js';
import { describeError, log } from '../log.js';
import { SECURITY_HEADERS } from './assets.js';
import { renderPage } from './layout.js';
import { ErrorPage } from './verify-view.js';

/** Sends a page with the security headers (CSP by hash, nosniff, no referrer, no framing). */
export async function sendPage(
  c: AppContext,
  page: Child,
  status: 200 | 400 | 404 | 429 | 500 | 503,
  cacheControl = 'no-cache',
  security: Readonly<Record<string, string>> = SECURITY_HEADERS,
): Promise<Response> {
  const body = await renderPage(page);
  const headers: Record<string, string> = { ...security, 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': cacheControl };
  return c.newResponse(body, status, headers);
}

/**
 * True when the client prefers JSON to HTML (RFC 9110 §12.5.1): `application/json` with a
 * higher quality than `text/html` (a browser's `text/html,…,*\/*;q=0.8` stays HTML).
 */
export function prefersJson(accept: string | undefined): boolean {
  if (!accept) return false;
  let json = 0;
  let html = 0;
  for (const part of accept.split(',')) {
    const [type = '', ...params] = part.trim().toLowerCase().split(';');
    const q = Number(params.map((p) => p.trim()).find((p) => p.startsWith('q='))?.slice(2) ?? '1');
    const quality = Number.isFinite(q) ? q : 0;
    if (type === 'application/json' || type === 'application/problem+json') json = Math.max(json, quality);
    if (type === 'text/html') html = Math.max(html, quality);
  }
  return json > 0 && json > html;
}

/**
 * The error handler of the HTML apps: rate limits, an unreachable chain node or database and unexpected
 * failures become pages (with Retry-After where it applies); clients that prefer JSON get the
 * usual problem+json.
 */
export function renderHtmlError(error: Error, c: AppContext): Response | Promise<Response> {
  if (prefersJson(c.req.header('accept'))) return renderError(error, c);
  if (error instanceof HttpError) {
    for (const [k, v] of Object.entries(error.headers)) c.header(k, v);
    const status = error.status === 429 || error.status === 400 || error.status === 404 || error.status === 503 ? error.status : 500;
    const title = status === 429 ? 'Too many requests' : status === 503 ? 'Temporarily unavailable' : error.title;
    return sendPage(c, <ErrorPage title={title} detail={error.detail} />, status);
  }
  const unavailable = dependencyUnavailable(error);
  if (unavailable) {
    log.warn('dependency unavailable', { request_id: c.get('requestId'), code: unavailable.code, ...describeError(error), ...dependencyDetail(error) });
    for (const [k, v] of Object.entries(unavailable.headers)) c.header(k, v);
    const page =
      unavailable.code === 'ledger_unavailable' ? (
        <ErrorPage
          title="The ledger cannot be read right now"
          detail="The chain node did not answer, so the ledger transaction could not be checked; no verdict is given on a proof that was not checked. Reload in a few seconds."
        />
      ) : (
        <ErrorPage title="The evidence records cannot be read right now" detail="The database did not answer, so no verdict is given. Reload in a few seconds." />
      );
    return sendPage(c, page, 503);
  }
  log.error('unhandled error', { request_id: c.get('requestId'), ...describeError(error) });
  return sendPage(
    c,
    <ErrorPage title="Something went wrong" detail={`An unexpected error occurred. Quote request id ${c.get('requestId')} when you report it.`} />,
    500,
  );
}
