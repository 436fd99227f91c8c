import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { ACTIVITY_KINDS } from '../../lib/evidence/activity.js';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { getActivityRepo } from '../../lib/deps/activity.js';
import { jwtAuth } from '../../lib/http/account-auth.js';
import { createApp } from '../../lib/http/app.js';
import { IsoTime } from '../../lib/http/schemas/accounts.js';
import { problemResponses, QueryInteger } from '../../lib/http/schemas/common.js';

const EvidenceQuery = z.strictObject({
  limit: QueryInteger('limit', { minimum: 1, maximum: 50, description: 'At most this many hashes (default 20).' }),
});

const AccountEvidence = z
  .object({
    items: z.array(
      z
        .object({
          image_hash: z.string().openapi({ example: 'a'.repeat(64) }),
          proofs: z.array(z.enum(ACTIVITY_KINDS)).openapi({ description: 'What the account obtained for the hash, in this order: registered, timestamped, signed, anchored.' }),
          at: IsoTime.openapi({ description: 'When the account last obtained one of them.' }),
        })
        .openapi('AccountEvidenceItem'),
    ),
  })
  .openapi('AccountEvidence');

export const route = createRoute({
  method: 'get',
  path: '/api/v2/account/evidence',
  tags: ['v2 accounts'],
  summary: "The account's recent evidence: the hashes it registered, time-stamped, signed or anchored, newest first",
  description:
    'The dashboard\'s "Recent evidence". A convenience list derived from the records of what the account obtained (its registrations, stand-alone timestamps and signatures, and anchors once anchored), ' +
    'through an index of the evidence table: nothing is written for it. It links to the proofs (the public verify and receipt endpoints, and the certificate) and is not a proof itself. ' +
    'In AWS the index is eventually consistent: an item of the last second may not show yet.',
  security: [{ Bearer: [] }],
  middleware: [jwtAuth()] as const,
  request: { query: EvidenceQuery },
  responses: {
    200: { description: 'The hashes.', content: { 'application/json': { schema: AccountEvidence } } },
    ...problemResponses(400, 401, 429),
  },
});

export const app = createApp({ deps: { accounts: getAccountDeps, activity: getActivityRepo } });

app.openapi(route, async (c) => {
  const { limit } = c.req.valid('query');
  const items = await c.var.deps.activity().recent(c.var.caller.accountId, limit ?? 20);
  c.header('Cache-Control', 'no-store');
  return c.json({ items }, 200);
});

export const handler = handle(app);
