import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getAnchorDeps } from '../../lib/deps/anchoring.js';
import { getConfig } from '../../lib/deps/core.js';
import { anchorBatch, type BatchEntry } from '../../lib/evidence/anchor-batch.js';
import { createApp, problemDocument, toHttpError, validationError } from '../../lib/http/app.js';
import { apiKeyAuth, requestQuotaPort } from '../../lib/http/auth.js';
import { anchorBulkhead } from '../../lib/http/bulkhead.js';
import { anchorInputOf, anchorResultBody } from '../../lib/http/routes/evidence-anchor.js';
import { jsonBody, Problem, problemResponses } from '../../lib/http/schemas/common.js';
import { AnchorRequest, AnchorResult } from '../../lib/http/schemas/evidence.js';

/** Most entries in one request (the contract; a request of 100 stays far below the body limit). */
export const MAX_BATCH_ENTRIES = 100;
/** The batch's body limit: 100 entries of about 500 bytes each, pretty-printed, fit with room to spare. */
const MAX_BATCH_BODY_BYTES = 256 * 1024;

// Each entry is validated on its own (an invalid entry is a 400 in its slot, not of the request),
// so the request schema takes any value as an entry and documents it as an AnchorRequest.
const Entry = z.unknown().openapi({ $ref: '#/components/schemas/AnchorRequest' } as never);

const BatchResult = z
  .object({
    results: z
      .array(
        z.union([
          z.object({ status: z.literal(200), anchor: AnchorResult }),
          z.object({ status: z.number().int().min(400).max(599), problem: Problem }),
        ]),
      )
      .describe('One result per entry, in request order.'),
  })
  .openapi('AnchorBatchResult');

export const route = createRoute({
  method: 'post',
  path: '/api/v2/evidence/anchor/batch',
  tags: ['v2 evidence'],
  summary: 'Anchor up to 100 device-chain entries in one request (a phone that syncs its queue)',
  description:
    'Each entry is exactly the body of POST /evidence/anchor and is anchored exactly as that endpoint anchors it alone: the same checks, proofs, charge (one unit of the monthly quota and one of the per-minute rate per anchored entry) and identical-retry rules. ' +
    'The answer is 200 with one result per entry, in request order: `{ "status": 200, "anchor": <anchor result> }`, or `{ "status": <4xx/5xx>, "problem": <RFC 9457 problem> }` with the status that endpoint would have answered the entry alone ' +
    '(a problem whose answer would carry Retry-After carries `retry_after`, in seconds). An entry that fails does not fail the others. ' +
    'Entries of one device chain come in chain order (a chain index that does not rise is 400 chain_order in its slot); an entry may build on an earlier entry of the same request, and entries of several devices may be interleaved. ' +
    'An entry whose previous_hash is the chain_hash of an entry of this request that was not anchored gets 409 previous_entry_failed, naming that entry (`failed_entry`), and nothing of it is written or charged. ' +
    'When the quota runs out in the middle, the rest answer 429 in their slots. The identical request sent again (an answer lost) answers each entry as POST /evidence/anchor answers its identical retry: nothing is anchored or charged twice. ' +
    'In batch mode every entry names the Merkle batch of the window open when the first entry is published, so the ledger sees one transaction for the request, or two when another request seals that window meanwhile. ' +
    `The whole request is refused (400 problem+json, nothing anchored or charged) when the body is not an object with exactly the member \`anchors\`, or \`anchors\` is not a list of 1 to ${MAX_BATCH_ENTRIES} entries; a body over ${MAX_BATCH_BODY_BYTES} bytes is 413.`,
  security: [{ ApiKey: [] }],
  // Each anchored entry charges its rate unit and quota hold in the anchor's own write (lib/evidence/anchor.ts).
  middleware: [apiKeyAuth({ feature: 'anchor', charge: 'handler' }), anchorBulkhead] as const,
  request: jsonBody(z.strictObject({ anchors: z.array(Entry).min(1).max(MAX_BATCH_ENTRIES).describe(`1 to ${MAX_BATCH_ENTRIES} anchor requests.`) })),
  responses: {
    200: { description: 'One result per entry.', content: { 'application/json': { schema: BatchResult } } },
    ...problemResponses(400, 401, 403, 413, 429, 503),
  },
});

export const app = createApp({ deps: { anchorDeps: getAnchorDeps, config: getConfig }, maxBodyBytes: MAX_BATCH_BODY_BYTES });

app.openapi(route, async (c) => {
  const { anchors } = c.req.valid('json');
  const caller = c.var.caller;
  const entries: BatchEntry[] = anchors.map((raw) => {
    const parsed = AnchorRequest.safeParse(raw);
    if (parsed.success) return { kind: 'anchor', input: anchorInputOf(parsed.data, caller) };
    // What builds on a refused entry fails too: its device and chain_hash, when they can be read.
    const { public_key_hex: key, chain_hash: link } = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
    return {
      kind: 'refused',
      error: validationError(parsed.error),
      ...(typeof key === 'string' ? { publicKeyHex: key.toLowerCase() } : {}),
      ...(typeof link === 'string' ? { chainHash: link.toLowerCase() } : {}),
    };
  });
  const deps = await c.var.deps.anchorDeps();
  const outcomes = await anchorBatch({ ...deps, quota: requestQuotaPort(c, deps.quota) }, entries);
  const config = c.var.deps.config();
  const results = outcomes.map((o) => {
    if (o.ok) return { status: 200 as const, anchor: anchorResultBody(o.item, config) };
    const error = toHttpError(o.error, c);
    const retryAfter = error.headers['Retry-After'];
    const problem = problemDocument(error, { instance: c.req.path, requestId: c.get('requestId') });
    return { status: error.status as number, problem: { ...problem, ...(retryAfter ? { retry_after: Number(retryAfter) } : {}) } as z.infer<typeof Problem> };
  });
  return c.json({ results }, 200);
});

export const handler = handle(app);
