import { handle } from 'hono/aws-lambda';
import { createApp } from '../../lib/http/app.js';
import { notImplemented } from '../../lib/http/errors.js';

// GET /api/v1/pq/info: lands with a later issue; until then it answers 501.
export const app = createApp({ publicCors: true });
app.all('*', () => {
  throw notImplemented('GET /api/v1/pq/info is not implemented yet.');
});

export const handler = handle(app);
