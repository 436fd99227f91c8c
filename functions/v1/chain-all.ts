import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { parseChainCursor, readChainPage } from '../../lib/evidence/v1-read.js';
import { ChainPageResponse, ChainQuery } from '../../lib/http/schemas/v1.js';
import { createApp } from '../../lib/http/app.js';
import { badRequest, notFound } from '../../lib/http/errors.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { problemResponses } from '../../lib/http/schemas/common.js';

const DeviceParam = z.object({
  public_key_hex: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hexadecimal characters (an Ed25519 public key)')
    .transform((s) => s.toLowerCase())
    .openapi({ param: { name: 'public_key_hex', in: 'path' }, type: 'string', pattern: '^[0-9a-fA-F]{64}$' }),
});

const DEFAULT_LIMIT = 100;

export const route = createRoute({
  method: 'get',
  path: '/api/v1/chain/all/{public_key_hex}',
  tags: ['v1'],
  summary: "A device's chain in index order, with an integrity verdict (no credentials)",
  description:
    'Lists the entries of the chain of one device key, in chain_index order, up to limit (default 100, at most 1000) per page; ' +
    'next_cursor continues it (null on the last page). integrity recomputes each chain_hash = SHA-256(previous_hash, or 32 zero bytes at index 0, || image_hash), ' +
    'compares each previous_hash with the chain_hash of the entry before (broken_links) and names missing indexes (gaps). ' +
    'When the chain fits in one page the verdict covers the whole chain (scope chain); otherwise each page covers its entries and the link into the entry before it (scope page), ' +
    'and the chain is intact when every page says complete. An unknown device key → 404 device_not_found; a malformed key or cursor → 400.',
  middleware: [publicRateLimit()] as const,
  request: { params: DeviceParam, query: ChainQuery },
  responses: {
    200: { description: 'One page of the chain.', content: { 'application/json': { schema: ChainPageResponse } } },
    ...problemResponses(400, 404, 429, 503),
  },
});

export const app = createApp({ publicCors: true, deps: { evidenceRepo: getEvidenceRepo } });

app.openapi(route, async (c) => {
  const { public_key_hex } = c.req.valid('param');
  const { limit, cursor } = c.req.valid('query');
  const from = parseChainCursor(cursor);
  if (from === undefined) throw badRequest('invalid_cursor', 'cursor must be the next_cursor of a previous page.');
  const page = await readChainPage(c.var.deps.evidenceRepo(), public_key_hex, from, limit ?? DEFAULT_LIMIT);
  if (!page) throw notFound('device_not_found', `No chain for the device key ${public_key_hex}.`);
  c.header('Cache-Control', 'public, max-age=5');
  return c.json(page, 200);
});

export const handler = handle(app);
