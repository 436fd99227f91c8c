import { createRoute, type RouteConfigToEnv, type RouteHandler, type z } from '@hono/zod-openapi';
import type { Config } from '../../config.js';
import type { AnchorDeps } from '../../evidence/anchor.js';
import type { AuthenticatedKey } from '../../accounts/key-auth.js';
import type { AppEnv } from '../app.js';
import { apiKeyAuth, requestQuotaPort } from '../auth.js';
import { anchorBulkhead } from '../bulkhead.js';
import { jsonBody, problemResponses } from '../schemas/common.js';
import { explorerUrl } from '../../ledger/anchor-data.js';
import { anchorEvidence, type AnchorInput } from '../../evidence/anchor.js';
import type { AnchoredEvidence } from '../../evidence/records.js';
import { AnchorRequest, AnchorResult } from '../schemas/evidence.js';

/** What the anchor functions name in `createApp({ deps })`. */
export interface AnchorAppDeps {
  anchorDeps: () => Promise<AnchorDeps>;
  config: () => Config;
}

/**
 * POST /api/v2/evidence/anchor and POST /api/v2/evidence/full: one implementation, two routes,
 * two Lambdas (api-v2.md rule 3: /full behaves identically to /anchor). Each function module
 * builds its own app and serves {@link anchorRoute} of its path with {@link anchorHandler}.
 */
export function anchorRoute(path: '/api/v2/evidence/anchor' | '/api/v2/evidence/full') {
  return createRoute({
    method: 'post',
    path,
    tags: ['v2 evidence'],
    summary:
      path === '/api/v2/evidence/full'
        ? 'Full evidence pipeline (alias of /evidence/anchor)'
        : 'Anchor a hash: ML-DSA-65 signature, RFC 3161 timestamp and ledger transaction',
    description:
      'Checks the device signature and chain, then signs, timestamps and anchors. Pro and Enterprise. ' +
      'While the post-quantum TSA is on, every anchor also gets an ML-DSA-65 RFC 3161 token (RFC 9882) over the same hash, made beside the classic one; the request does not ask for it, and the receipt carries it as timestamp_pq. ' +
      'A hash is anchored once: another request for it, or a concurrent one, gets 409 hash_already_anchored. ' +
      'Retries are safe: the identical request (same body, same account) resumes an interrupted anchor with the proofs ' +
      'and the ledger transaction already made (never a second transaction), or starts afresh when nothing was published; ' +
      'while another invocation is still on it, it gets 409 with Retry-After (at most 20 s). ' +
      'When a dependency fails, the answer is 503 and the identical retry completes the anchor. ' +
      'blockchain_anchored is false when the transaction was sent but not yet mined within the receipt timeout; it completes later.',
    security: [{ ApiKey: [] }],
    // The anchor charges the rate and its quota hold, named after the hash, in one write (lib/evidence/anchor.ts).
    middleware: [apiKeyAuth({ feature: path === '/api/v2/evidence/full' ? 'full' : 'anchor', charge: 'handler' }), anchorBulkhead] as const,
    request: jsonBody(AnchorRequest),
    responses: {
      200: { description: 'Anchored.', content: { 'application/json': { schema: AnchorResult } } },
      ...problemResponses(400, 401, 403, 409, 413, 429, 503),
    },
  });
}

/** The one implementation of both routes. */
type AnchorRoute = ReturnType<typeof anchorRoute>;

/** The one implementation of both routes. */
export const anchorHandler: RouteHandler<AnchorRoute, RouteConfigToEnv<AnchorRoute> & AppEnv<AnchorAppDeps>> = async (c) => {
  const body = c.req.valid('json');
  const caller = c.var.caller;
  const deps = await c.var.deps.anchorDeps();
  const result = await anchorEvidence({ ...deps, quota: requestQuotaPort(c, deps.quota) }, anchorInputOf(body, caller));
  return c.json(anchorResultBody(result, c.var.deps.config()), 200);
};

/** A v2 anchor request (validated) as the domain's input. */
export function anchorInputOf(body: z.output<typeof AnchorRequest>, caller: AuthenticatedKey): AnchorInput {
  return {
    imageHash: body.sha256_hash,
    chainIndex: body.chain_index,
    chainHash: body.chain_hash,
    previousHash: body.previous_hash,
    signatureHex: body.signature_hex,
    publicKeyHex: body.public_key_hex,
    accountId: caller.accountId,
    tier: caller.tier,
    apiVersion: 'v2',
  };
}

/** The anchor result (api-v2.md "Anchor result") of an anchored record: the single anchor's answer and a batch entry's. */
export function anchorResultBody(result: AnchoredEvidence, config: Config) {
  return {
    status: 'anchored' as const,
    image_hash: result.image_hash,
    server_hash: result.server_hash,
    anchored_at: result.anchored_at,
    has_timestamp: true,
    pq_signed: true,
    pq_algorithm: 'ML-DSA-65' as const,
    blockchain_anchored: result.tx_status === 'confirmed',
    tx_hash: result.tx_hash,
    ledgerscan_url: explorerUrl(config.ledger.explorerTxUrl, result.tx_hash),
  };
}
