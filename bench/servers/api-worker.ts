/**
 * One API worker of the measured cluster alternative (bench/lib/workers.ts forks them with
 * node:cluster): the same API object as `npm start` serves (buildLocalApi), on the shared port.
 * It runs no part of the stack and no job. The primary may tell it which part is restarting, so
 * that its health answers `restarting` as the primary's would.
 */
import { serve } from '@hono/node-server';
import { setKnownPartState, type DownReason } from '../../lib/health.js';
import { buildLocalApi } from '../../lib/local/server.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const port = Number(process.env.API_WORKER_PORT);
const hostname = process.env.API_WORKER_HOST ?? '127.0.0.1';

process.on('message', (message: { type?: string; part?: string; reason?: DownReason | null }) => {
  if (message?.type === 'part-state' && message.part) setKnownPartState(message.part, message.reason ?? undefined);
});

const api = await buildLocalApi();
const server = serve({ fetch: api.fetch, port, hostname }, () => process.send?.({ type: 'listening' }));
// Requests in flight finish before the worker exits (an anchor between its nonce and its broadcast).
process.once('SIGTERM', () => server.close(() => process.exit(0)));
process.on('disconnect', () => server.close(() => process.exit(0)));
