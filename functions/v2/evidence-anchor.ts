import { handle } from 'hono/aws-lambda';
import { getAnchorDeps } from '../../lib/deps/anchoring.js';
import { getConfig } from '../../lib/deps/core.js';
import { createApp } from '../../lib/http/app.js';
import { anchorHandler, anchorRoute } from '../../lib/http/routes/evidence-anchor.js';

export const route = anchorRoute('/api/v2/evidence/anchor');

export const app = createApp({ deps: { anchorDeps: getAnchorDeps, config: getConfig } });

app.openapi(route, anchorHandler);

export const handler = handle(app);
