import { handle } from 'hono/aws-lambda';
import { createApp } from '../../lib/http/app.js';
import { notFound } from '../../lib/http/errors.js';
import { docsAssetsRoute } from '../../lib/http/routes/docs-assets.js';
import { loadDocsFiles } from '../../lib/web/docs-files.js';
import { DOCS_INIT_SCRIPT, DOCS_OVERRIDES_CSS } from '../../lib/web/docs-view.js';

export const app = createApp({ publicCors: true, etag: true });
app.openAPIRegistry.registerPath(docsAssetsRoute);

app.get('/docs/:file', async (c) => {
  const file = c.req.param('file');
  const files = await loadDocsFiles();
  const [body, type] =
    file === 'swagger-ui-bundle.js' ? [files.script, 'text/javascript'] : file === 'swagger-ui.css' ? [files.style, 'text/css'] : file === 'init.js'
          ? [DOCS_INIT_SCRIPT, 'text/javascript']
          : file === 'overrides.css'
            ? [DOCS_OVERRIDES_CSS, 'text/css']
            : [];
  if (body === undefined || type === undefined) throw notFound('not_found', `There is no file "${file}" of the API reference.`);
  // Swagger UI's files change only with its package version: a day's cache, revalidated by ETag.
  return c.newResponse(body, 200, { 'Content-Type': `${type}; charset=utf-8`, 'Cache-Control': 'public, max-age=86400', 'X-Content-Type-Options': 'nosniff' });
});

export const handler = handle(app);
