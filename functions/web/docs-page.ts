import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { createApp } from '../../lib/http/app.js';
import { problemResponses } from '../../lib/http/schemas/common.js';
import { DOCS_CSP, DOCS_HTML } from '../../lib/web/docs-view.js';

/** Documented in the OpenAPI document; served by the plain handler below. */
export const route = createRoute({
  method: 'get',
  path: '/docs',
  tags: ['web'],
  summary: 'The API reference: this document rendered by Swagger UI (HTML)',
  description: 'Every file comes from this origin (GET /docs/{file}); works offline.',
  responses: {
    200: { description: 'The page.', content: { 'text/html': { schema: z.string() } } },
    // Like every function: a request body over 64 KiB, even on a GET, is refused unread.
    ...problemResponses(413),
  },
});

export const app = createApp({ publicCors: true });
app.openAPIRegistry.registerPath(route);

app.get('/docs', (c) =>
  c.newResponse(DOCS_HTML, 200, {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy': DOCS_CSP,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Cache-Control': 'public, max-age=300',
  }),
);

export const handler = handle(app);
