import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { getWebhookDeps } from '../../lib/deps/webhooks.js';
import { createApp } from '../../lib/http/app.js';
import { jwtAuth } from '../../lib/http/account-auth.js';
import { problemResponses } from '../../lib/http/schemas/common.js';
import { DeliveryIdParam, WebhookDelivery } from '../../lib/http/schemas/webhooks.js';

export const route = createRoute({
  method: 'post',
  path: '/api/v2/account/webhooks/{webhook_id}/deliveries/{delivery_id}/retry',
  tags: ['v2 webhooks'],
  summary: 'Send a delivery again now',
  description:
    'The delivery is due at once (pending again if it had failed; a delivered one is sent once more, with the same `webhook-id`); the delivery worker sends it within about a second. ' +
    "A disabled endpoint → 409 `webhook_disabled`; another account's endpoint or an unknown delivery → 404.",
  security: [{ Bearer: [] }],
  middleware: [jwtAuth()] as const,
  request: { params: DeliveryIdParam },
  responses: {
    200: { description: 'The delivery, due now.', content: { 'application/json': { schema: WebhookDelivery } } },
    ...problemResponses(400, 401, 404, 409, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps, webhooks: getWebhookDeps } });

app.openapi(route, async (c) => {
  const { webhook_id, delivery_id } = c.req.valid('param');
  const delivery = await c.var.deps.webhooks().service.retry(c.var.caller.accountId, webhook_id, delivery_id);
  c.header('Cache-Control', 'no-store');
  return c.json(delivery, 200);
});

export const handler = handle(app);
