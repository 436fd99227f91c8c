import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { getWebhookDeps } from '../../lib/deps/webhooks.js';
import { createApp } from '../../lib/http/app.js';
import { jwtAuth } from '../../lib/http/account-auth.js';
import { problemResponses } from '../../lib/http/schemas/common.js';
import { WebhookDelivery, WebhookIdParam } from '../../lib/http/schemas/webhooks.js';

const DeliveryList = z.object({ webhook_id: z.string(), deliveries: z.array(WebhookDelivery) }).openapi('WebhookDeliveryList');

export const route = createRoute({
  method: 'get',
  path: '/api/v2/account/webhooks/{webhook_id}/deliveries',
  tags: ['v2 webhooks'],
  summary: "A webhook endpoint's recent deliveries",
  description: "The newest 50, newest first: the event, each attempt's time and status code, and the next attempt. Kept 30 days. Another account's endpoint → 404 `webhook_not_found`.",
  security: [{ Bearer: [] }],
  middleware: [jwtAuth()] as const,
  request: { params: WebhookIdParam },
  responses: {
    200: { description: 'The deliveries.', content: { 'application/json': { schema: DeliveryList } } },
    ...problemResponses(400, 401, 404, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps, webhooks: getWebhookDeps } });

app.openapi(route, async (c) => {
  const { webhook_id } = c.req.valid('param');
  const deliveries = await c.var.deps.webhooks().service.deliveries(c.var.caller.accountId, webhook_id);
  c.header('Cache-Control', 'no-store');
  return c.json({ webhook_id, deliveries }, 200);
});

export const handler = handle(app);
