import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getConfig } from '../../lib/deps/core.js';
import { getVerifyDeps } from '../../lib/deps/verification.js';
import { verifyEvidence } from '../../lib/evidence/verify.js';
import { LedgerVerifyResponse } from '../../lib/http/schemas/v1.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { HashParam, problemResponses } from '../../lib/http/schemas/common.js';
import { encodeAnchorData, encodeBatchData, explorerUrl } from '../../lib/ledger/anchor-data.js';

export const route = createRoute({
  method: 'get',
  path: '/api/v1/ledger/verify/{image_hash}',
  tags: ['v1'],
  summary: "Check an anchored hash's ledger transaction on the chain (no credentials)",
  description:
    'Reads the transaction and its receipt from the chain now (JSON-RPC eth_getTransactionByHash / eth_getTransactionReceipt) and checks that it is mined, ' +
    'succeeded, was sent by the service wallet, and that its input data is image_hash || server_hash (expected_input_data); for an anchor published in a batch ' +
    '(LEDGER_BATCH_WINDOW_MS > 0) the input is "MERKLE-SHA256:" || the batch root, and the anchor\'s RFC 6962 inclusion path must lead from its leaf to that root ' +
    '(data_matches covers both; the path is in the receipt). confirmations counts the blocks ' +
    'from its block to the latest, inclusive. Once the transaction is final, its finalized receipt stored on the record (read and checked once, at finality) ' +
    'is served instead, without a chain read: confirmations is then the count at finality. Unknown hash → 404 found:false; registered through v2 but not anchored → 200 found:false, registered:true. ' +
    '503 ledger_unavailable when the node cannot be reached.',
  middleware: [publicRateLimit()] as const,
  request: { params: HashParam('image_hash') },
  responses: {
    200: { description: 'The ledger check.', content: { 'application/json': { schema: LedgerVerifyResponse } } },
    404: { description: 'Unknown hash: found:false.', content: { 'application/json': { schema: LedgerVerifyResponse } } },
    ...problemResponses(400, 429, 503),
  },
});

export const app = createApp({ publicCors: true, etag: true, deps: { config: getConfig, verifyDeps: getVerifyDeps } });

app.openapi(route, async (c) => {
  const { image_hash } = c.req.valid('param');
  const config = c.var.deps.config();
  const v = await verifyEvidence(c.var.deps.verifyDeps(), image_hash);
  const item = v.record;
  const verdict = v.verdict;
  if (!item || !verdict) {
    c.header('Cache-Control', 'public, max-age=5');
    if (!v.found) return c.json({ found: false, image_hash, verified: false }, 404);
    return c.json({ found: false, image_hash, registered: true, ...(v.registered_at ? { registered_at: v.registered_at } : {}), verified: false }, 200);
  }
  // The ledger part of the one verdict (lib/evidence/verdict.ts): a final transaction from its stored receipt, no chain read.
  const ledger = verdict.ledger;
  c.header('Cache-Control', ledger.final ? 'public, max-age=300' : ledger.status === 'confirmed' ? 'public, max-age=30' : 'public, max-age=5');
  return c.json(
    {
      found: true,
      image_hash,
      verified: verdict.proofs.ledger.state === 'holds',
      tx_hash: item.tx_hash,
      tx_status: ledger.status === 'unchecked' ? 'pending' : ledger.status,
      block_number: ledger.block_number,
      confirmations: ledger.confirmations,
      ledger_final: ledger.final,
      data_matches: ledger.data_matches ?? false,
      expected_input_data: item.merkle ? encodeBatchData(item.merkle.root) : encodeAnchorData(item.image_hash, item.server_hash),
      from: ledger.from,
      expected_from: item.ledger_address.toLowerCase(),
      chain_id: item.ledger_chain_id,
      network: config.ledger.network,
      explorer_url: explorerUrl(config.ledger.explorerTxUrl, item.tx_hash),
      anchored_at: item.anchored_at,
      proof: verdict.proofs.ledger,
    },
    200,
  );
});

export const handler = handle(app);
