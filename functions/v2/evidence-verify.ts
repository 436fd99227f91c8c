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
import { notFoundFields, verdictFields } from '../../lib/http/schemas/verdict.js';

export const route = createRoute({
  method: 'get',
  path: '/api/v2/evidence/verify/{image_hash}',
  tags: ['v2 evidence'],
  summary: 'Verify a hash publicly (no credentials)',
  description:
    'The one verdict (docs/verify-without-us.md "What the verdict means"), computed now from the stored proofs: the statement and the ML-DSA-65 signature are verified, the RFC 3161 token is verified ' +
    'against the TSA root, the device signature and chain link are checked, and the transaction is read from the chain: its input data is image_hash || server_hash, or in batch mode ' +
    'ASCII "MERKLE-SHA256:" || the batch root, to which the anchor\'s stored RFC 6962 inclusion path must lead (proofs.merkle). verified is true only when every proof holds (status verified). ' +
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

export const app = createApp({ publicCors: true, etag: true, deps: { config: getConfig, verifyDeps: getVerifyDeps } });

app.openapi(route, async (c) => {
  const { image_hash } = c.req.valid('param');
  const { recheck } = c.req.valid('query');
  const v = await verifyEvidence(c.var.deps.verifyDeps(), image_hash, { recheck: recheck === '1' });
  const r = v.record;
  const verdict = v.verdict;
  if (!r || !verdict) {
    c.header('Cache-Control', 'public, max-age=5');
    const none = { verified: false, image_hash, has_pq_signature: false, has_blockchain: false, has_timestamp: false, ...notFoundFields(v.found) };
    return v.found ? c.json({ ...none, ...(v.registered_at ? { registered_at: v.registered_at } : {}) }, 200) : c.json(none, 404);
  }
  const ledger = verdict.ledger;
  // A final answer no longer changes (its confirmations are the count at finality).
  c.header('Cache-Control', ledger.final && !recheck ? 'public, max-age=300' : ledger.status === 'confirmed' ? 'public, max-age=30' : 'public, max-age=5');
  return c.json(
    {
      verified: verdict.status === 'verified',
      image_hash,
      chain_hash: r.chain_hash,
      chain_index: r.chain_index,
      anchored_at: r.anchored_at,
      ledger_tx: r.tx_hash,
      ledgerscan_url: explorerUrl(c.var.deps.config().ledger.explorerTxUrl, r.tx_hash),
      confirmations: ledger.confirmations,
      ledger_final: ledger.final,
      ...(ledger.block_number !== null ? { block_number: ledger.block_number } : {}),
      ...(ledger.block_time ? { block_time: ledger.block_time } : {}),
      ...(ledger.final_since ? { ledger_final_since: ledger.final_since } : {}),
      // Counted for this answer: as of its Date header (so that equal answers keep one ETag); counted earlier (a final record served from its stored receipt): when.
      ...(ledger.checked_at && ledger.checked_at === ledger.final_since ? { ledger_checked_at: ledger.checked_at } : {}),
      has_pq_signature: verdict.pq_verified,
      has_blockchain: verdict.proofs.ledger.state === 'holds',
      has_timestamp: verdict.proofs.timestamp.state === 'holds',
      ...(verdict.timestamp_time ? { timestamp_time: verdict.timestamp_time } : {}),
      ...(v.registered_at ? { registered_at: v.registered_at } : {}),
      ...verdictFields(verdict),
    },
    200,
  );
});

export const handler = handle(app);
