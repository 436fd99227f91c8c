/**
 * DynamoDB requests per operation: `npm start` itself (lib/local/start.ts, default settings:
 * batched anchoring, the reconciler every 5 s) on a dynalite that only this script can see, with
 * the counting proxy of bench/lib/dynamo-count.ts between them. Every figure of issue 25's first
 * table comes from here, reproducibly:
 * - per operation (hash registration at 1 and 10 clients, anchor at 1 client and at 16 clients each
 *   along its own device chain, public verify of a final record): requests, writes, write units
 *   (1 WCU per started KB of the item written), by operation and by table, the client's p50, and
 *   the CPU of the service's processes (the API process and the ledger node) per operation;
 * - background: requests and read units of an idle minute, first on the tables as the operations
 *   left them, then after REQUESTS_GROW finished anchors (copies of a real anchored item) and as
 *   many counters are written into the tables behind the proxy's back: the cost per idle minute
 *   must not grow with them.
 * Writes its JSON result as the last line of stdout (bench/run.ts section `requests`).
 *
 * Environment: REQUESTS_TRACE=1 (print the requests of one hash registration and one anchor), REQUESTS_IDLE_S=60 (length of each idle window), REQUESTS_GROW=10000,
 * REQUESTS_HASH_N=200, REQUESTS_ANCHOR_N=160.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BatchWriteItemCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { startEmbeddedDynamo } from '../lib/local/dynamo-server.js';
import { freePort } from '../lib/local/net.js';
import { cpuMs } from './lib/cpu.js';
import { BenchDevice, type AnchorBody } from './lib/device.js';
import { type Counts, diffCounts, startCountingProxy, summarise } from './lib/dynamo-count.js';
import type { BackgroundRow, RequestRow, RequestsResult } from './lib/report.js';
import { BENCH_TIER_LIMITS } from './lib/stack.js';
import { REPO_ROOT } from './lib/proc.js';
import { createAccount } from './lib/accounts.js';
import { envNumber } from './lib/env.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const idleS = envNumber('REQUESTS_IDLE_S', 60);
const grow = envNumber('REQUESTS_GROW', 10_000);
const hashN = envNumber('REQUESTS_HASH_N', 200);
const anchorN = envNumber('REQUESTS_ANCHOR_N', 160);
const log = (line: string) => process.stderr.write(`requests: ${line}\n`);

// ------------------------------------------------------------------ the stack

const dynamo = await startEmbeddedDynamo();
const tracing = { on: false };
const proxy = await startCountingProxy(dynamo.endpoint, process.env.REQUESTS_TRACE ? (line) => tracing.on && log(`  ${line}`) : undefined);
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'evidence-requests-'));
const port = await freePort();
const adminToken = randomBytes(24).toString('base64url');
const prefix = `bench-${randomBytes(3).toString('hex')}-`;
const env: Record<string, string> = {
  ...(process.env as Record<string, string>),
  DATA_DIR: dataDir,
  PORT: String(port),
  LEDGER_RPC_PORT: String(await freePort()),
  DYNAMODB_ENDPOINT: proxy.endpoint,
  TABLE_PREFIX: prefix,
  ADMIN_TOKEN: adminToken,
  LOG_LEVEL: 'warn',
  PUBLIC_RATE_PER_MINUTE: '100000000',
  ACCOUNT_RATE_PER_MINUTE: '100000000',
  TIER_LIMITS: BENCH_TIER_LIMITS,
};
const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'lib/local/start.ts')], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
process.once('exit', () => child.kill('SIGKILL'));
let chainPid = 0;
await new Promise<void>((resolve, reject) => {
  let out = '';
  const timer = setTimeout(() => reject(new Error(`npm start did not become ready:\n${out}`)), 120_000);
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    const pid = /ledger .*\(hardhat, pid (\d+)/.exec(out);
    if (pid) chainPid = Number(pid[1]);
    if (/^ready in /m.test(out)) {
      clearTimeout(timer);
      resolve();
    }
  });
  child.once('exit', (code) => reject(new Error(`npm start exited (${code}):\n${out}`)));
});
const base = `http://127.0.0.1:${port}`;
const serviceCpu = () => cpuMs(child.pid ?? 0) + (chainPid ? cpuMs(chainPid) : 0);

async function json<T>(res: Response): Promise<T> {
  if (!res.ok) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}
const { apiKey } = await createAccount(base, adminToken, 'enterprise');

// ------------------------------------------------------------------ measuring

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const rows: RequestRow[] = [];

/** Runs `perClient` operations on each of `clients` concurrent clients (each client's in order, `k` = 0, 1, …), and counts. */
async function measure(operation: string, clients: number, perClient: number, op: (client: number, k: number) => Promise<void>, perRequest = 1): Promise<RequestRow> {
  const count = clients * perClient * perRequest;
  const started = performance.now();
  // The reconciler's pass every 5 s runs beside the operations: its requests in the window are
  // charged to them (they are what the operations cost), and the idle rows show its own rate.
  const before = proxy.snapshot();
  const cpu0 = serviceCpu();
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let k = 0; k < perClient; k++) {
        const t0 = performance.now();
        await op(client, k);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const cpu = serviceCpu() - cpu0;
  const s = summarise(diffCounts(before, proxy.snapshot()));
  const each = (r: Record<string, number>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, round(v / count)]));
  const row: RequestRow = {
    operation,
    clients,
    count,
    requestsEach: round(s.requests / count),
    writesEach: round(s.writes / count),
    writeUnitsEach: round(s.writeUnits / count),
    readUnitsEach: round(s.readUnits / count),
    byOperationEach: each(s.byOperation),
    writesByTableEach: each(s.writesByTable),
    writeUnitsByTableEach: each(s.writeUnitsByTable),
    p50Ms: round(p50(latencies)),
    serviceCpuMsEach: round(cpu / count),
    wallMs: Math.round(performance.now() - started),
    ...(perRequest > 1 ? { perRequest } : {}),
  };
  rows.push(row);
  log(`${operation} ×${count} at ${clients}: ${row.requestsEach} requests (${row.writesEach} writes, ${row.writeUnitsEach} WCU) each, p50 ${row.p50Ms} ms, ${row.serviceCpuMsEach} ms CPU, ${row.wallMs} ms in all`);
  return row;
}
const round = (x: number) => Math.round(x * 100) / 100;

const hashOnce = async () => {
  await json(
    await fetch(`${base}/api/v2/evidence/hash`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify({ sha256_hash: randomBytes(32).toString('hex') }),
    }),
  );
};
const anchored: string[] = [];
const anchorOnce = async (body: AnchorBody) => {
  await json(
    await fetch(`${base}/api/v2/evidence/anchor`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify(body),
    }),
  );
  anchored.push(body.sha256_hash);
};

// Warm-up: every module loaded and every path taken once. REQUESTS_TRACE=1 prints every request
// of one more hash registration and one more anchor, in order.
await hashOnce();
await anchorOnce(new BenchDevice().next());
if (process.env.REQUESTS_TRACE) {
  tracing.on = true;
  log('trace: one hash registration');
  await hashOnce();
  log('trace: one anchor');
  await anchorOnce(new BenchDevice().next());
  await new Promise((r) => setTimeout(r, 1000));
  tracing.on = false;
}

await measure('hash registration', 1, hashN, hashOnce);
await measure('hash registration', 10, Math.ceil(hashN / 10), hashOnce);
{
  const bodies = new BenchDevice().chain(Math.ceil(anchorN / 4));
  await measure('anchor', 1, bodies.length, (_c, k) => anchorOnce(bodies[k]!));
}
{
  const per = Math.ceil(anchorN / 16);
  const chains = Array.from({ length: 16 }, () => new BenchDevice().chain(per));
  await measure('anchor', 16, per, (c, k) => anchorOnce(chains[c]![k]!));
}

// A phone's queue (issue 36): 100 photos of one device sent one by one, against 100 more of the
// same device in one POST /api/v2/evidence/anchor/batch (measured twice). Per entry: requests,
// writes, CPU; the rows' wall time is the whole queue's.
{
  const device = new BenchDevice();
  await measure('anchor, a queue of 100 one by one', 1, 100, async () => anchorOnce(device.next()));
  const batches = [device.chain(100), device.chain(100)];
  await measure('anchor batch of 100 (per entry)', 1, batches.length, async (_c, k) => {
    const anchors = batches[k]!;
    const out = await json<{ results: { status: number }[] }>(
      await fetch(`${base}/api/v2/evidence/anchor/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
        body: JSON.stringify({ anchors }),
      }),
    );
    const refused = out.results.filter((r) => r.status !== 200).length;
    if (refused) throw new Error(`batch anchor: ${refused} of ${anchors.length} entries refused`);
    anchored.push(...anchors.map((a) => a.sha256_hash));
  }, 100);
}

// Verify of a final record: wait until the reconciler stored the final receipts.
const last = anchored.at(-1)!;
for (let t0 = Date.now(); ; ) {
  const v = await json<{ ledger_final?: boolean }>(await fetch(`${base}/api/v2/evidence/verify/${last}`));
  if (v.ledger_final === true) break;
  if (Date.now() - t0 > 120_000) throw new Error('no final receipt within 120 s');
  await new Promise((r) => setTimeout(r, 500));
}
const finals = anchored.slice(0, 100);
await measure('verify (final record)', 1, finals.length, async (_c, k) => {
  await json(await fetch(`${base}/api/v2/evidence/verify/${finals[k]!}`));
});

// ------------------------------------------------------------------ background

const background: BackgroundRow[] = [];
async function idle(what: string, items: number): Promise<void> {
  // One pass of the reconciler's schedule first, so that the window starts in its steady state.
  await new Promise((r) => setTimeout(r, 6_000));
  const before: Counts = proxy.snapshot();
  await new Promise((r) => setTimeout(r, idleS * 1000));
  const s = summarise(diffCounts(before, proxy.snapshot()));
  const perMin = (x: number) => round((x * 60) / idleS);
  const row: BackgroundRow = {
    what,
    items,
    seconds: idleS,
    requestsPerMinute: perMin(s.requests),
    readUnitsPerMinute: perMin(s.readUnits),
    byOperationPerMinute: Object.fromEntries(Object.entries(s.byOperation).map(([k, v]) => [k, perMin(v)])),
  };
  background.push(row);
  log(`idle, ${what}: ${row.requestsPerMinute} requests and ${row.readUnitsPerMinute} RCU a minute`);
}

const raw = new DynamoDBClient({ endpoint: dynamo.endpoint, region: 'eu-central-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
await idle('after the operations', anchored.length);

// Grow the tables behind the proxy: copies of a finished anchor (new image hashes, nothing
// unfinished about them) and last month's quota counters of as many accounts, without holds.
const sample = await raw.send(new GetItemCommand({ TableName: `${prefix}evidence`, Key: { image_hash: { S: finals[0]! } }, ConsistentRead: true }));
if (!sample.Item) throw new Error('no anchored item to copy');
for (let done = 0; done < grow; ) {
  const n = Math.min(25, grow - done);
  const requests = Array.from({ length: n }, () => {
    const h = randomBytes(32).toString('hex');
    return { PutRequest: { Item: { ...sample.Item!, image_hash: { S: h } } } };
  });
  const counters = Array.from({ length: n }, () => ({
    PutRequest: { Item: { pk: { S: `quota#${randomBytes(8).toString('hex')}#2026-10` }, count: { N: '7' }, expires_at: { N: String(Math.floor(Date.now() / 1000) + 86_400) } } },
  }));
  await raw.send(new BatchWriteItemCommand({ RequestItems: { [`${prefix}evidence`]: requests } }));
  await raw.send(new BatchWriteItemCommand({ RequestItems: { [`${prefix}counters`]: counters } }));
  done += n;
}
log(`grew the evidence and counters tables by ${grow} items each (copies of the anchored item ${finals[0]!.slice(0, 16)}…)`);
await idle(`${grow} more finished anchors and counters`, anchored.length + grow);

child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
raw.destroy();
await proxy.stop();
await dynamo.stop();
await rm(dataDir, { recursive: true, force: true });
const result: RequestsResult = { rows, background };
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
