import { handle } from 'hono/aws-lambda';
import { createApp } from '../../lib/http/app.js';
import { notImplemented } from '../../lib/http/errors.js';

// POST /api/v2/evidence/full: lands with a later issue; until then it answers 501.
export const app = createApp({ publicCors: false });
app.all('*', () => {
  throw notImplemented('POST /api/v2/evidence/full is not implemented yet.');
});

export const handler = handle(app);
