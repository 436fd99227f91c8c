import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getArchiveStore } from '../../lib/deps/archive.js';
import { evidenceRecordOf } from '../../lib/evidence/archive.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { HashParam, problemResponses } from '../../lib/http/schemas/common.js';

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
    'Media type application/octet-stream (RFC 4998 registers none), file name <image_hash>.ers. Check it with `evidence verify photo.jpg --evidence-record <file>`.',
  middleware: [publicRateLimit()] as const,
  request: { params: HashParam('image_hash') },
  responses: {
    200: { description: 'The DER EvidenceRecord.', content: { [EVIDENCE_RECORD_MEDIA_TYPE]: { schema: z.string().openapi({ format: 'binary' }) } } },
    ...problemResponses(400, 404, 429, 503),
  },
});

export const app = createApp({ publicCors: true, etag: true });

app.openapi(route, async (c) => {
  const { image_hash } = c.req.valid('param');
  const { der } = await evidenceRecordOf(getArchiveStore(), image_hash);
  // A renewal appends to the record: every use revalidates (ETag, 304).
  c.header('Cache-Control', 'no-cache');
  c.header('Content-Type', EVIDENCE_RECORD_MEDIA_TYPE);
  c.header('Content-Disposition', `attachment; filename="${image_hash}.ers"`);
  return c.body(der as Uint8Array<ArrayBuffer>, 200);
});

export const handler = handle(app);
