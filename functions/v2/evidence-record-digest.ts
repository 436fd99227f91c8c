import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getArchiveSettings, getArchiveStore } from '../../lib/deps/archive.js';
import { offerDigest } from '../../lib/evidence/archive-rehash.js';
import { createApp } from '../../lib/http/app.js';
import { apiKeyAuth } from '../../lib/http/auth.js';
import { HashParam, IsoTime, jsonBody, problemResponses } from '../../lib/http/schemas/common.js';

/** A digest with its algorithm: exactly the hex length of that algorithm (upper case accepted). */
const digestOf = (algorithm: 'SHA-384' | 'SHA-512', bytes: number) =>
  z
    .strictObject({
      algorithm: z.literal(algorithm).describe('The algorithm the service renews hash trees to (ARCHIVE_HASH_ALGORITHM).'),
      digest: z
        .string()
        .regex(new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`), `must be ${bytes * 2} hexadecimal characters (a ${algorithm} digest)`)
        .describe(`The photo's ${algorithm} digest, hex (${bytes * 2} characters).`),
    })
    .openapi(`EvidenceRecordDigestOffer${algorithm.replace('-', '')}`);

/** Checked as every body of the API is: unknown fields, another algorithm name, a digest not of its algorithm's length: 400. */
const DigestOffer = z.discriminatedUnion('algorithm', [digestOf('SHA-384', 48), digestOf('SHA-512', 64)]).openapi('EvidenceRecordDigestOffer');

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
    'it here; the archive job then makes a chain whose first hash tree covers H\'(H\'(photo) ‖ H\'(the SHA-256 chain)), within a minute, served by ' +
    'GET /api/v2/evidence/evidence-record/{image_hash}?sha512=<the same digest> (?sha384= for SHA-384; without a digest the record stays the SHA-256 chain, which no offer ' +
    'changes). The service cannot check the digest: a wrong one makes a chain no verifier accepts with the photo. Send the right one: until the job used ' +
    'the offer the latest digest counts; after that, another digest is a correction and the next pass makes the chain again from the SHA-256 chain. ' +
    'Another account\'s hash: 404; no renewal configured, or the record renewed from this same digest already: 409 hash_renewal_not_due; an unknown field ' +
    'or a digest that is not the hex of its algorithm: 400 invalid_request; another algorithm than the configured one: 400 invalid_digest.',
  security: [{ ApiKey: [] }],
  middleware: [apiKeyAuth({ feature: 'verify' })] as const,
  request: { params: HashParam('image_hash'), ...jsonBody(DigestOffer) },
  responses: {
    202: { description: 'The digest is stored (or replaces the one used: a correction); the renewal follows within a pass of the archive job.', content: { 'application/json': { schema: DigestOffered } } },
    ...problemResponses(400, 401, 404, 409, 413, 429, 503),
  },
});

export const app = createApp({ deps: { archiveSettings: getArchiveSettings, archiveStore: getArchiveStore } });

app.openapi(route, async (c) => {
  const { image_hash } = c.req.valid('param');
  const { algorithm, digest } = c.req.valid('json');
  const offered = await offerDigest({ store: c.var.deps.archiveStore(), settings: c.var.deps.archiveSettings() }, c.var.caller.accountId, image_hash, algorithm, digest);
  return c.json({ ...offered, algorithm: offered.algorithm as 'SHA-384' | 'SHA-512' }, 202);
});

export const handler = handle(app);
