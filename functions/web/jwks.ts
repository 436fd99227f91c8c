import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getPublishedKeys } from '../../lib/deps/signing.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { problemResponses } from '../../lib/http/schemas/common.js';
import { JwkSet } from '../../lib/http/schemas/starter.js';

export const route = createRoute({
  method: 'get',
  path: '/.well-known/jwks.json',
  tags: ['trust anchors'],
  summary: 'Every public key the service signs with, as a JWK set (no credentials)',
  description:
    'RFC 7517 JWK set: the Ed25519 key(s) of POST /api/v2/evidence/sign (`kty: "OKP"`, `crv: "Ed25519"`, RFC 8037) and the ML-DSA-65 key of the evidence statements ' +
    '(`kty: "AKP"`, `alg: "ML-DSA-65"`, `pub`, per the IETF COSE/JOSE ML-DSA draft), each with its `kid` (the `key_id` that signatures and receipts name). ' +
    'Keys rotate: a retired key stays in the set with `status: "retired"` so that what it signed still verifies; the signing key is `status: "active"`. ' +
    'Every key carries its validity window (`not_before`, `not_after`, `retired_at`, ISO 8601 or null): a signature made at t verifies when not_before ≤ t ≤ not_after and t < retired_at (docs/decisions.md "Key validity windows").',
  middleware: [publicRateLimit()] as const,
  responses: {
    200: { description: 'The JWK set.', content: { 'application/json': { schema: JwkSet } } },
    ...problemResponses(429, 503),
  },
});

export const app = createApp({ publicCors: true, deps: { publishedKeys: getPublishedKeys } });

app.openapi(route, async (c) => {
  const keys = await c.var.deps.publishedKeys();
  c.header('Cache-Control', 'public, max-age=300');
  return c.json({ keys }, 200);
});

export const handler = handle(app);
