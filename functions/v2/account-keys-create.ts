import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { ApiKeyValue, IsoTime, Label } from '../../lib/http/schemas/accounts.js';
import { createApp } from '../../lib/http/app.js';
import { jwtAuth } from '../../lib/http/account-auth.js';
import { problemResponses } from '../../lib/http/schemas/common.js';

const CreateKeyRequest = z.strictObject({ name: Label.optional() }).openapi('CreateApiKeyRequest');

const NewApiKey = z
  .object({ key_id: z.string(), api_key: ApiKeyValue, name: z.string().nullable(), created_at: IsoTime })
  .openapi('NewApiKey');

export const route = createRoute({
  method: 'post',
  path: '/api/v2/account/keys',
  tags: ['v2 accounts'],
  summary: 'Create an API key (at most 5 active per account)',
  description: 'The key is shown only in this response; the service keeps its SHA-256. A sixth active key → 409 `key_limit_reached`.',
  security: [{ Bearer: [] }],
  middleware: [jwtAuth()] as const,
  request: { body: { required: false, content: { 'application/json': { schema: CreateKeyRequest } } } },
  responses: {
    200: { description: 'The new key.', content: { 'application/json': { schema: NewApiKey } } },
    ...problemResponses(400, 401, 409, 413, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps } });

app.openapi(route, async (c) => {
  const body = c.req.valid('json') as { name?: string } | undefined;
  const key = await c.var.deps.accounts().apiKeys.create(c.var.caller.accountId, body?.name ?? null);
  c.header('Cache-Control', 'no-store');
  return c.json(key, 200);
});

export const handler = handle(app);
