import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Hono } from 'hono';
import { HttpError } from '../http/errors.js';
import { GATEWAY_FUNCTIONS, HTTP_FUNCTIONS, toHonoPath } from './routes.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

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
  api.notFound((c) => {
    const e = new HttpError(404, 'not_found', 'Not Found', `No endpoint ${c.req.method} ${c.req.path}.`);
    return c.newResponse(JSON.stringify(e.toJSON()), 404, { 'Content-Type': 'application/problem+json' });
  });
  return api;
}
