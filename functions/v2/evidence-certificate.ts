import { handle } from 'hono/aws-lambda';
import { getCertificateDeps } from '../../lib/deps/certificate.js';
import { issueCertificate } from '../../lib/evidence/certificate.js';
import { createApp } from '../../lib/http/app.js';
import { certificateRoute } from '../../lib/http/routes/evidence-certificate.js';

export const app = createApp({ deps: { certificateDeps: getCertificateDeps } });

app.openapi(certificateRoute, async (c) => {
  const { image_hash } = c.req.valid('param');
  const { pdf } = await issueCertificate(c.var.deps.certificateDeps(), image_hash, c.var.caller.accountId);
  c.header('Content-Type', 'application/pdf');
  c.header('Content-Disposition', `attachment; filename="evidence-certificate-${image_hash}.pdf"`);
  c.header('Cache-Control', 'no-store');
  return c.body(pdf as Uint8Array<ArrayBuffer>, 200);
});

export const handler = handle(app);
