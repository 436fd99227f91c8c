import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAnchorDeps } from '../../lib/deps/anchoring.js';
import { anchorEvidence } from '../../lib/evidence/anchor.js';
import { V1AnchorRequest, V1AnchorResponse } from '../../lib/http/schemas/v1.js';
import { createApp } from '../../lib/http/app.js';
import { apiKeyAuth, requestQuotaPort } from '../../lib/http/auth.js';
import { anchorBulkhead } from '../../lib/http/bulkhead.js';
import { jsonBody, problemResponses } from '../../lib/http/schemas/common.js';

export const route = createRoute({
  method: 'post',
  path: '/api/v1/chain/anchor',
  tags: ['v1'],
  summary: 'Anchor a photo hash into its device chain: ML-DSA-65 signature, RFC 3161 timestamp and ledger transaction in one call',
  description:
    'The v1 entry to the same pipeline and store as POST /api/v2/evidence/anchor: a hash anchored here verifies through v2 and the other way round, ' +
    'and a hash is anchored once across both versions (a second attempt, or a concurrent one, gets 409 hash_already_anchored). Pro and Enterprise; ' +
    'counts one unit of the monthly quota when it succeeds.\n\n' +
    'The device signs the 32 raw bytes of image_hash with Ed25519 (400 invalid_signature otherwise). chain_hash = SHA-256(previous chain_hash, or 32 zero bytes at index 0, || image_hash) over raw bytes ' +
    '(400 invalid_chain_hash). previous_hash is absent, null or 64 zeros at index 0 and the stored chain_hash of index - 1 after it (400 invalid_previous_hash / previous_hash_mismatch). ' +
    'An index other than the next free one → 409 chain_index_conflict with next_index. device_id is optional. ' +
    'Retries are safe: the identical request resumes an interrupted anchor with the proofs and ledger transaction already made ' +
    '(never a second transaction), or starts afresh when nothing was published; while another invocation is on it, 409 with Retry-After (at most 20 s). ' +
    'When a dependency fails the answer is 503 and the identical retry completes the anchor.\n\n' +
    'tx_status is pending when the transaction was sent but not mined within the receipt timeout; it completes later (GET /chain/verify shows it).',
  security: [{ ApiKey: [] }],
  middleware: [apiKeyAuth({ feature: 'anchor', charge: 'handler' }), anchorBulkhead] as const,
  request: jsonBody(V1AnchorRequest),
  responses: {
    201: {
      description: 'Anchored. Location names the verify URL.',
      content: { 'application/json': { schema: V1AnchorResponse } },
    },
    ...problemResponses(400, 401, 403, 409, 413, 429, 503),
  },
});

export const app = createApp({ deps: { anchorDeps: getAnchorDeps } });

app.openapi(route, async (c) => {
  const body = c.req.valid('json');
  const caller = c.var.caller;
  const deps = await c.var.deps.anchorDeps();
  const result = await anchorEvidence({ ...deps, quota: requestQuotaPort(c, deps.quota) }, {
    imageHash: body.image_hash,
    chainIndex: body.chain_index,
    chainHash: body.chain_hash,
    previousHash: body.previous_hash ?? null,
    signatureHex: body.signature_hex,
    publicKeyHex: body.public_key_hex,
    deviceId: body.device_id ?? undefined,
    accountId: caller.accountId,
    tier: caller.tier,
    apiVersion: 'v1',
  });
  c.header('Location', `/api/v1/chain/verify/${result.image_hash}`);
  return c.json(
    {
      id: result.chain_index,
      image_hash: result.image_hash,
      chain_index: result.chain_index,
      pq_signature: result.pq_signature,
      timestamp_token: result.tsa_response,
      tx_hash: result.tx_hash,
      tx_status: result.tx_status,
      anchored_at: result.anchored_at,
    },
    201,
  );
});

export const handler = handle(app);
