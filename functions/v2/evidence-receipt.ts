import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getConfig } from '../../lib/deps/core.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { buildReceipt } from '../../lib/evidence/receipt.js';
import { isAnchored } from '../../lib/evidence/records.js';
import { createApp } from '../../lib/http/app.js';
import { notFound } from '../../lib/http/errors.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { HashParam, problemResponses } from '../../lib/http/schemas/common.js';
import { EvidenceReceiptSchema } from '../../lib/http/schemas/evidence.js';


export const route = createRoute({
  method: 'get',
  path: '/api/v2/evidence/receipt/{image_hash}',
  tags: ['v2 evidence'],
  summary: 'Download the self-contained receipt of an anchored hash (no credentials)',
  middleware: [publicRateLimit()] as const,
  request: { params: HashParam('image_hash') },
  responses: {
    200: { description: 'The receipt.', content: { 'application/json': { schema: EvidenceReceiptSchema } } },
    ...problemResponses(400, 404, 429, 503),
  },
});

export const app = createApp({ publicCors: true, etag: true, deps: { config: getConfig, evidenceRepo: getEvidenceRepo } });

app.openapi(route, async (c) => {
  const { image_hash } = c.req.valid('param');
  const item = await c.var.deps.evidenceRepo().get(image_hash);
  if (!isAnchored(item)) throw notFound('evidence_not_found', `No anchored evidence for ${image_hash}.`);
  // A receipt whose transaction is final (ledger.final present) can no longer change: cached for a
  // year, immutable. Until then every use revalidates (ETag, 304).
  const receipt = buildReceipt(item, c.var.deps.config().ledger.explorerTxUrl, c.var.deps.config().publicBaseUrl);
  c.header('Cache-Control', receipt.ledger.final ? 'public, max-age=31536000, immutable' : 'no-cache');
  c.header('Content-Disposition', `inline; filename="receipt-${image_hash}.json"`);
  return c.json(receipt, 200);
});

export const handler = handle(app);
