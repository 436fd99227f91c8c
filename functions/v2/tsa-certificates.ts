import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getTsaCertificates } from '../../lib/deps/signing.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { problemResponses } from '../../lib/http/schemas/common.js';

export const route = createRoute({
  method: 'get',
  path: '/api/v2/tsa/certificates',
  tags: ['v2 evidence'],
  summary: "The time-stamping authority's certificate chain (no credentials)",
  description:
    'PEM certificates, leaf (the TSA certificate) first, root last, `Content-Type: application/pem-certificate-chain` (RFC 8555 §9.1). ' +
    'The root is the trust anchor of every token of this service: `openssl ts -verify … -CAfile root.pem`. Fetch it once, compare its SHA-256 with the one the operator publishes ' +
    '(also in /.well-known/evidence-trust-anchors.json), and pin it.',
  middleware: [publicRateLimit()] as const,
  responses: {
    200: { description: 'The chain.', content: { 'application/pem-certificate-chain': { schema: z.string() } } },
    ...problemResponses(429, 503),
  },
});

export const app = createApp({ publicCors: true });

app.openapi(route, async (c) => {
  const chain = await getTsaCertificates();
  return c.body(chain.map((pem) => (pem.endsWith('\n') ? pem : `${pem}\n`)).join(''), 200, {
    'Content-Type': 'application/pem-certificate-chain',
    'Cache-Control': 'public, max-age=300',
  });
});

export const handler = handle(app);
