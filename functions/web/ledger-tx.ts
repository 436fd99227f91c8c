import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { jsx } from 'hono/jsx';
import { getRpcReader } from '../../lib/deps/evidence.js';
import { createApp } from '../../lib/http/app.js';
import { badRequest, notFound } from '../../lib/http/errors.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { problemResponses } from '../../lib/http/schemas/common.js';
import { readLedgerTx, TX_HASH } from '../../lib/web/ledger-tx-model.js';
import { LedgerTxPage } from '../../lib/web/ledger-tx-view.js';
import { prefersJson, renderHtmlError, sendPage } from '../../lib/web/respond.js';
import { ErrorPage } from '../../lib/web/verify-view.js';

const LedgerTx = z
  .object({
    tx_hash: z.string(),
    chain_id: z.number().int(),
    status: z.enum(['confirmed', 'reverted', 'pending']),
    block_number: z.number().int().nullable(),
    block_hash: z.string().nullable(),
    block_time: z.string().nullable(),
    confirmations: z.number().int().describe('Blocks from its block to the latest one, inclusive (1 = just mined), as of checked_at.'),
    checked_at: z.string().describe('When the chain was read (ISO 8601).'),
    from: z.string(),
    to: z.string().nullable(),
    nonce: z.number().int(),
    value_wei: z.string(),
    gas_used: z.string().nullable(),
    input: z.string(),
    decoded: z.object({ kind: z.enum(['anchor', 'pq-key', 'batch', 'other']) }).passthrough(),
  })
  .openapi('LedgerTransaction');

/** Documented in the OpenAPI document; served by the plain handler below (HTML or JSON by Accept). */
export const route = createRoute({
  method: 'get',
  path: '/ledger/tx/{tx_hash}',
  tags: ['web'],
  summary: "The local chain's explorer: one transaction (HTML, or JSON with Accept: application/json)",
  description:
    'Read from the chain now: hash, block, confirmations, from, to, status, and the input data decoded as an evidence anchor ' +
    '(image_hash || server_hash), a batch of anchors ("MERKLE-SHA256:" || RFC 6962 Merkle root) or a post-quantum key registration ("ML-DSA-65:" || fingerprint). The local LEDGER_EXPLORER_TX_URL points here.',
  request: { params: z.object({ tx_hash: z.string().openapi({ param: { name: 'tx_hash', in: 'path' }, pattern: '^0x[0-9a-fA-F]{64}$' }) }) },
  responses: {
    200: { description: 'The transaction.', content: { 'application/json': { schema: LedgerTx }, 'text/html': { schema: z.string() } } },
    ...problemResponses(400, 404, 429, 503),
  },
});

export const app = createApp({ publicCors: true, deps: { rpcReader: getRpcReader } });
app.openAPIRegistry.registerPath(route);
app.onError(renderHtmlError);

app.get('/ledger/tx/:tx_hash', publicRateLimit(), async (c) => {
  const json = prefersJson(c.req.header('accept'));
  c.header('Vary', 'Accept');
  const given = c.req.param('tx_hash');
  if (!TX_HASH.test(given)) {
    if (json) throw badRequest('invalid_tx_hash', 'A transaction hash is 0x followed by 64 hexadecimal characters.');
    return sendPage(c, jsx(ErrorPage, { title: 'Not a transaction hash', detail: 'A transaction hash is 0x followed by 64 hexadecimal characters.' }), 400);
  }
  const tx = await readLedgerTx(c.var.deps.rpcReader(), given);
  if (!tx) {
    const detail = `The chain has no transaction ${given.toLowerCase()}.`;
    if (json) throw notFound('tx_not_found', detail);
    return sendPage(c, jsx(ErrorPage, { title: 'Transaction not found', detail }), 404, 'public, max-age=5');
  }
  // A mined transaction only gains confirmations; a pending one changes soon.
  const cache = tx.status === 'pending' ? 'no-cache' : 'public, max-age=5';
  if (json) {
    c.header('Cache-Control', cache);
    return c.json(tx, 200);
  }
  return sendPage(c, jsx(LedgerTxPage, { tx }), 200, cache);
});

export const handler = handle(app);
