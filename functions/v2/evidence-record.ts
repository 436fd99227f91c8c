import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getArchiveStore } from '../../lib/deps/archive.js';
import { evidenceRecordOf } from '../../lib/evidence/archive-record.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { HashParam, problemResponses } from '../../lib/http/schemas/common.js';

const digestParam = (name: 'sha384' | 'sha512', bytes: number) =>
  z
    .string()
    .regex(new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`), `must be ${bytes * 2} hexadecimal characters (the photo's ${name === 'sha384' ? 'SHA-384' : 'SHA-512'} digest)`)
    .optional()
    .openapi({
      param: { name, in: 'query' },
      description:
        `The photo's ${name === 'sha384' ? 'SHA-384' : 'SHA-512'} digest (${bytes * 2} hex characters): the record whose hash-tree renewal to that algorithm was made from it ` +
        '(POST …/digest), when there is one; otherwise the record served without it.',
    });

/** Which record: without a digest, the group's SHA-256 chain; with the photo's digest, the hash-tree renewal made from it. At most one. */
const RecordQuery = z
  .strictObject({ sha384: digestParam('sha384', 48), sha512: digestParam('sha512', 64) })
  .refine((q) => q.sha384 === undefined || q.sha512 === undefined, { message: 'give sha384 or sha512, not both' });

/** RFC 4998 registers no media type for a DER EvidenceRecord (docs/decisions.md "Evidence records"). */
export const EVIDENCE_RECORD_MEDIA_TYPE = 'application/octet-stream';

export const route = createRoute({
  method: 'get',
  path: '/api/v2/evidence/evidence-record/{image_hash}',
  tags: ['v2 evidence'],
  summary: 'Download the RFC 4998 evidence record of an anchored hash (no credentials)',
  description:
    'The DER EvidenceRecord (RFC 4998) whose data object is the photo itself: its first archive timestamp\'s hash tree starts from the photo\'s SHA-256 ' +
    '(image_hash), so a relying party checks it against the photo file (§5.3), with the TSA root alone. Many anchors share one archive timestamp (an ' +
    'RFC 3161 token over the root of their hash tree), made within about a minute of the anchor; until then 404 evidence_record_pending. The service ' +
    'renews the record (§5.2) before its timestamps\' TSA certificates expire, so the record grows over the years: fetch it again when you need it. ' +
    'Without a digest the record is that SHA-256 chain, which nothing an account sends changes. After a hash-tree renewal (ARCHIVE_HASH_ALGORITHM, ' +
    'POST …/digest), give the photo\'s digest with the new algorithm (`?sha512=`, or `?sha384=`; not both): the record whose new chain that digest satisfies, ' +
    'when one was made from it; otherwise the SHA-256 one. ' +
    'Media type application/octet-stream (RFC 4998 registers none), file name <image_hash>.ers. Check it with `evidence verify photo.jpg --evidence-record <file>`.',
  middleware: [publicRateLimit()] as const,
  request: { params: HashParam('image_hash'), query: RecordQuery },
  responses: {
    200: { description: 'The DER EvidenceRecord.', content: { [EVIDENCE_RECORD_MEDIA_TYPE]: { schema: z.string().openapi({ format: 'binary' }) } } },
    ...problemResponses(400, 404, 429, 503),
  },
});

export const app = createApp({ publicCors: true, etag: true, deps: { archiveStore: getArchiveStore } });

app.openapi(route, async (c) => {
  const { image_hash } = c.req.valid('param');
  const { sha384, sha512 } = c.req.valid('query');
  const digest = sha512 ?? sha384;
  const select = digest ? { algorithm: sha512 ? ('SHA-512' as const) : ('SHA-384' as const), digest: Uint8Array.from(Buffer.from(digest, 'hex')) } : undefined;
  const { der } = await evidenceRecordOf(c.var.deps.archiveStore(), image_hash, select);
  // A renewal appends to the record: every use revalidates (ETag, 304).
  c.header('Cache-Control', 'no-cache');
  c.header('Content-Type', EVIDENCE_RECORD_MEDIA_TYPE);
  c.header('Content-Disposition', `attachment; filename="${image_hash}.ers"`);
  return c.body(der as Uint8Array<ArrayBuffer>, 200);
});

export const handler = handle(app);
