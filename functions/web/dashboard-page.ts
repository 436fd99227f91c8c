import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { jsx } from 'hono/jsx';
import { createApp } from '../../lib/http/app.js';
import { problemResponses } from '../../lib/http/schemas/common.js';
import { pageCsp, securityHeaders } from '../../lib/web/assets.js';
import { DASHBOARD_SCRIPT } from '../../lib/web/dashboard-script.js';
import { DashboardPage } from '../../lib/web/dashboard-view.js';
import { renderHtmlError, sendPage } from '../../lib/web/respond.js';

/** Documented in the OpenAPI document; served by the plain handler below. */
export const route = createRoute({
  method: 'get',
  path: '/dashboard',
  tags: ['web'],
  summary: 'The account dashboard: sign up, log in, API keys, usage, and files time-stamped, signed or anchored in the browser (HTML)',
  description:
    'A fixed page whose script uses the public v2 account API with the JWT (kept in sessionStorage, never a cookie) and the evidence API with one of the account\'s keys. ' +
    'Files are hashed in the browser; only the hash is sent. Its CSP admits its one inline script by hash and connections to this origin only.',
  responses: {
    200: { description: 'The page.', content: { 'text/html': { schema: z.string() } } },
    // Like every function: a request body over 64 KiB, even on a GET, is refused unread.
    ...problemResponses(413),
  },
});

// The page's script calls this origin's API: its CSP adds connect-src 'self' to the pages' policy.
const HEADERS = securityHeaders(pageCsp(DASHBOARD_SCRIPT, { connect: true }));

export const app = createApp();
app.openAPIRegistry.registerPath(route);
app.onError(renderHtmlError);

// The same shell for everyone (the account's data comes from the API): cacheable.
app.get('/dashboard', (c) => sendPage(c, jsx(DashboardPage, {}), 200, 'public, max-age=300', HEADERS));

export const handler = handle(app);
