import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getConfig } from '../../lib/deps/core.js';
import { getVerifyDeps } from '../../lib/deps/verification.js';
import { RecheckQuery, VerificationResult } from '../../lib/http/schemas/evidence.js';
import { verifyEvidence } from '../../lib/evidence/verify.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { HashParam, problemResponses } from '../../lib/http/schemas/common.js';
import { explorerUrl } from '../../lib/ledger/anchor-data.js';

export const route = createRoute({
  method: 'get',
  path: '/api/v2/evidence/verify/{image_hash}',
  tags: ['v2 evidence'],
  summary: 'Verify a hash publicly (no credentials)',
  description:
    'Every flag is computed now from the stored proofs: the ML-DSA-65 signature is verified, the RFC 3161 token is verified ' +
    "against the TSA root, and the transaction is read from the chain. verified is true only when all three hold. " +
    'Once the transaction is final, its finalized receipt (block, block time, confirmations at finality) is stored on the record ' +
    '(read from the chain and checked once, by the reconciler within a minute of finality) and served from there: ledger_final is true, ' +
    'confirmations stays the count at finality, and the chain is not asked again unless recheck=1. ' +
    'An unknown hash answers 404 with verified:false; a registered but not anchored hash answers 200 with verified:false. ' +
    'Public: limited per client address (PUBLIC_RATE_PER_MINUTE), at the edge in production (the RateLimit fields are then absent) and in process locally; ' +
    'a verify writes nothing.',
  middleware: [publicRateLimit()] as const,
  request: { params: HashParam('image_hash'), query: RecheckQuery },
  responses: {
    200: { description: 'Verification result.', content: { 'application/json': { schema: VerificationResult } } },
    404: { description: 'Unknown hash.', content: { 'application/json': { schema: VerificationResult } } },
    ...problemResponses(400, 429, 503),
  },
});

export const app = createApp({ publicCors: true, etag: true });

app.openapi(route, async (c) => {
  const { image_hash } = c.req.valid('param');
  const { recheck } = c.req.valid('query');
  const v = await verifyEvidence(getVerifyDeps(), image_hash, { recheck: recheck === '1' });
  if (!v.found && !v.anchored) {
    c.header('Cache-Control', 'public, max-age=5');
    return c.json({ verified: false, image_hash, has_pq_signature: false, has_blockchain: false, has_timestamp: false }, 404);
  }
  const r = v.record;
  const final = v.checks.ledger.final;
  // A final answer no longer changes (its confirmations are the count at finality).
  c.header('Cache-Control', final ? 'public, max-age=300' : v.checks.ledger.status === 'confirmed' ? 'public, max-age=30' : 'public, max-age=5');
  return c.json(
    {
      verified: v.verified,
      image_hash,
      ...(r
        ? {
            chain_hash: r.chain_hash,
            chain_index: r.chain_index,
            anchored_at: r.anchored_at,
            ledger_tx: r.tx_hash,
            ledgerscan_url: explorerUrl(getConfig().ledger.explorerTxUrl, r.tx_hash),
            confirmations: v.checks.ledger.confirmations,
            ledger_final: final !== undefined,
            ...(v.checks.ledger.block_number !== null ? { block_number: v.checks.ledger.block_number } : {}),
            ...(final ? { block_time: final.block_time } : {}),
          }
        : {}),
      has_pq_signature: v.checks.pq_signature && v.checks.pq_key_trusted,
      has_blockchain: v.checks.ledger.valid,
      has_timestamp: v.checks.timestamp,
      ...(v.timestamp_time ? { timestamp_time: v.timestamp_time } : {}),
      ...(v.registered_at ? { registered_at: v.registered_at } : {}),
    },
    200,
  );
});

export const handler = handle(app);
