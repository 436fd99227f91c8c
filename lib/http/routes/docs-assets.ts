import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import { Problem } from '../schemas/common.js';

/** GET /docs/{file}: the files of the API reference page (functions/web/docs-assets.ts). */
export const docsAssetsRoute = createRoute({
  method: 'get',
  path: '/docs/{file}',
  tags: ['web'],
  summary: 'The files of the API reference page: swagger-ui-bundle.js, swagger-ui.css, overrides.css, init.js',
  request: { params: z.object({ file: z.string().openapi({ param: { name: 'file', in: 'path' }, example: 'swagger-ui.css' }) }) },
  responses: {
    200: { description: 'The file.', content: { 'text/javascript': { schema: z.string() }, 'text/css': { schema: z.string() } } },
    404: { description: 'No such file.', content: { 'application/problem+json': { schema: Problem } } },
  },
});

/**
 * The route for the OpenAPI document alone (functions/openapi.ts): documenting it through the
 * function's own app would bundle Swagger UI's 1.9 MB into the openapi Lambda.
 */
export function docsAssetsRouteDocumentation(): OpenAPIHono {
  const doc = new OpenAPIHono();
  doc.openAPIRegistry.registerPath(docsAssetsRoute);
  return doc;
}
