import { handle } from 'hono/aws-lambda';
import { allowedMethods } from '../../lib/http/allowed-methods.js';
import { createApp } from '../../lib/http/app.js';
import { HttpError, notFound } from '../../lib/http/errors.js';

/**
 * The answer to a method no function of a path takes. API Gateway routes `ANY <path>` here for
 * every path of infra/functions.json and prefers the route with the exact method, so this runs
 * only for the other methods: 405 problem+json with `Allow` (RFC 9110 §15.5.6). The local server
 * (lib/local/server.ts) routes the same way.
 */
export const app = createApp();

app.all('*', (c) => {
  const allow = allowedMethods(c.req.path);
  if (!allow) throw notFound('not_found', `No endpoint ${c.req.method} ${c.req.path}.`);
  throw new HttpError(405, 'method_not_allowed', 'Method Not Allowed', `${c.req.path} does not take ${c.req.method}; it takes ${allow.join(', ')}.`, { allow }, { Allow: allow.join(', ') });
});

export const handler = handle(app);
