import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { jsx } from 'hono/jsx';
import { getConfig } from '../../lib/deps/core.js';
import { getVerifyDeps } from '../../lib/deps/verification.js';
import { verifyEvidence } from '../../lib/evidence/verify.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { isSha256Hex } from '../../lib/crypto/hash.js';
import { renderHtmlError, sendPage } from '../../lib/web/respond.js';
import { buildVerifyPageModel } from '../../lib/web/verify-model.js';
import { BadHashPage, VerifyPage } from '../../lib/web/verify-view.js';

/** Documented in the OpenAPI document; served by the plain handler below (its 400 is a page, not problem+json). */
export const route = createRoute({
  method: 'get',
  path: '/verify/{image_hash}',
  tags: ['web'],
  summary: 'Public verification page (HTML)',
  description:
    'The verdict and each proof (ML-DSA-65, RFC 3161 time and TSA, ledger transaction with explorer link and confirmations, device and chain ' +
    'position), checked now from the stored proofs, readable without JavaScript. A "check a file" box hashes a file in the browser (WebCrypto) ' +
    'and opens its page. 400 page for a malformed hash, 404 page when nothing is anchored for the hash.',
  request: { params: z.object({ image_hash: z.string().openapi({ param: { name: 'image_hash', in: 'path' }, example: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' }) }) },
  responses: {
    200: { description: 'Anchored (verified or not) or registered only.', content: { 'text/html': { schema: z.string() } } },
    400: { description: 'Not a SHA-256 hash.', content: { 'text/html': { schema: z.string() } } },
    404: { description: 'Nothing is anchored for this hash.', content: { 'text/html': { schema: z.string() } } },
    429: { description: 'Per-IP rate limit; see Retry-After.', content: { 'text/html': { schema: z.string() } } },
    503: { description: 'The chain node or the database cannot be read; no verdict is given.', content: { 'text/html': { schema: z.string() } } },
  },
});

export const app = createApp({ publicCors: true, deps: { config: getConfig, verifyDeps: getVerifyDeps } });
app.openAPIRegistry.registerPath(route);
app.onError(renderHtmlError);

app.get('/verify/:image_hash', publicRateLimit(), async (c) => {
  const given = c.req.param('image_hash');
  if (!isSha256Hex(given)) return sendPage(c, jsx(BadHashPage, { given }), 400);
  const imageHash = given.toLowerCase();
  const v = await verifyEvidence(c.var.deps.verifyDeps(), imageHash);
  const model = buildVerifyPageModel(v, c.var.deps.config().ledger.explorerTxUrl);
  const page = jsx(VerifyPage, { model });
  if (model.kind === 'unknown') return sendPage(c, page, 404, 'public, max-age=5');
  const settled = model.kind === 'anchored' && model.ledger.status === 'confirmed';
  return sendPage(c, page, 200, settled ? 'public, max-age=30' : 'public, max-age=5');
});

export const handler = handle(app);
