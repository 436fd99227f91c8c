/**
 * The API under test, in its own process: the same object `npm start` serves (buildLocalApi: one
 * route per function of infra/functions.json, each forwarding to that function's own Hono app)
 * on @hono/node-server, 127.0.0.1, a free port. The environment (bench/lib/stack.ts) points it at
 * the benchmark's dynalite and Hardhat node.
 *
 * BENCH_VARIANTS (comma-separated, bench/variants.ts) puts a measured alternative around the API
 * (today only `edge-cache`); empty = the production code as it is.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { serve } from '@hono/node-server';
import { freePort } from '../../lib/local/net.js';
import { buildLocalApi } from '../../lib/local/server.js';
import { getReconcileDeps } from '../../lib/deps/anchoring.js';
import { reconcileAnchors } from '../../lib/evidence/reconcile.js';
import { startApiWorkers } from '../lib/workers.js';
import { applyVariants, edgeCache } from '../variants.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

// BENCH_API_WORKERS > 1: the measured alternative of several API processes (node:cluster workers
// on one port, bench/lib/workers.ts), each worker with its own ledger sender on the shared wallet.
const apiWorkers = Number(process.env.BENCH_API_WORKERS ?? '1');
if (apiWorkers > 1) {
  const port = await freePort();
  const workers = await startApiWorkers({ count: apiWorkers, port, host: '127.0.0.1' });
  process.stdout.write(`READY ${JSON.stringify({ port, pid: process.pid, workers: workers.pids(), variants: [] })}\n`);
  process.once('SIGTERM', () => void workers.stop().then(() => process.exit(0)));
  await new Promise(() => undefined);
}
const variants = applyVariants((process.env.BENCH_VARIANTS ?? '').split(',').filter(Boolean));
const api = await buildLocalApi();
// As `npm start` does (lib/local/stack.ts): the reconciler's pass every RECONCILE_INTERVAL_MS,
// which among other things stores final receipts, so that verify of a final record reads no chain.
let reconciling = false;
const reconcileTimer = setInterval(() => {
  if (reconciling) return;
  reconciling = true;
  void getReconcileDeps()
    .then(({ rebroadcast: _r, ...deps }) => reconcileAnchors(deps))
    .catch(() => undefined)
    .finally(() => (reconciling = false));
}, Number(process.env.RECONCILE_INTERVAL_MS ?? 5000));
reconcileTimer.unref();
const inner = variants.includes('edge-cache') ? edgeCache((request) => api.fetch(request)) : (request: Request) => api.fetch(request);
// Requests still running when the load generator stops (an anchor between its nonce and its
// broadcast) are finished before the process exits.
let inFlight = 0;
const fetch = async (request: Request) => {
  inFlight++;
  try {
    return await inner(request);
  } finally {
    inFlight--;
  }
};
const server = serve({ fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(`READY ${JSON.stringify({ port: info.port, pid: process.pid, variants })}\n`);
});
const profileDir = process.env.BENCH_CPU_PROFILE;
const profiler = profileDir ? new Session() : undefined;
if (profiler) {
  profiler.connect();
  await profiler.post('Profiler.enable');
  await profiler.post('Profiler.start');
}

process.once('SIGTERM', () => {
  server.close();
  const flushed =
    profiler && profileDir
      ? profiler.post('Profiler.stop').then(({ profile }) => writeFileSync(path.join(profileDir, `api-${variants.join('+') || 'production'}-${process.pid}.cpuprofile`), JSON.stringify(profile)))
      : Promise.resolve();
  const deadline = Date.now() + 15_000;
  const timer = setInterval(() => {
    if (inFlight === 0 || Date.now() > deadline) {
      clearInterval(timer);
      void flushed.finally(() => process.exit(0));
    }
  }, 20);
});
