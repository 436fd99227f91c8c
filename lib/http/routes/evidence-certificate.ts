import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import { apiKeyAuth } from '../auth.js';
import { HashParam, problemResponses } from '../schemas/common.js';

/** GET /api/v2/evidence/certificate/{image_hash} (decisions.md "Starter features"). */
export const certificateRoute = createRoute({
  method: 'get',
  path: '/api/v2/evidence/certificate/{image_hash}',
  tags: ['v2 evidence'],
  summary: 'Download the signed PDF evidence certificate of a hash your account registered, time-stamped, signed or anchored (Starter and above; counts toward the quota)',
  description:
    'A one- or two-page A4 PDF for non-technical readers with the precise values for experts: the SHA-256, the times, each proof present (what it proves and ' +
    'the command that checks it without this service), the proofs not present, a QR code of PUBLIC_BASE_URL/verify/{image_hash}. The receipt JSON is attached ' +
    '(receipt.json, AFRelationship Data), and so are your account’s latest answers of POST /api/v2/evidence/sign and /timestamp for the hash, as answered ' +
    '(signature.json, timestamp.json; another account’s are never shown). The PDF is signed (PAdES, ETSI.CAdES.detached, with a signature timestamp from the service TSA). ' +
    'Another account’s hash and an unknown one both answer 404.',
  security: [{ ApiKey: [] }],
  middleware: [apiKeyAuth({ feature: 'pdf_certificate', charge: 'quota' })] as const,
  request: { params: HashParam('image_hash') },
  responses: {
    200: { description: 'The signed certificate.', content: { 'application/pdf': { schema: z.string().openapi({ format: 'binary' }) } } },
    ...problemResponses(400, 401, 403, 404, 429, 503),
  },
});

/**
 * The route for the OpenAPI document alone (functions/openapi.ts): documenting it through the
 * function's own app would bundle pdf-lib and the fonts into the openapi Lambda.
 */
export function certificateRouteDocumentation(): OpenAPIHono {
  const doc = new OpenAPIHono();
  doc.openapi(certificateRoute, () => {
    throw new Error('documentation only');
  });
  return doc;
}
