import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getTrustAnchors, TRUST_ANCHORS_PATH } from '../../lib/deps/signing.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { problemResponses } from '../../lib/http/schemas/common.js';
import { TrustAnchorsSchema } from '../../lib/http/schemas/starter.js';

export const route = createRoute({
  method: 'get',
  path: TRUST_ANCHORS_PATH,
  tags: ['trust anchors'],
  summary: "The service's trust anchors in one place (no credentials)",
  description:
    'Everything a verifier pins, once: the TSA root certificate (and its SHA-256), the JWK set URL and each signing key\'s kid and SHA-256, ' +
    'the ledger network, chain id and the wallet address that sends every anchoring transaction. `evidence trust add <base-url>` stores it for later offline runs of `evidence verify`. ' +
    'Signing keys, PDF signing certificates (`pdf_signing`) and wallets (`ledger.wallets`) are listed current and retired, each with its validity window (`not_before`, `not_after`, `retired_at`).',
  middleware: [publicRateLimit()] as const,
  responses: {
    200: { description: 'The trust anchors.', content: { 'application/json': { schema: TrustAnchorsSchema } } },
    ...problemResponses(429, 503),
  },
});

export const app = createApp({ publicCors: true, deps: { trustAnchors: getTrustAnchors } });

app.openapi(route, async (c) => {
  c.header('Cache-Control', 'public, max-age=300');
  return c.json(await c.var.deps.trustAnchors(), 200);
});

export const handler = handle(app);
