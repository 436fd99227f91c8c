import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { noteActivity } from '../../lib/accounts/activity.js';
import { getActivityRepo } from '../../lib/deps/activity.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { createApp } from '../../lib/http/app.js';
import { apiKeyAuth } from '../../lib/http/auth.js';
import { IsoTime, jsonBody, problemResponses, Sha256Hex } from '../../lib/http/schemas/common.js';

const HashRegistration = z
  .object({ sha256_hash: z.string(), algorithm: z.literal('SHA-256'), timestamp: IsoTime.describe('When the hash was first registered.') })
  .openapi('HashRegistration');

export const route = createRoute({
  method: 'post',
  path: '/api/v2/evidence/hash',
  tags: ['v2 evidence'],
  summary: 'Register a SHA-256 hash (idempotent: a second registration answers the first time)',
  security: [{ ApiKey: [] }],
  middleware: [apiKeyAuth({ feature: 'hash', quota: true })] as const,
  request: jsonBody(z.strictObject({ sha256_hash: Sha256Hex })),
  responses: {
    200: { description: 'Registered (or already registered).', content: { 'application/json': { schema: HashRegistration } } },
    ...problemResponses(400, 401, 413, 429, 503),
  },
});

export const app = createApp();

app.openapi(route, async (c) => {
  const { sha256_hash } = c.req.valid('json');
  const accountId = c.get('accountId') ?? '';
  const { registeredAt } = await getEvidenceRepo().register(sha256_hash, accountId, new Date().toISOString(), () =>
    noteActivity(getActivityRepo(), accountId, sha256_hash, 'registered'),
  );
  return c.json({ sha256_hash, algorithm: 'SHA-256' as const, timestamp: registeredAt }, 200);
});

export const handler = handle(app);
