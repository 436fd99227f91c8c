import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { jsx } from 'hono/jsx';
import { createApp } from '../../lib/http/app.js';
import { notFound } from '../../lib/http/errors.js';
import { PROBLEM_TITLES } from '../../lib/http/problem-titles.js';
import { PROBLEM_TYPES } from '../../lib/http/problem-types.js';
import { ProblemTypePage } from '../../lib/web/problem-view.js';
import { renderHtmlError, sendPage } from '../../lib/web/respond.js';

/** Documented in the OpenAPI document; served by the plain handler below. */
export const route = createRoute({
  method: 'get',
  path: '/problems/{code}',
  tags: ['web'],
  summary: 'The page of a problem type: what an error code means and what to do (HTML)',
  description: 'The `type` of every problem+json answer points here. Static: it reads nothing and writes nothing, so it is cached for a day.',
  request: { params: z.object({ code: z.string().openapi({ param: { name: 'code', in: 'path' }, example: 'hash_already_anchored' }) }) },
  responses: {
    200: { description: 'The explanation.', content: { 'text/html': { schema: z.string() } } },
    404: { description: 'No such problem type.', content: { 'text/html': { schema: z.string() } } },
  },
});

export const app = createApp({ publicCors: true });
app.openAPIRegistry.registerPath(route);
app.onError(renderHtmlError);

app.get('/problems/:code', (c) => {
  const code = c.req.param('code');
  const type = Object.hasOwn(PROBLEM_TYPES, code) ? PROBLEM_TYPES[code] : undefined;
  const title = Object.hasOwn(PROBLEM_TITLES, code) ? PROBLEM_TITLES[code] : undefined;
  if (!type || !title) throw notFound('not_found', `There is no problem type "${code}".`);
  return sendPage(c, jsx(ProblemTypePage, { code, title, type }), 200, 'public, max-age=86400');
});

export const handler = handle(app);
