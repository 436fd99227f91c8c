import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { IsoTime } from '../../lib/http/schemas/accounts.js';
import { createApp } from '../../lib/http/app.js';
import { jwtAuth } from '../../lib/http/account-auth.js';
import { problemResponses } from '../../lib/http/schemas/common.js';

const KeyIdParam = z.object({
  key_id: z.string().min(1).max(64).openapi({ param: { name: 'key_id', in: 'path' }, example: 'key_7hGf2KqP0xLm3Nc9Vb1Z' }),
});

const DeactivatedKey = z
  .object({ key_id: z.string(), active: z.literal(false), deactivated_at: IsoTime })
  .openapi('DeactivatedApiKey');

export const route = createRoute({
  method: 'delete',
  path: '/api/v2/account/keys/{key_id}',
  tags: ['v2 accounts'],
  summary: 'Deactivate an API key',
  description:
    'The key stops working at once. Deactivating an already deactivated key answers the same again. ' +
    "Another account's key or an unknown id → 404 `key_not_found`.",
  security: [{ Bearer: [] }],
  middleware: [jwtAuth()] as const,
  request: { params: KeyIdParam },
  responses: {
    200: { description: 'The key is deactivated.', content: { 'application/json': { schema: DeactivatedKey } } },
    ...problemResponses(400, 401, 404, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps } });

app.openapi(route, async (c) => {
  const { key_id } = c.req.valid('param');
  const result = await c.var.deps.accounts().apiKeys.deactivate(c.var.caller.accountId, key_id);
  c.header('Cache-Control', 'no-store');
  return c.json(result, 200);
});

export const handler = handle(app);
