import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getVerifyDeps } from '../../lib/deps/verification.js';
import { verifyPqRecord } from '../../lib/evidence/v1-read.js';
import { PqVerifyResponse } from '../../lib/http/schemas/v1.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { HashParam, problemResponses } from '../../lib/http/schemas/common.js';

export const route = createRoute({
  method: 'get',
  path: '/api/v1/pq/verify/{image_hash}',
  tags: ['v1'],
  summary: 'Re-verify the post-quantum signature of an anchored hash (no credentials)',
  description:
    'Verifies the stored ML-DSA-65 signature now over the 32 bytes of server_hash, recomputes server_hash = SHA-256(statement) and checks that the statement ' +
    'names this image, chain entry and device, and that the public key is one this service signs with. The statement, public key and signature are returned ' +
    'so that any FIPS 204 implementation can repeat the check. Unknown hash → 404 found:false; registered through v2 but not anchored → 200 found:false, registered:true.',
  middleware: [publicRateLimit()] as const,
  request: { params: HashParam('image_hash') },
  responses: {
    200: { description: 'The check.', content: { 'application/json': { schema: PqVerifyResponse } } },
    404: { description: 'Unknown hash: found:false.', content: { 'application/json': { schema: PqVerifyResponse } } },
    ...problemResponses(400, 429, 503),
  },
});

export const app = createApp({ publicCors: true, etag: true, deps: { verifyDeps: getVerifyDeps } });

app.openapi(route, async (c) => {
  const { image_hash } = c.req.valid('param');
  const deps = c.var.deps.verifyDeps();
  const result = await verifyPqRecord({ repo: deps.repo, trustedPqKeys: () => deps.trustedPqKeys() }, image_hash);
  c.header('Cache-Control', 'public, max-age=30');
  if (!result) return c.json({ found: false, image_hash, verified: false }, 404);
  if (!result.found) return c.json({ ...result, verified: false }, 200);
  return c.json(result, 200);
});

export const handler = handle(app);
