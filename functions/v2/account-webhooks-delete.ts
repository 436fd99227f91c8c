import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { getWebhookDeps } from '../../lib/deps/webhooks.js';
import { createApp } from '../../lib/http/app.js';
import { jwtAuth } from '../../lib/http/account-auth.js';
import { problemResponses } from '../../lib/http/schemas/common.js';
import { WebhookIdParam } from '../../lib/http/schemas/webhooks.js';

const Deleted = z.object({ webhook_id: z.string(), deleted: z.literal(true) }).openapi('DeletedWebhookEndpoint');

export const route = createRoute({
  method: 'delete',
  path: '/api/v2/account/webhooks/{webhook_id}',
  tags: ['v2 webhooks'],
  summary: 'Delete a webhook endpoint',
  description: "Nothing more is sent to it; its pending deliveries fail. Another account's endpoint or an unknown id → 404 `webhook_not_found`.",
  security: [{ Bearer: [] }],
  middleware: [jwtAuth()] as const,
  request: { params: WebhookIdParam },
  responses: {
    200: { description: 'The endpoint is deleted.', content: { 'application/json': { schema: Deleted } } },
    ...problemResponses(400, 401, 404, 409, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps, webhooks: getWebhookDeps } });

app.openapi(route, async (c) => {
  const { webhook_id } = c.req.valid('param');
  await c.var.deps.webhooks().service.remove(c.var.caller.accountId, webhook_id);
  c.header('Cache-Control', 'no-store');
  return c.json({ webhook_id, deleted: true as const }, 200);
});

export const handler = handle(app);
