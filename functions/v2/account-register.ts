import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { ApiKeyValue, Email, Label, Password, Tier, TokenFields } from '../../lib/http/schemas/accounts.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { jsonBody, problemResponses } from '../../lib/http/schemas/common.js';

const RegisterRequest = z.strictObject({ email: Email, password: Password, name: Label.optional() }).openapi('RegisterRequest');

const Registration = z
  .object({ account_id: z.string(), email: z.string(), tier: Tier, api_key: ApiKeyValue, key_id: z.string(), ...TokenFields })
  .openapi('Registration');

export const route = createRoute({
  method: 'post',
  path: '/api/v2/account/register',
  tags: ['v2 accounts'],
  summary: 'Create an account (Free tier) with its first API key and a JWT',
  description:
    'The e-mail address is normalised to lower case; the password needs at least 12 characters. ' +
    'The API key is shown only in this response. Attempts are limited per client address.',
  security: [],
  middleware: [publicRateLimit({ scope: 'auth' })] as const,
  request: jsonBody(RegisterRequest),
  responses: {
    200: { description: 'The account, its first API key and a JWT.', content: { 'application/json': { schema: Registration } } },
    ...problemResponses(400, 409, 413, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps } });

app.openapi(route, async (c) => {
  const body = c.req.valid('json');
  const registration = await c.var.deps.accounts().accounts.register(body);
  c.header('Cache-Control', 'no-store');
  return c.json(registration, 200);
});

export const handler = handle(app);
