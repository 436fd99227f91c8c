import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getArchiveSettings, getArchiveStore } from '../../lib/deps/archive.js';
import { offerDigest } from '../../lib/evidence/archive.js';
import { createApp } from '../../lib/http/app.js';
import { apiKeyAuth, apiKeyCaller } from '../../lib/http/auth.js';
import { HashParam, IsoTime, jsonBody, problemResponses } from '../../lib/http/schemas/common.js';

const DigestOffer = z
  .object({
    algorithm: z.enum(['SHA-384', 'SHA-512']).describe('The algorithm the service renews hash trees to (ARCHIVE_HASH_ALGORITHM).'),
    digest: z.string().min(1).max(256).describe('The photo\'s digest with that algorithm, hex (SHA-512: 128 characters).'),
  })
  .openapi('EvidenceRecordDigestOffer');

const DigestOffered = z
  .object({
    image_hash: z.string(),
    algorithm: z.enum(['SHA-384', 'SHA-512']),
    state: z.literal('offered'),
    offered_at: IsoTime,
  })
  .openapi('EvidenceRecordDigestOffered');

export const route = createRoute({
  method: 'post',
  path: '/api/v2/evidence/evidence-record/{image_hash}/digest',
  tags: ['v2 evidence'],
  summary: 'Give the photo\'s digest with the new hash algorithm, for the hash-tree renewal of its evidence record (RFC 4998 §5.2)',
  description:
    'When the service is configured to renew hash trees to a new algorithm (ARCHIVE_HASH_ALGORITHM), the record of a photo can only be renewed with the ' +
    'photo\'s digest with that algorithm, which only its holder can compute (the service never sees the photo). The account that anchored the hash sends ' +
    'it here; the archive job then adds a chain whose first hash tree covers H\'(H\'(photo) ‖ H\'(the earlier chains)), within a minute. The service cannot ' +
    'check the digest: a wrong one makes a chain no verifier accepts (send it again: the latest offer counts until it is used). Another account\'s hash: 404; ' +
    'no renewal configured, or the record renewed to that algorithm already: 409 hash_renewal_not_due; another algorithm or a malformed digest: 400 invalid_digest.',
  security: [{ ApiKey: [] }],
  middleware: [apiKeyAuth({ feature: 'verify' })] as const,
  request: { params: HashParam('image_hash'), ...jsonBody(DigestOffer) },
  responses: {
    202: { description: 'The digest is stored; the renewal follows within a pass of the archive job.', content: { 'application/json': { schema: DigestOffered } } },
    ...problemResponses(400, 401, 404, 409, 413, 429, 503),
  },
});

export const app = createApp();

app.openapi(route, async (c) => {
  const { image_hash } = c.req.valid('param');
  const { algorithm, digest } = c.req.valid('json');
  const offered = await offerDigest({ store: getArchiveStore(), settings: getArchiveSettings() }, apiKeyCaller(c).accountId, image_hash, algorithm, digest);
  return c.json({ ...offered, algorithm: offered.algorithm as 'SHA-384' | 'SHA-512' }, 202);
});

export const handler = handle(app);
