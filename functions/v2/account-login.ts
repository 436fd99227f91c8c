import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { Email, TokenFields } from '../../lib/http/schemas/accounts.js';
import { createApp } from '../../lib/http/app.js';
import { loginLockout } from '../../lib/http/account-auth.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { jsonBody, problemResponses } from '../../lib/http/schemas/common.js';

const LoginRequest = z.strictObject({ email: Email, password: z.string().max(1024) }).openapi('LoginRequest');

const Login = z.object({ ...TokenFields, account_id: z.string() }).openapi('Login');

export const route = createRoute({
  method: 'post',
  path: '/api/v2/account/login',
  tags: ['v2 accounts'],
  summary: 'Exchange e-mail and password for a JWT',
  description: 'An unknown e-mail address and a wrong password give the same 401. Attempts are limited per client address.',
  security: [],
  middleware: [publicRateLimit({ scope: 'auth' }), loginLockout()] as const,
  request: jsonBody(LoginRequest),
  responses: {
    200: { description: 'A JWT for the account endpoints.', content: { 'application/json': { schema: Login } } },
    ...problemResponses(400, 401, 413, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps } });

app.openapi(route, async (c) => {
  const { email, password } = c.req.valid('json');
  const login = await c.var.deps.accounts().accounts.login(email, password);
  c.header('Cache-Control', 'no-store');
  return c.json(login, 200);
});

export const handler = handle(app);
