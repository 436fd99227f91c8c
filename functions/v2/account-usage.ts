import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { IsoTime, Tier } from '../../lib/http/schemas/accounts.js';
import { createApp } from '../../lib/http/app.js';
import { jwtAuth } from '../../lib/http/account-auth.js';
import { problemResponses } from '../../lib/http/schemas/common.js';

const Usage = z
  .object({
    tier: Tier,
    period_start: IsoTime.openapi({ description: 'Start of the current calendar month (UTC).' }),
    resets_at: IsoTime.openapi({ description: 'Start of the next calendar month (UTC), when the quota resets.' }),
    monthly_quota: z.number().int(),
    used: z.number().int().openapi({ description: 'Successful evidence operations this month (failed requests do not count).' }),
    remaining: z.number().int(),
    rate_per_minute: z.number().int(),
  })
  .openapi('Usage');

export const route = createRoute({
  method: 'get',
  path: '/api/v2/account/usage',
  tags: ['v2 accounts'],
  summary: "This month's consumption and the account's limits",
  security: [{ Bearer: [] }],
  middleware: [jwtAuth()] as const,
  responses: {
    200: { description: 'Consumption and quotas.', content: { 'application/json': { schema: Usage } } },
    ...problemResponses(401, 404, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps } });

app.openapi(route, async (c) => {
  const d = c.var.deps.accounts();
  const account = await d.accounts.get(c.var.caller.accountId);
  const usage = await d.limits.usage(account.account_id, account.tier);
  c.header('Cache-Control', 'no-store');
  return c.json(usage, 200);
});

export const handler = handle(app);
