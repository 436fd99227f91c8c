import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getConfig } from '../../lib/deps/core.js';
import { getPqTsaCertificates, getTsaCertificates } from '../../lib/deps/signing.js';
import { createApp } from '../../lib/http/app.js';
import { notFound } from '../../lib/http/errors.js';
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
    '(also in /.well-known/evidence-trust-anchors.json), and pin it. ' +
    'With `?policy=<oid>` of the post-quantum TSA (TSA_PQ_POLICY_OID): its ML-DSA-65 chain (RFC 9881), the anchor of its tokens; an unknown policy: 404 `unknown_tsa_policy`.',
  middleware: [publicRateLimit()] as const,
  request: {
    query: z.object({
      policy: z
        .string()
        .max(200)
        .optional()
        .openapi({ description: 'A TSA policy OID: the classic one (the default) or the post-quantum one.', example: '2.25.240188381855450738062415899808185980756' }),
    }),
  },
  responses: {
    200: { description: 'The chain.', content: { 'application/pem-certificate-chain': { schema: z.string() } } },
    ...problemResponses(400, 404, 429, 503),
  },
});

export const app = createApp({ publicCors: true, deps: { config: getConfig, pqTsaCertificates: getPqTsaCertificates, tsaCertificates: getTsaCertificates } });

app.openapi(route, async (c) => {
  const { policy } = c.req.valid('query');
  const { tsa } = c.var.deps.config();
  let chain: string[] | undefined;
  if (policy === undefined || policy === tsa.policyOid) chain = await c.var.deps.tsaCertificates();
  else if (policy === tsa.pq?.policyOid) chain = await c.var.deps.pqTsaCertificates();
  if (!chain) throw notFound('unknown_tsa_policy', `No time-stamping authority of this service has the policy ${policy ?? ''}.`);
  return c.body(chain.map((pem) => (pem.endsWith('\n') ? pem : `${pem}\n`)).join(''), 200, {
    'Content-Type': 'application/pem-certificate-chain',
    'Cache-Control': 'public, max-age=300',
  });
});

export const handler = handle(app);
