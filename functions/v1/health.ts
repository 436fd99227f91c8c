import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { createApp } from '../../lib/http/app.js';
import { getSigner, getTsa } from '../../lib/deps/anchoring.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { checkHealth } from '../../lib/health.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { problemResponses } from '../../lib/http/schemas/common.js';

const PartState = z
  .object({
    status: z.enum(['up', 'down']),
    reason: z
      .enum(['unreachable', 'restarting', 'misconfigured', 'failing'])
      .optional()
      .openapi({
        description:
          'Only when down. `unreachable`: no connection or no answer in time; `restarting`: the local stack is restarting it ' +
          '(or replaying the ledger into a fresh node); `misconfigured`: it answers, but not as configured; `failing`: it answers with an error. ' +
          'Never an address, a path or an SDK message: the cause is in the service log.',
      }),
  })
  .passthrough();
const Health = z
  .object({
    status: z.enum(['ok', 'degraded']),
    detail: z.string().optional().openapi({ description: 'Only when degraded: each part that is down and why, e.g. `ledger: unreachable`.', example: 'ledger: unreachable' }),
    time: z.string(),
    parts: z.record(z.string(), PartState),
  })
  .openapi('Health');

export const route = createRoute({
  method: 'get',
  path: '/api/v1/health',
  tags: ['v1'],
  summary: 'State of every part: tables, chain, signing keys',
  // Health runs a query per part: limited per client address like every public endpoint (in
  // memory or at the edge, so a database outage cannot turn it into a 503 of its own).
  middleware: [publicRateLimit()] as const,
  responses: {
    200: { description: 'Every part is up.', content: { 'application/json': { schema: Health } } },
    503: { description: 'At least one part is down.', content: { 'application/json': { schema: Health } } },
    ...problemResponses(429),
  },
});

export const app = createApp({ publicCors: true, deps: { signer: getSigner, tsa: getTsa, config: getConfig, db: getDb } });

app.openapi(route, async (c) => {
  const { signer: signerOf, tsa: tsaOf } = c.var.deps;
  /** Signing keys loaded: the ML-DSA-65 signer answers with its key, the TSA with its certificate chain. */
  const keys = async () => {
    const [signer, tsa] = await Promise.all([signerOf(), tsaOf()]);
    const certificates = await tsa.certificates();
    return { pq_key_id: signer.keyId, pq_algorithm: signer.algorithm, tsa_scheme: tsa.scheme, tsa_certificates: certificates.length };
  };
  const result = await checkHealth(c.var.deps.config(), c.var.deps.db, { keys });
  c.header('Cache-Control', 'no-store');
  return c.json({ ...result, time: new Date().toISOString() }, result.status === 'ok' ? 200 : 503);
});

export const handler = handle(app);
