/**
 * `npm run bench`: the whole benchmark, reproducing the tables of BENCHMARKS.md.
 *
 * 1. HTTP (bench/load.ts, autocannon in its own process) against
 *    - the bare server (bench/servers/bare.ts): Hono on @hono/node-server, a constant JSON: the ceiling;
 *    - the API (bench/servers/api.ts, its own process: buildLocalApi, the object `npm start` serves)
 *      on the embedded stack (bench/lib/stack.ts: in-memory dynalite in this process, a Hardhat
 *      node, secrets in a temp dir), first with an automining chain, then with LEDGER_BLOCK_TIME_MS
 *      blocks; Pro and Enterprise accounts created through the real register and admin endpoints,
 *      TIER_LIMITS raised so that no limit cuts the run;
 *    - the alternatives that are still alternatives, in API processes of their own started next to
 *      the production one, each run right after the production run it compares with, so that both
 *      see the same machine (others' CPU use on the machine during each run is measured from
 *      /proc/stat and shown next to it): the edge cache of bench/variants.ts in front of warm
 *      verify, and, with LEDGER_BLOCK_TIME_MS blocks, answering anchors without waiting for the
 *      receipt (LEDGER_RECEIPT_TIMEOUT_MS=0, a configuration of the production code).
 * 0. The request path (bench/request-path.ts, first, on a machine still cool): issue 33's goals,
 *    DynamoDB requests per registration and anchor, registration against verify latency, 128
 *    clients batched against direct with every process's CPU per anchor.
 * 2. DynamoDB requests per operation (bench/requests.ts: `npm start` behind a counting proxy).
 * 3. In-process stage costs (bench/stages.ts, its own process and stack).
 * 4. Cold start (bench/cold-start.ts): esbuild bundles and fresh-process imports.
 * Writes bench/results/latest.json and bench/results/latest.md.
 *
 * Environment (all optional):
 *   BENCH_DURATION=6           seconds of each throughput run
 *   BENCH_LATENCY_DURATION=4   seconds of each single-connection run
 *   BENCH_WARMUP=2             seconds of warm-up before each run
 *   BENCH_CONNECTIONS=16       connections of the throughput runs
 *   BENCH_ANCHOR_CONNECTIONS=16
 *   BENCH_BLOCK_TIME_MS=2000   block time of the second chain
 *   BENCH_SECTIONS=request-path,http,variants,blocks,issue18,requests,stages,cold   what to run (request-path: issue 33's
 *                              goals in one run, bench/request-path.ts, its own REQUEST_PATH_* settings; variants: the alternatives
 *                              next to the http and blocks runs: edge-cached verify, no receipt wait;
 *                              issue18: the goals of issue 18 side by side, see below; requests: DynamoDB
 *                              requests, writes and capacity units per operation and per idle minute,
 *                              bench/requests.ts, its own REQUESTS_* settings)
 *   BENCH_DDB_WRU_USD_PER_MILLION=0.625, BENCH_DDB_RRU_USD_PER_MILLION=0.125   requests: the on-demand
 *                              prices (us-east-1 since November 2024) the DynamoDB cost per 1,000 anchors assumes
 *   BENCH_BATCH_WINDOW_MS=250  issue18: LEDGER_BATCH_WINDOW_MS of the batched run (the direct run has 0)
 *   BENCH_GAS_PRICE_GWEI=30    issue18: the Polygon gas price the cost per 1,000 anchors assumes
 *   BENCH_POL_USD=0.25         issue18: the POL price in USD it assumes
 *   BENCH_API_WORKERS=1        API processes per API server (node:cluster on one port, bench/lib/workers.ts):
 *                              the measured alternative of several API workers; `npm start` serves from one
 *   BENCH_ENDPOINTS=hash,anchor,verify,login   which API endpoints the http section measures
 *                              (verify needs anchor: it verifies the hashes anchored there)
 *   BENCH_CPU_PROFILE=<dir>    every API process writes a V8 CPU profile there when it stops
 *                              (summarise with: npx tsx bench/profile-summary.ts <dir>/*.cpuprofile)
 *   BENCH_OUT=bench/results     where latest.json and latest.md are written
 *   BENCH_STAGE_SCALE=0.4      iterations of bench/stages.ts (1 = its full counts)
 *   BENCH_COLD_RUNS=5          fresh-process imports per bundle
 */
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LoadResult, LoadSpec } from './load.js';
import { REPO_ROOT, runWorker, startServer, type Server } from './lib/proc.js';
import { type BenchResults, renderMarkdown, type ColdRow, type HttpRun, type Issue18Row, type RequestPathResult, type RequestsResult, type StagesResult } from './lib/report.js';
import { cpuMs, machineBusyMs, selfCpuMs } from './lib/cpu.js';
import { startBenchStack, stopBenchDynamo, type BenchStack } from './lib/stack.js';
import { createAccount } from './lib/accounts.js';
import { envNumber } from './lib/env.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const settings = {
  duration: envNumber('BENCH_DURATION', 6),
  latencyDuration: envNumber('BENCH_LATENCY_DURATION', 4),
  warmup: Number(process.env.BENCH_WARMUP ?? 2),
  connections: envNumber('BENCH_CONNECTIONS', 16),
  anchorConnections: envNumber('BENCH_ANCHOR_CONNECTIONS', 16),
  blockTimeMs: envNumber('BENCH_BLOCK_TIME_MS', 2000),
  sections: (process.env.BENCH_SECTIONS ?? 'request-path,http,variants,blocks,issue18,requests,stages,cold').split(',').map((s) => s.trim()),
  /** DynamoDB on-demand prices the cost per 1,000 anchors assumes (USD per million request units). */
  ddbWriteUsdPerMillion: envNumber('BENCH_DDB_WRU_USD_PER_MILLION', 0.625),
  ddbReadUsdPerMillion: envNumber('BENCH_DDB_RRU_USD_PER_MILLION', 0.125),
  batchWindowMs: envNumber('BENCH_BATCH_WINDOW_MS', 250),
  gasPriceGwei: envNumber('BENCH_GAS_PRICE_GWEI', 30),
  polUsd: envNumber('BENCH_POL_USD', 0.25),
};
const endpoints = (process.env.BENCH_ENDPOINTS ?? 'hash,anchor,verify,login').split(',').map((e) => e.trim());
const want = (endpoint: 'hash' | 'anchor' | 'verify' | 'login') => endpoints.includes(endpoint);

const started = Date.now();
const say = (line: string) => process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${line}\n`);
const runs: HttpRun[] = [];
const results: BenchResults & { settings: typeof settings } = {
  settings,
  machine: {
    nproc: os.cpus().length,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    loadavgBefore: os.loadavg().map((l) => Number(l.toFixed(2))),
    startedAt: new Date().toISOString(),
  },
  http: runs,
};

// ------------------------------------------------------------------ helpers

/** The stack's processes a run is charged with: the API or bare server, the chain (dynalite runs here). */
const pids: { chain?: number } = {};

async function load(
  spec: Omit<LoadSpec, 'warmup'> & { warmup?: number },
  setup: string,
  endpoint: string,
  server: Server,
): Promise<HttpRun> {
  const full: LoadSpec = { warmup: settings.warmup, ...spec };
  // With BENCH_API_WORKERS the API is a cluster: its workers' CPU is the server's too.
  const serverPids = [server.pid, ...(Array.isArray(server.info.workers) ? (server.info.workers as number[]) : [])];
  const snapshot = () => ({ server: serverPids.reduce((sum, pid) => sum + cpuMs(pid), 0), chain: pids.chain ? cpuMs(pids.chain) : 0, self: selfCpuMs(), machine: machineBusyMs() });
  let before = snapshot();
  let after = before;
  const r = await runWorker<LoadResult>('bench/load.ts', { BENCH_LOAD_SPEC: JSON.stringify(full) }, {
    onLine: (line) => {
      if (line === 'MEASURE START') before = snapshot();
      if (line === 'MEASURE END') after = snapshot();
    },
  });
  const per = (a: number, b: number) => (r.total > 0 ? (b - a) / r.total : NaN);
  const ours = after.server - before.server + after.chain - before.chain + after.self - before.self + r.loadGenCpuMs;
  const ms = r.durationS * 1000;
  const cpu = {
    server: per(before.server, after.server),
    dynalite: pids.chain ? per(before.self, after.self) : 0,
    chain: pids.chain ? per(before.chain, after.chain) : 0,
    loadGen: r.total > 0 ? r.loadGenCpuMs / r.total : NaN,
    utilisation: ours / ms,
    others: Math.max(0, (after.machine - before.machine - ours) / ms),
  };
  const bare = runs.find((b) => b.endpoint === 'bare server' && b.connections === r.connections);
  const run: HttpRun = { ...r, setup, endpoint, cpuMsPerRequest: cpu, loadavg1: Number(os.loadavg()[0]?.toFixed(2)), ...(bare ? { bareRps: bare.okPerSec } : {}) };
  delete run.anchoredHashes;
  delete run.txAnchors;
  runs.push(run);
  say(
    `${endpoint.padEnd(32)} ${setup.padEnd(30)} c=${String(r.connections).padStart(2)} ${r.okPerSec.toFixed(0).padStart(6)} 2xx/s  p50 ${r.latencyMs.p50} ms  p99 ${r.latencyMs.p99} ms  (others: ${cpu.others.toFixed(2)} cores)` +
      `${r.non2xx + r.errors + r.timeouts ? `  non-2xx ${r.non2xx} errors ${r.errors + r.timeouts} ${r.failures[0] ?? ''}` : ''}`,
  );
  return { ...run, ...(r.anchoredHashes ? { anchoredHashes: r.anchoredHashes } : {}), ...(r.txAnchors ? { txAnchors: r.txAnchors } : {}) };
}

interface Api extends Server {
  base: string;
  label: string;
}

/**
 * Starts an API process on `stack` with its own funded wallet (so that its nonces never interleave
 * with another process's). All API processes of a stack share its tables, hence its accounts.
 */
async function startApi(stack: BenchStack, label: string, extraEnv: Record<string, string> = {}): Promise<Api> {
  const wallet = stack.wallets.shift();
  if (!wallet) throw new Error('no spare wallet left on this chain');
  const server = await startServer('bench/servers/api.ts', { ...stack.env, LEDGER_PRIVATE_KEY: wallet, ...extraEnv });
  return { ...server, base: `http://127.0.0.1:${String(server.info.port)}`, label };
}

const anchorSpec = (base: string, key: string, connections: number, duration: number) => ({
  name: 'anchor',
  kind: 'anchor' as const,
  url: base,
  method: 'POST' as const,
  path: '/api/v2/evidence/anchor',
  headers: { 'content-type': 'application/json', 'x-api-key': key },
  connections,
  duration,
  anchorBodies: 600,
});
const hashSpec = (base: string, key: string, connections: number, duration: number) => ({
  name: 'hash',
  kind: 'hash' as const,
  url: base,
  method: 'POST' as const,
  path: '/api/v2/evidence/hash',
  headers: { 'content-type': 'application/json', 'x-api-key': key },
  connections,
  duration,
});
/** Waits until verify of `hash` reports a stored final receipt (at most 60 s). */
async function waitFinal(base: string, hash: string): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const body = (await (await fetch(`${base}/api/v2/evidence/verify/${hash}`)).json()) as { ledger_final?: boolean };
    if (body.ledger_final === true) { say(`final receipts stored ${Date.now() - t0} ms after the last anchor`); return; }
    if (Date.now() - t0 > 60_000) { say('no final receipt within 60 s: verify measured on records that are not final'); return; }
    await new Promise((r) => setTimeout(r, 250));
  }
}

const verifySpec = (base: string, hashes: string[], connections: number, duration: number, warmup?: number) => ({
  name: 'verify',
  kind: 'verify' as const,
  url: base,
  method: 'GET' as const,
  path: '/api/v2/evidence/verify',
  connections,
  duration,
  hashes,
  ...(warmup !== undefined ? { warmup } : {}),
});

// ------------------------------------------------------------------ the run

say(`bench: ${JSON.stringify(settings)}; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
const c = settings.connections;
const lat = settings.latencyDuration;
const dur = settings.duration;
const ac = settings.anchorConnections;
if (settings.sections.includes('request-path')) {
  say('the request path: issue 33\'s goals in one run (bench/request-path.ts: counts, latency, 128 clients batched against direct)');
  results.requestPath = await runWorker<RequestPathResult>('bench/request-path.ts', {}, { echoStderr: true });
}
const wantVariants = settings.sections.includes('variants');

try {
  if (settings.sections.includes('http')) {
    // The ceiling first, alone on the machine.
    const bare = await startServer('bench/servers/bare.ts', {});
    try {
      const url = `http://127.0.0.1:${String(bare.info.port)}`;
      await load({ name: 'bare', kind: 'static', url, method: 'GET', path: '/', connections: 1, duration: lat }, 'constant JSON', 'bare server', bare);
      await load({ name: 'bare', kind: 'static', url, method: 'GET', path: '/', connections: c, duration: dur }, 'constant JSON', 'bare server', bare);
    } finally {
      await bare.stop();
    }

    say('starting the embedded stack (dynalite in memory, Hardhat automine) and the API processes');
    const stack = await startBenchStack({ blockTimeMs: 0 });
    pids.chain = stack.chainPid;
    const apis: Api[] = [];
    try {
      // The production API, and the edge cache in front of another API process (its only use:
      // warm verify, right after the production run of the same hashes).
      const prod = await startApi(stack, 'automine');
      apis.push(prod);
      const cached = wantVariants && want('verify') ? await startApi(stack, 'automine + edge cache', { BENCH_VARIANTS: 'edge-cache' }) : undefined;
      if (cached) apis.push(cached);
      const admin = stack.env.ADMIN_TOKEN ?? '';
      const hashAccount = await createAccount(prod.base, admin, 'enterprise');
      const anchorAccount = await createAccount(prod.base, admin, 'pro');
      if (want('hash')) {
        await load(hashSpec(prod.base, hashAccount.apiKey, 1, lat), prod.label, 'POST /v2/evidence/hash', prod);
        await load(hashSpec(prod.base, hashAccount.apiKey, c, dur), prod.label, 'POST /v2/evidence/hash', prod);
      }
      const anchoredHashes: string[] = [];
      if (want('anchor')) {
        const a1 = await load(anchorSpec(prod.base, anchorAccount.apiKey, 1, lat), prod.label, 'POST /v2/evidence/anchor', prod);
        const a16 = await load(anchorSpec(prod.base, anchorAccount.apiKey, ac, dur), prod.label, 'POST /v2/evidence/anchor', prod);
        anchoredHashes.push(...[a1, a16].flatMap((r) => r.anchoredHashes ?? []));
        if (anchoredHashes.length === 0) throw new Error('no hash was anchored: verify cannot be measured');
      }
      if (want('verify') && anchoredHashes.length > 0) {
        // Cold: each request verifies a hash for the first time (the first half of the anchored
        // hashes for one connection, the second half for many). Warm: 32 hashes over and over, whose
        // proof checks the process has memoised (lib/evidence/verify.ts); the ledger is read every time.
        const half = Math.floor(anchoredHashes.length / 2);
        const cold = (n: number) => `${prod.label}, cold (${n} distinct hashes)`;
        await load(verifySpec(prod.base, anchoredHashes.slice(0, half), 1, lat), cold(half), 'GET /v2/evidence/verify/{hash}', prod);
        await load(verifySpec(prod.base, anchoredHashes.slice(half), c, dur), cold(anchoredHashes.length - half), 'GET /v2/evidence/verify/{hash}', prod);
        const hot = anchoredHashes.slice(0, 32);
        await load(verifySpec(prod.base, hot, c, dur, 3), `${prod.label}, warm (32 hashes, proof checks memoised)`, 'GET /v2/evidence/verify/{hash}', prod);
        if (cached) {
          await load(verifySpec(cached.base, hot, c, dur, 3), `${cached.label} (32 hashes)`, 'GET /v2/evidence/verify/{hash}', cached);
        }
      }
      const login = (conns: number, d: number) => ({
        name: 'login',
        kind: 'static' as const,
        url: prod.base,
        method: 'POST' as const,
        path: '/api/v2/account/login',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: hashAccount.email, password: hashAccount.password }),
        connections: conns,
        duration: d,
      });
      if (want('login')) {
        await load(login(1, lat), prod.label, 'POST /v2/account/login', prod);
        await load(login(c, dur), prod.label, 'POST /v2/account/login', prod);
      }
    } finally {
      await Promise.all(apis.map((a) => a.stop()));
      await stack.stop();
      delete pids.chain;
    }
  }

  if (settings.sections.includes('blocks')) {
    say(`starting a second chain with ${settings.blockTimeMs} ms blocks`);
    const stack = await startBenchStack({ blockTimeMs: settings.blockTimeMs });
    pids.chain = stack.chainPid;
    const setup = `${settings.blockTimeMs / 1000} s blocks`;
    const apis: Api[] = [];
    try {
      const prod = await startApi(stack, setup);
      apis.push(prod);
      // The alternative: answer after the broadcast (the finishing job records the receipt).
      const alt = wantVariants ? await startApi(stack, `${setup}, no receipt wait (LEDGER_RECEIPT_TIMEOUT_MS=0)`, { LEDGER_RECEIPT_TIMEOUT_MS: '0' }) : undefined;
      if (alt) apis.push(alt);
      const account = await createAccount(prod.base, stack.env.ADMIN_TOKEN ?? '', 'pro');
      // Sequential requests meet every block at the same phase: a handful of samples tells it.
      await load(anchorSpec(prod.base, account.apiKey, 1, Math.max(dur, 8)), prod.label, 'POST /v2/evidence/anchor', prod);
      await load(anchorSpec(prod.base, account.apiKey, ac, dur), prod.label, 'POST /v2/evidence/anchor', prod);
      if (alt) await load(anchorSpec(alt.base, account.apiKey, ac, dur), alt.label, 'POST /v2/evidence/anchor', alt);
    } finally {
      await Promise.all(apis.map((a) => a.stop()));
      await stack.stop();
      delete pids.chain;
    }
  }
  if (settings.sections.includes('issue18')) {
    // Issue 18's goals side by side, each mode on a fresh stack: anchors with 16 clients direct
    // (LEDGER_BATCH_WINDOW_MS=0, automine) and batched (the window set by BENCH_BATCH_WINDOW_MS;
    // automine for p50, then BENCH_BLOCK_TIME_MS blocks for p99; a build without batching ignores
    // the variable, and the anchors per transaction then say so), with anchors per transaction counted from the answers' tx_hash and
    // gas per anchor from the receipts; hash registration with 10 clients and public verify with
    // 20 clients (no edge cache) on the direct stack.
    const rows: Issue18Row[] = [];
    results.issue18 = rows;
    const modes = [
      { mode: 'direct', windowMs: 0, blockTimeMs: 0 },
      { mode: 'batched', windowMs: settings.batchWindowMs, blockTimeMs: 0 },
      { mode: 'batched', windowMs: settings.batchWindowMs, blockTimeMs: settings.blockTimeMs },
    ] as const;
    for (const { mode, windowMs, blockTimeMs } of modes) {
      const blocks = blockTimeMs === 0 ? 'automine' : `${blockTimeMs / 1000} s blocks`;
      say(`issue 18: ${mode} anchors (LEDGER_BATCH_WINDOW_MS=${windowMs}, ${blocks})`);
      const stack = await startBenchStack({ blockTimeMs, extraEnv: { LEDGER_BATCH_WINDOW_MS: String(windowMs) } });
      pids.chain = stack.chainPid;
      const setup = `${blocks}, LEDGER_BATCH_WINDOW_MS=${windowMs}`;
      let api: Api | undefined;
      try {
        api = await startApi(stack, setup);
        const account = await createAccount(api.base, stack.env.ADMIN_TOKEN ?? '', 'pro');
        const run = await load(anchorSpec(api.base, account.apiKey, ac, dur), setup, 'POST /v2/evidence/anchor', api);
        const gas = await gasPerAnchor(stack.env.LEDGER_RPC_URL ?? '', run.txAnchors ?? {});
        const txs = Object.keys(run.txAnchors ?? {}).length;
        const anchors = Object.values(run.txAnchors ?? {}).reduce((a, b) => a + b, 0);
        const row: Issue18Row = {
          mode,
          batchWindowMs: windowMs,
          blockTimeMs,
          anchorsPerSec: run.okPerSec,
          anchorP50Ms: run.latencyMs.p50,
          anchorP99Ms: run.latencyMs.p99,
          transactions: txs,
          anchorsPerTx: txs > 0 ? anchors / txs : NaN,
          gasPerAnchor: gas,
          usdPer1000Anchors: (gas * 1000 * settings.gasPriceGwei * 1e-9 * settings.polUsd),
        };
        if (mode === 'direct') {
          const hashAccount = await createAccount(api.base, stack.env.ADMIN_TOKEN ?? '', 'enterprise');
          const hash = await load(hashSpec(api.base, hashAccount.apiKey, 10, dur), setup, 'POST /v2/evidence/hash', api);
          row.hashP50Ms10 = hash.latencyMs.p50;
          const hashes = run.anchoredHashes ?? [];
          if (hashes.length > 0) {
            // As a reader meets them: the reconciler stores each final receipt within one pass; wait
            // for the last hash's, so that the run measures final records (bench/verify-start.ts does the same).
            await waitFinal(api.base, hashes[hashes.length - 1] ?? '');
            const verify = await load(verifySpec(api.base, hashes, 20, dur, 0), `${setup}, ${hashes.length} anchored hashes`, 'GET /v2/evidence/verify/{hash}', api);
            row.verifyPerSec20 = verify.okPerSec;
          }
        }
        rows.push(row);
        say(`issue 18 ${mode}: ${JSON.stringify(row)}`);
      } finally {
        await api?.stop();
        await stack.stop();
        delete pids.chain;
      }
    }
  }
} finally {
  await stopBenchDynamo();
}

/** Gas per anchor from the receipts of the transactions the answers named: Σ gasUsed / Σ anchors (at most 300 transactions). */
async function gasPerAnchor(rpcUrl: string, txAnchors: Record<string, number>): Promise<number> {
  const sample = Object.entries(txAnchors).slice(0, 300);
  if (sample.length === 0 || !rpcUrl) return NaN;
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(sample.map(([hash], id) => ({ jsonrpc: '2.0', id, method: 'eth_getTransactionReceipt', params: [hash] }))),
  });
  const answers = (await res.json()) as { id: number; result?: { gasUsed?: string } | null }[];
  let gas = 0;
  let anchors = 0;
  for (const a of answers) {
    const used = a.result?.gasUsed;
    if (!used) continue;
    gas += Number(BigInt(used));
    anchors += sample[a.id]?.[1] ?? 0;
  }
  return anchors > 0 ? gas / anchors : NaN;
}

if (settings.sections.includes('requests')) {
  say('DynamoDB requests per operation and per idle minute (bench/requests.ts: npm start behind a counting proxy)');
  results.requests = await runWorker<RequestsResult>('bench/requests.ts', {}, { echoStderr: true });
}
if (settings.sections.includes('stages')) {
  say('in-process stage costs (bench/stages.ts)');
  results.stages = await runWorker<StagesResult>('bench/stages.ts', { BENCH_STAGE_SCALE: process.env.BENCH_STAGE_SCALE ?? '0.4' }, { echoStderr: true });
}
if (settings.sections.includes('cold')) {
  say('cold start (bench/cold-start.ts)');
  results.cold = await runWorker<ColdRow[]>('bench/cold-start.ts', {}, { echoStderr: true });
}

results.machine.loadavgAfter = os.loadavg().map((l) => Number(l.toFixed(2)));
results.machine.wallSeconds = Math.round((Date.now() - started) / 1000);

const md = renderMarkdown(results).split('\n');

const outDir = process.env.BENCH_OUT ? path.resolve(process.env.BENCH_OUT) : path.join(REPO_ROOT, 'bench', 'results');
await mkdir(outDir, { recursive: true });
await writeFile(path.join(outDir, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
await writeFile(path.join(outDir, 'latest.md'), `${md.join('\n')}\n`);
say(`done: ${path.relative(REPO_ROOT, outDir) || '.'}/latest.md and latest.json (${String(results.machine.wallSeconds)} s)`);
process.stdout.write(`\n${md.join('\n')}\n`);
process.exit(0);
