import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { FeatureName, IsoTime, Tier, TierLimitsSchema } from '../../lib/http/schemas/accounts.js';
import { createApp } from '../../lib/http/app.js';
import { jwtAuth } from '../../lib/http/account-auth.js';
import { problemResponses } from '../../lib/http/schemas/common.js';

const AccountInfo = z
  .object({
    account_id: z.string(),
    email: z.string(),
    name: z.string().nullable(),
    tier: Tier,
    created_at: IsoTime,
    active_keys: z.number().int(),
    max_keys: z.number().int(),
    limits: TierLimitsSchema,
    features: z.array(FeatureName).openapi({ description: "Features the account's tier includes." }),
  })
  .openapi('AccountInfo');

export const route = createRoute({
  method: 'get',
  path: '/api/v2/account/info',
  tags: ['v2 accounts'],
  summary: 'The account, its tier, limits and features',
  security: [{ Bearer: [] }],
  middleware: [jwtAuth()] as const,
  responses: {
    200: { description: 'Account information.', content: { 'application/json': { schema: AccountInfo } } },
    ...problemResponses(401, 404, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps } });

app.openapi(route, async (c) => {
  const info = await c.var.deps.accounts().accounts.info(c.var.caller.accountId);
  c.header('Cache-Control', 'no-store');
  return c.json(info, 200);
});

export const handler = handle(app);
