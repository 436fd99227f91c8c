/**
 * Public verify through a running `npm start`, as a user meets it: N distinct anchored hashes,
 * then GET /api/v2/evidence/verify/{hash} with C connections (bench/load.ts, autocannon in its
 * own process), and the CPU the `npm start` tree (the API process, dynalite, the Hardhat node)
 * spent per request, from /proc.
 *
 *   ADMIN_TOKEN=t PORT=5200 DYNAMODB_PORT=5201 LEDGER_RPC_PORT=5202 DATA_DIR=/tmp/d npm start &
 *   BASE=http://127.0.0.1:5200 ADMIN_TOKEN=t npx tsx bench/verify-start.ts
 *
 * Environment: BASE, ADMIN_TOKEN (to raise the account to Pro), VERIFY_HASHES (distinct hashes
 * anchored first, default 400), VERIFY_CONNECTIONS (20), VERIFY_DURATION (10 s), VERIFY_WARMUP
 * (2 s), VERIFY_PATH (default /api/v2/evidence/verify; append a query with VERIFY_QUERY).
 *
 * "Uncached" means no HTTP cache in front and a new hash on almost every request (the hashes
 * are cycled in order, so with 400 hashes a hash repeats every 400 requests): what the process
 * itself keeps (the memoised proof checks, the bounded cache of final records) is part of the
 * service and is counted as such; the first pass over the hashes (the warm-up) fills it.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { LoadResult, LoadSpec } from './load.js';
import { BenchDevice } from './lib/device.js';
import { cpuMs } from './lib/cpu.js';
import { runWorker } from './lib/proc.js';

const base = process.env.BASE ?? 'http://127.0.0.1:3000';
const admin = process.env.ADMIN_TOKEN ?? '';
const hashesWanted = Number(process.env.VERIFY_HASHES ?? 400);
const connections = Number(process.env.VERIFY_CONNECTIONS ?? 20);
const duration = Number(process.env.VERIFY_DURATION ?? 10);
const warmup = Number(process.env.VERIFY_WARMUP ?? 2);
const verifyPath = process.env.VERIFY_PATH ?? '/api/v2/evidence/verify';

async function json(method: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
}

/** The pids of the process listening on the API port and its descendants (npm start's tree). */
function stackPids(): number[] {
  const port = Number(new URL(base).port);
  const out = execFileSync('ss', ['-ltnpH', `sport = :${port}`]).toString();
  const root = Number(/pid=(\d+)/.exec(out)?.[1]);
  if (!Number.isFinite(root)) throw new Error(`nothing listens on ${base}`);
  const children = new Map<number, number[]>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch {
      // gone meanwhile
    }
  }
  const all: number[] = [];
  const walk = (p: number) => {
    all.push(p);
    for (const c of children.get(p) ?? []) walk(c);
  };
  walk(root);
  return all;
}

const email = `bench-${Date.now()}@example.com`;
const reg = await json('POST', '/api/v2/account/register', { email, password: 'a long enough password' });
if (reg.status !== 200) throw new Error(`register: ${reg.status} ${JSON.stringify(reg.body)}`);
const tier = await json('PUT', `/api/v2/admin/accounts/${String(reg.body.account_id)}/tier`, { tier: 'enterprise' }, { authorization: `Bearer ${admin}` });
if (tier.status !== 200) throw new Error(`set tier (is ADMIN_TOKEN set on npm start and here?): ${tier.status}`);
const apiKey = String(reg.body.api_key);

process.stdout.write(`anchoring ${hashesWanted} hashes … `);
const hashes: string[] = [];
const devices = Array.from({ length: 8 }, () => new BenchDevice());
await Promise.all(
  devices.map(async (d, i) => {
    for (let n = i; n < hashesWanted; n += devices.length) {
      const body = d.next();
      const r = await json('POST', '/api/v2/evidence/anchor', body, { 'x-api-key': apiKey });
      if (r.status !== 200) throw new Error(`anchor: ${r.status} ${JSON.stringify(r.body)}`);
      hashes.push(body.sha256_hash);
    }
  }),
);
process.stdout.write('done\n');

// The reconciler stores each final receipt within one pass (RECONCILE_INTERVAL_MS, 5 s): wait for
// the last hash anchored to be final, so that the run measures final records (a service that has
// been up for a while), and say how long it took. VERIFY_WAIT_FINAL=0 measures right away.
if (process.env.VERIFY_WAIT_FINAL !== '0') {
  const t0 = Date.now();
  const last = hashes.at(-1) ?? '';
  for (;;) {
    const r = await json('GET', `/api/v2/evidence/verify/${last}?recheck=1`, undefined);
    if (r.body.ledger_final === undefined) {
      process.stdout.write('(this service stores no final receipts)\n');
      break;
    }
    const stored = await json('GET', `/api/v1/ledger/verify/${last}`, undefined);
    if (stored.status === 200 && (await json('GET', `/api/v2/evidence/verify/${last}`, undefined)).body.ledger_final === true) break;
    if (Date.now() - t0 > 60_000) throw new Error('no final receipt within 60 s');
    await new Promise((r) => setTimeout(r, 250));
  }
  process.stdout.write(`final receipts stored ${Date.now() - t0} ms after the last anchor\n`);
}

const pids = stackPids();
const name = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => /hardhat|dynalite|start\.ts|worker/.test(a)).map((a) => a.split('/').pop()).join(' ') || String(pid);
  } catch {
    return String(pid);
  }
};
const perPid = () => new Map(pids.map((p) => [p, Number.isFinite(cpuMs(p)) ? cpuMs(p) : 0]));
const cpuOf = () => [...perPid().values()].reduce((a, b) => a + b, 0);
let pidsAtStart = perPid();
let pidsAtEnd = perPid();
const spec: LoadSpec = {
  name: 'verify',
  kind: 'verify',
  url: base,
  method: 'GET',
  path: verifyPath,
  connections,
  duration,
  warmup,
  hashes,
};
let cpuAtStart = 0;
let cpuAtEnd = 0;
const result = await runWorker<LoadResult>('bench/load.ts', { BENCH_LOAD_SPEC: JSON.stringify(spec) }, {
  onLine: (line) => {
    if (line === 'MEASURE START') {
      cpuAtStart = cpuOf();
      pidsAtStart = perPid();
    }
    if (line === 'MEASURE END') {
      cpuAtEnd = cpuOf();
      pidsAtEnd = perPid();
    }
  },
});
const stackCpu = cpuAtEnd - cpuAtStart;
const summary = {
  connections,
  durationS: result.durationS,
  hashes: hashes.length,
  ok: result.ok,
  non2xx: result.non2xx,
  errors: result.errors,
  okPerSec: Math.round(result.okPerSec),
  latencyMs: result.latencyMs,
  statusCodes: result.statusCodes,
  stackCpuMsPerRequest: Number((stackCpu / Math.max(1, result.total)).toFixed(3)),
  cpuMsPerRequestByProcess: Object.fromEntries(
    pids.map((p) => [`${p} ${name(p)}`, Number((((pidsAtEnd.get(p) ?? 0) - (pidsAtStart.get(p) ?? 0)) / Math.max(1, result.total)).toFixed(3))]),
  ),
  loadGenCpuMsPerRequest: Number((result.loadGenCpuMs / Math.max(1, result.total)).toFixed(3)),
  failures: result.failures.slice(0, 3),
};
process.stdout.write(`${JSON.stringify(summary, null, 1)}\n`);
