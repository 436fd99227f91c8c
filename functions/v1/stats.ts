import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getStats } from '../../lib/deps/evidence.js';
import { StatsResponse } from '../../lib/http/schemas/v1.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { problemResponses } from '../../lib/http/schemas/common.js';

export const route = createRoute({
  method: 'get',
  path: '/api/v1/stats',
  tags: ['v1'],
  summary: 'Service statistics: totals and the last 24 hours (no credentials)',
  description:
    'Counts of registrations (an account\'s first registration of a hash), anchors (v1 and v2), device chains started, and ledger transactions sent, ' +
    'all-time and over the last 24 hours (the current UTC hour and the 23 before it). Served from counters, never from scans; no account data. ' +
    'The counters are derived from the evidence table\'s changes, exactly once, after the requests that made them (never on their path): ' +
    'an event shows here within about 1.5 s locally (npm start applies the changes every second) and within a few seconds in AWS (the table\'s stream, ' +
    'batched for up to 1 s). Cached for 10 s (Cache-Control).',
  middleware: [publicRateLimit()] as const,
  responses: {
    200: { description: 'Statistics.', content: { 'application/json': { schema: StatsResponse } } },
    ...problemResponses(429, 503),
  },
});

export const app = createApp({ publicCors: true, deps: { stats: getStats } });

app.openapi(route, async (c) => {
  const snapshot = await c.var.deps.stats().read();
  c.header('Cache-Control', 'public, max-age=10');
  return c.json(snapshot, 200);
});

export const handler = handle(app);
