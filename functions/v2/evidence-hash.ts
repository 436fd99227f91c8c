import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { registerHash } from '../../lib/evidence/registration.js';
import { createApp } from '../../lib/http/app.js';
import { apiKeyAuth, chargeRequest, requestLimits } from '../../lib/http/auth.js';
import { IsoTime, jsonBody, problemResponses, Sha256Hex } from '../../lib/http/schemas/common.js';

const HashRegistration = z
  .object({ sha256_hash: z.string(), algorithm: z.literal('SHA-256'), timestamp: IsoTime.describe("When your account first registered the hash.") })
  .openapi('HashRegistration');

export const route = createRoute({
  method: 'post',
  path: '/api/v2/evidence/hash',
  tags: ['v2 evidence'],
  summary: "Register a SHA-256 hash for your account (idempotent: registering it again answers your first time and uses no quota)",
  description:
    "A registration is the calling account's own fact: its time is the account's first registration of the hash, whatever other accounts did. " +
    'The first registration of a hash by an account uses one unit of the monthly quota; registering it again answers the same time, uses no unit, and still counts toward the per-minute rate. ' +
    'It neither signs, time-stamps nor anchors: POST /evidence/anchor does.',
  security: [{ ApiKey: [] }],
  // The handler charges rate and quota in one write, under a hold its registration names (lib/evidence/registration.ts).
  middleware: [apiKeyAuth({ feature: 'hash', charge: 'handler' })] as const,
  request: jsonBody(z.strictObject({ sha256_hash: Sha256Hex })),
  responses: {
    200: { description: 'Registered (or already registered).', content: { 'application/json': { schema: HashRegistration } } },
    ...problemResponses(400, 401, 413, 429, 503),
  },
});

export const app = createApp({ deps: { evidenceRepo: getEvidenceRepo } });

app.openapi(route, async (c) => {
  const { sha256_hash } = c.req.valid('json');
  const { accountId } = c.var.caller;
  const { registeredAt } = await registerHash({ repo: c.var.deps.evidenceRepo(), limits: requestLimits(c), charge: (holdId) => chargeRequest(c, holdId) }, sha256_hash, accountId);
  return c.json({ sha256_hash, algorithm: 'SHA-256' as const, timestamp: registeredAt }, 200);
});

export const handler = handle(app);
