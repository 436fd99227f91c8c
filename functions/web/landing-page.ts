import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { jsx } from 'hono/jsx';
import { getConfig } from '../../lib/deps/core.js';
import { createApp } from '../../lib/http/app.js';
import { problemResponses } from '../../lib/http/schemas/common.js';
import { LandingPage } from '../../lib/web/landing-view.js';
import { renderHtmlError, sendPage } from '../../lib/web/respond.js';

/** Documented in the OpenAPI document; served by the plain handler below. */
export const route = createRoute({
  method: 'get',
  path: '/',
  tags: ['web'],
  summary: 'The landing page: what the service does, the tiers with their limits, check a file or a hash (HTML)',
  responses: {
    200: { description: 'The page.', content: { 'text/html': { schema: z.string() } } },
    // Like every function: a request body over 64 KiB, even on a GET, is refused unread.
    ...problemResponses(413),
  },
});

export const app = createApp({ publicCors: true, deps: { config: getConfig } });
app.openAPIRegistry.registerPath(route);
app.onError(renderHtmlError);

// The tier table is configuration (TIER_LIMITS): the page shows the limits in force.
app.get('/', (c) => sendPage(c, jsx(LandingPage, { tiers: c.var.deps.config().tiers }), 200, 'public, max-age=300'));

export const handler = handle(app);
