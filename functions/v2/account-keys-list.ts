import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { ApiKeyRecordSchema } from '../../lib/http/schemas/accounts.js';
import { createApp } from '../../lib/http/app.js';
import { jwtAuth } from '../../lib/http/account-auth.js';
import { problemResponses } from '../../lib/http/schemas/common.js';

const ApiKeyList = z.object({ keys: z.array(ApiKeyRecordSchema) }).openapi('ApiKeyList');

export const route = createRoute({
  method: 'get',
  path: '/api/v2/account/keys',
  tags: ['v2 accounts'],
  summary: "List the account's API keys, active and deactivated",
  description: 'Oldest first. Each key shows its first characters (`prefix`), never the key or its hash.',
  security: [{ Bearer: [] }],
  middleware: [jwtAuth()] as const,
  responses: {
    200: { description: 'The keys.', content: { 'application/json': { schema: ApiKeyList } } },
    ...problemResponses(401, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps } });

app.openapi(route, async (c) => {
  const keys = await c.var.deps.accounts().apiKeys.list(c.var.caller.accountId);
  c.header('Cache-Control', 'no-store');
  return c.json({ keys }, 200);
});

export const handler = handle(app);
