import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getConfig } from '../../lib/deps/core.js';
import { getVerifyDeps } from '../../lib/deps/verification.js';
import { V1VerifyResponse } from '../../lib/http/schemas/v1.js';
import { verifyEvidence } from '../../lib/evidence/verify.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { HashParam, problemResponses } from '../../lib/http/schemas/common.js';
import { explorerUrl } from '../../lib/ledger/anchor-data.js';
import { notFoundFields, verdictFields } from '../../lib/http/schemas/verdict.js';

export const route = createRoute({
  method: 'get',
  path: '/api/v1/chain/verify/{image_hash}',
  tags: ['v1'],
  summary: 'Verify an anchored photo hash publicly (no credentials)',
  description:
    'Every flag is computed now from the stored proofs (api-v1.md rule 2): pq_verified re-verifies the ML-DSA-65 signature with a published key; ' +
    'chain_verified recomputes chain_hash and verifies the device Ed25519 signature; timestamp_verified checks the RFC 3161 token against the TSA root; ' +
    'ledger_verified reads the transaction from the chain (tx_status and confirmations are as read now), or, once the transaction is final, its finalized ' +
    'receipt stored on the record (read and checked once, at finality; confirmations is then the count at finality and no longer grows). verified is true only when all hold. ' +
    'Hashes anchored through v1 or v2 answer alike.\n\n' +
    'An unknown hash answers 404 with found:false. A hash registered through v2 (/evidence/hash) but never anchored answers 200 with found:false, ' +
    'registered:true and registered_at (it is in no chain, so no chain field is given). A ledger node that cannot be reached gives 503, never a verdict.',
  middleware: [publicRateLimit()] as const,
  request: { params: HashParam('image_hash') },
  responses: {
    200: { description: 'Verification result.', content: { 'application/json': { schema: V1VerifyResponse } } },
    404: { description: 'Unknown hash: found:false.', content: { 'application/json': { schema: V1VerifyResponse } } },
    ...problemResponses(400, 429, 503),
  },
});

export const app = createApp({ publicCors: true, etag: true, deps: { config: getConfig, verifyDeps: getVerifyDeps } });

app.openapi(route, async (c) => {
  const { image_hash } = c.req.valid('param');
  const v = await verifyEvidence(c.var.deps.verifyDeps(), image_hash);
  const r = v.record;
  const verdict = v.verdict;
  if (!r || !verdict) {
    c.header('Cache-Control', 'public, max-age=5');
    if (!v.found) return c.json({ found: false, image_hash, pq_verified: false, verified: false, ...notFoundFields(false) }, 404);
    return c.json({ found: false, image_hash, pq_verified: false, verified: false, registered: true, registered_at: v.registered_at ?? undefined, ...notFoundFields(true) }, 200);
  }
  const ledger = verdict.ledger;
  c.header('Cache-Control', ledger.final ? 'public, max-age=300' : ledger.status === 'confirmed' ? 'public, max-age=30' : 'public, max-age=5');
  return c.json(
    {
      found: true,
      image_hash,
      chain_index: r.chain_index,
      chain_hash: r.chain_hash,
      previous_hash: r.previous_hash,
      pq_verified: verdict.pq_verified,
      chain_verified: verdict.proofs.device_signature.state === 'holds' && verdict.proofs.chain_link.state === 'holds',
      timestamp_verified: verdict.proofs.timestamp.state === 'holds',
      ledger_verified: verdict.proofs.ledger.state === 'holds',
      verified: verdict.status === 'verified',
      tx_hash: r.tx_hash,
      tx_status: ledger.status === 'unchecked' ? 'pending' : ledger.status,
      confirmations: ledger.confirmations,
      ledger_final: ledger.final,
      explorer_url: explorerUrl(c.var.deps.config().ledger.explorerTxUrl, r.tx_hash),
      anchored_at: r.anchored_at,
      public_key_hex: r.public_key_hex,
      ...(r.device_id ? { device_id: r.device_id } : {}),
      ...verdictFields(verdict),
    },
    200,
  );
});

export const handler = handle(app);
