import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { getWebhookDeps } from '../../lib/deps/webhooks.js';
import { createApp } from '../../lib/http/app.js';
import { jwtAuth } from '../../lib/http/account-auth.js';
import { problemResponses } from '../../lib/http/schemas/common.js';
import { CreateWebhookRequest, NewWebhookEndpoint } from '../../lib/http/schemas/webhooks.js';

export const route = createRoute({
  method: 'post',
  path: '/api/v2/account/webhooks',
  tags: ['v2 webhooks'],
  summary: 'Subscribe a webhook endpoint (at most 5 per account)',
  description:
    'Events are POSTed to `url` as Standard Webhooks: headers `webhook-id` (the same on every attempt: deduplicate by it), `webhook-timestamp` (seconds) and ' +
    '`webhook-signature` (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the secret), body `{ type, timestamp, data }`. Only a 2xx answer within 15 s ' +
    'counts; otherwise retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (jittered), then failed. 410 Gone disables the endpoint at once; 5 days of failures too. ' +
    'The secret is shown only in this answer. A refused URL (not https in a deployed stage, or a host resolving to a non-public address) → 400 `webhook_url_refused`; ' +
    'a sixth endpoint → 409 `webhook_limit_reached`. docs/webhooks.md.',
  security: [{ Bearer: [] }],
  middleware: [jwtAuth()] as const,
  request: { body: { required: true, content: { 'application/json': { schema: CreateWebhookRequest } } } },
  responses: {
    200: { description: 'The endpoint and its signing secret (shown once).', content: { 'application/json': { schema: NewWebhookEndpoint } } },
    ...problemResponses(400, 401, 409, 413, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps, webhooks: getWebhookDeps } });

app.openapi(route, async (c) => {
  const { url, events } = c.req.valid('json');
  const endpoint = await c.var.deps.webhooks().service.create(c.var.caller.accountId, url, events);
  c.header('Cache-Control', 'no-store');
  return c.json(endpoint, 200);
});

export const handler = handle(app);
