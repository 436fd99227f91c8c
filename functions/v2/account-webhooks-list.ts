import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { getWebhookDeps } from '../../lib/deps/webhooks.js';
import { createApp } from '../../lib/http/app.js';
import { jwtAuth } from '../../lib/http/account-auth.js';
import { problemResponses } from '../../lib/http/schemas/common.js';
import { WebhookEndpoint } from '../../lib/http/schemas/webhooks.js';

const WebhookList = z.object({ webhooks: z.array(WebhookEndpoint) }).openapi('WebhookEndpointList');

export const route = createRoute({
  method: 'get',
  path: '/api/v2/account/webhooks',
  tags: ['v2 webhooks'],
  summary: "The account's webhook endpoints",
  description: 'Without their secrets. `status` is `active` or `disabled`, with `disabled_reason` (`gone`: it answered 410; `failing`: 5 days of failures).',
  security: [{ Bearer: [] }],
  middleware: [jwtAuth()] as const,
  responses: {
    200: { description: 'The endpoints, oldest first.', content: { 'application/json': { schema: WebhookList } } },
    ...problemResponses(401, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps, webhooks: getWebhookDeps } });

app.openapi(route, async (c) => {
  const webhooks = await c.var.deps.webhooks().service.list(c.var.caller.accountId);
  c.header('Cache-Control', 'no-store');
  return c.json({ webhooks }, 200);
});

export const handler = handle(app);
