import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { Tier } from '../../lib/http/schemas/accounts.js';
import { createApp } from '../../lib/http/app.js';
import { adminAuth } from '../../lib/http/account-auth.js';
import { jsonBody, problemResponses } from '../../lib/http/schemas/common.js';

const AccountIdParam = z.object({
  account_id: z.string().min(1).max(64).openapi({ param: { name: 'account_id', in: 'path' }, example: 'acc_4Jm9Qw2Xe7Rt1Yu8Io3P' }),
});

const SetTierRequest = z.strictObject({ tier: Tier }).openapi('SetTierRequest');
const TierAssignment = z.object({ account_id: z.string(), tier: Tier }).openapi('TierAssignment');

export const route = createRoute({
  method: 'put',
  path: '/api/v2/admin/accounts/{account_id}/tier',
  tags: ['admin'],
  summary: "Set an account's tier (operators and billing)",
  description:
    'Authorization: Bearer $ADMIN_TOKEN. When ADMIN_TOKEN is not configured the admin API does not exist (404). ' +
    'The new tier applies to the next request (limits and feature gates read the account on every request).',
  security: [{ AdminToken: [] }],
  middleware: [adminAuth()] as const,
  request: { params: AccountIdParam, ...jsonBody(SetTierRequest) },
  responses: {
    200: { description: 'The tier is set.', content: { 'application/json': { schema: TierAssignment } } },
    ...problemResponses(400, 401, 404, 413, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps } });

app.openapi(route, async (c) => {
  const { account_id } = c.req.valid('param');
  const { tier } = c.req.valid('json');
  const result = await c.var.deps.accounts().accounts.setTier(account_id, tier);
  c.header('Cache-Control', 'no-store');
  return c.json(result, 200);
});

export const handler = handle(app);
