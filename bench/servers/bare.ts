/**
 * The ceiling: a bare Hono app on @hono/node-server answering a constant JSON document, the same
 * HTTP stack as the API server (bench/servers/api.ts) without any of the service's work.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const app = new Hono();
const body = { status: 'ok', service: 'bare', verified: true };
app.all('*', (c) => c.json(body));

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(`READY ${JSON.stringify({ port: info.port, pid: process.pid })}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
