import { handle } from 'hono/aws-lambda';
import { createAnchorApp } from '../../lib/http/routes/evidence-anchor.js';

export const app = createAnchorApp('/api/v2/evidence/full');
export const handler = handle(app);
