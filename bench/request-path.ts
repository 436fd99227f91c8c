/**
 * The request path's cost, every goal of issue 33 in one run (`npx tsx bench/request-path.ts`, also
 * the `request-path` section of `npm run bench`). Absolute figures of these machines differ about
 * 4× from one machine to the next, so the goals are counts and ratios measured here, side by side:
 *
 * 1. Counts (`npm start` with its defaults, batched anchors, behind the counting proxy of
 *    bench/lib/dynamo-count.ts): DynamoDB requests per hash registration and per anchor (1 client,
 *    16 clients each on its own device chain), everything the service sends in the window, the
 *    background (reconciler, change feed's derived writes) included; the local change feed's own
 *    reads are counted apart (in AWS they are Lambda's stream poller's, no table request).
 * 2. Latency, 10 clients each: hash registration p50 against the p50 of a public verify of a
 *    registered hash (issue 33's comparator), in the same stack; beside it the p50 of a first
 *    verify of an anchored record (its proofs checked).
 * 3. 128 clients, each on its own device chain with bodies signed as a device signs them, closed
 *    loop for REQUEST_PATH_SECONDS: batched against direct (`LEDGER_BATCH_WINDOW_MS=0`) anchors/s,
 *    p50, p99, errors, and the API process's CPU per anchor; each mode its own fresh `npm start`
 *    straight on dynalite (no proxy: it would cost the direct mode more, having more requests).
 * 4. The proofs' CPU per anchor (ML-DSA-65 signature, the classic and the post-quantum RFC 3161
 *    tokens, the device's Ed25519 signature, the statement), measured in this process with the
 *    service's own keys, beside the API CPU per anchor; a hash registration makes no proof.
 * Writes its JSON result as the last line of stdout.
 *
 * Environment: REQUEST_PATH_SECONDS=20, REQUEST_PATH_CLIENTS=128, REQUEST_PATH_HASH_N=200,
 * REQUEST_PATH_ANCHOR_N=64, REQUEST_PATH_TRACE=1 (print the requests of one registration and one anchor),
 * REQUEST_PATH_PARTS=counts,batched,direct (which parts to run), REQUEST_PATH_PROFILE=<dir> (the API
 * process of each throughput run writes a V8 CPU profile there; bench/profile-summary.ts summarises it).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { cpuMs, machineBusyMs, selfCpuMs } from './lib/cpu.js';
import { BenchDevice, type AnchorBody } from './lib/device.js';
import { type Counts, diffCounts, startCountingProxy, summarise } from './lib/dynamo-count.js';
import { createAccount } from './lib/accounts.js';
import { startStack } from './lib/local-service.js';
import { envNumber } from './lib/env.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const seconds = envNumber('REQUEST_PATH_SECONDS', 20);
const manyClients = envNumber('REQUEST_PATH_CLIENTS', 128);
const hashN = envNumber('REQUEST_PATH_HASH_N', 200);
const anchorN = envNumber('REQUEST_PATH_ANCHOR_N', 64);
const log = (line: string) => process.stderr.write(`request-path: ${line}\n`);
const parts = (process.env.REQUEST_PATH_PARTS ?? 'counts,batched,direct').split(',').map((p) => p.trim());
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number) : NaN;
};

async function json<T>(res: Response): Promise<T> {
  if (!res.ok) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

const post = (base: string, apiKey: string, p: string, body: unknown) =>
  fetch(`${base}${p}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });

/** `clients` concurrent clients, each running `perClient` operations in order; the latencies. */
async function run(clients: number, perClient: number, op: (client: number, k: number) => Promise<void>): Promise<number[]> {
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let k = 0; k < perClient; k++) {
        const t0 = performance.now();
        await op(c, k);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return latencies;
}

// ------------------------------------------------------------------ 1 and 2: counts and latency

interface CountRow {
  operation: string;
  clients: number;
  count: number;
  requestsEach: number;
  writesEach: number;
  byOperationEach: Record<string, number>;
  writesByTableEach: Record<string, number>;
  feedRequestsEach: number;
  p50Ms: number;
  apiCpuMsEach: number;
}
const counts: CountRow[] = [];
const latency = { registrationP50Ms: NaN, verifyP50Ms: NaN, ratio: NaN, verifyAnchoredP50Ms: NaN };
let proofsCpuMsPerAnchor = NaN;
if (parts.includes('counts')) await countsAndLatency();

async function countsAndLatency(): Promise<void> {
const proxies: { stop(): Promise<void> }[] = [];
let counter: Awaited<ReturnType<typeof startCountingProxy>> | undefined;
const tracing = { on: false };
const counted = await startStack({}, async (endpoint) => {
  counter = await startCountingProxy(endpoint, process.env.REQUEST_PATH_TRACE ? (line) => tracing.on && log(`  ${line}`) : undefined);
  proxies.push(counter);
  return counter.endpoint;
});
const proxy = counter as NonNullable<typeof counter>;
const account = await createAccount(counted.base, counted.adminToken, 'enterprise');

async function countOps(operation: string, clients: number, perClient: number, op: (client: number, k: number) => Promise<void>): Promise<number[]> {
  const n = clients * perClient;
  const before: Counts = proxy.snapshot();
  const cpu0 = cpuMs(counted.apiPid);
  const latencies = await run(clients, perClient, op);
  // The settles and the derived data of the window's last operations go out within a second: wait for them.
  await new Promise((r) => setTimeout(r, 1500));
  const cpu = cpuMs(counted.apiPid) - cpu0;
  const s = summarise(diffCounts(before, proxy.snapshot()));
  const each = (r: Record<string, number>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, round(v / n)]));
  const row: CountRow = {
    operation,
    clients,
    count: n,
    requestsEach: round(s.requests / n),
    writesEach: round(s.writes / n),
    byOperationEach: each(s.byOperation),
    writesByTableEach: each(s.writesByTable),
    feedRequestsEach: round(s.feedRequests / n),
    p50Ms: round(pct(latencies, 50)),
    apiCpuMsEach: round(cpu / n),
  };
  counts.push(row);
  log(`${operation} ×${n} at ${clients}: ${row.requestsEach} DynamoDB requests each (${row.writesEach} writes), p50 ${row.p50Ms} ms, API CPU ${row.apiCpuMsEach} ms`);
  return latencies;
}

const registered: string[] = [];
const hashOnce = async () => {
  const hash = randomBytes(32).toString('hex');
  await json(await post(counted.base, account.apiKey, '/api/v2/evidence/hash', { sha256_hash: hash }));
  registered.push(hash);
};
const anchored: string[] = [];
const anchorOnce = async (body: AnchorBody) => {
  await json(await post(counted.base, account.apiKey, '/api/v2/evidence/anchor', body));
  anchored.push(body.sha256_hash);
};

// Warm-up: every module loaded and every path taken once.
for (let i = 0; i < 5; i++) await hashOnce();
for (const b of new BenchDevice().chain(3)) await anchorOnce(b);
if (process.env.REQUEST_PATH_TRACE) {
  tracing.on = true;
  log('trace: one hash registration');
  await hashOnce();
  log('trace: one anchor');
  await anchorOnce(new BenchDevice().next());
  await new Promise((r) => setTimeout(r, 1500));
  tracing.on = false;
}

await countOps('hash registration', 1, hashN, hashOnce);
const registration10 = await countOps('hash registration', 10, Math.ceil(hashN / 10), hashOnce);
{
  const bodies = new BenchDevice().chain(Math.ceil(anchorN / 4));
  tracing.on = process.env.REQUEST_PATH_TRACE === 'anchors';
  await countOps('anchor (batched)', 1, bodies.length, (_c, k) => anchorOnce(bodies[k] as AnchorBody));
  tracing.on = false;
}
{
  const per = Math.ceil(anchorN / 16);
  const chains = Array.from({ length: 16 }, () => new BenchDevice().chain(per));
  await countOps('anchor (batched)', 16, per, (c, k) => anchorOnce(chains[c]?.[k] as AnchorBody));
}
// The comparator: a public verify of a registered hash, each read once (its record, and
// the first registration by any account), 10 clients.
const toVerify = registered.slice(-10 * Math.floor(Math.min(hashN, registered.length) / 10));
const perVerify = Math.floor(toVerify.length / 10);
const verify10 = await countOps('verify of a registered hash', 10, perVerify, async (c, k) => {
  await json(await fetch(`${counted.base}/api/v2/evidence/verify/${toVerify[c * perVerify + k] as string}`));
});
// Beside it, the heavier public read: an anchored record verified for the first time (its proofs
// checked, the ledger's final receipt from the record).
const fresh = anchored.slice(3);
const per = Math.floor(fresh.length / 10);
const verifyAnchored10 = await countOps('verify, first read of an anchored record', 10, per, async (c, k) => {
  await json(await fetch(`${counted.base}/api/v2/evidence/verify/${fresh[c * per + k] as string}`));
});
latency.verifyAnchoredP50Ms = round(pct(verifyAnchored10, 50));
// The same registrations once more, back to back, for the latency ratio (10 clients each).
const regAgain = await run(10, Math.ceil(hashN / 10), hashOnce);
latency.registrationP50Ms = round(pct([...registration10, ...regAgain], 50));
latency.verifyP50Ms = round(pct(verify10, 50));
latency.ratio = round(latency.registrationP50Ms / latency.verifyP50Ms);
log(
  `10 clients: hash registration p50 ${latency.registrationP50Ms} ms against a verify of a registered hash p50 ${latency.verifyP50Ms} ms (${latency.ratio}×); ` +
    `a first verify of an anchored record p50 ${latency.verifyAnchoredP50Ms} ms`,
);

// 4. The proofs' CPU per anchor, with the service's own keys (this stack's DATA_DIR).
process.env.DATA_DIR = counted.dataDir;
const { resetCoreDeps } = await import('../lib/deps/core.js');
resetCoreDeps();
const { getSigner, getTsa, getPqTsa } = await import('../lib/deps/anchoring.js');
const { checkDeviceProof } = await import('../lib/evidence/device-proof.js');
const { buildStatement, computeServerHash } = await import('../lib/evidence/statement.js');
const [signer, tsa, pqTsa] = await Promise.all([getSigner(), getTsa(), getPqTsa()]);
const proofBodies = new BenchDevice().chain(200);
const t0 = process.cpuUsage();
for (const b of proofBodies) {
  checkDeviceProof({ imageHash: b.sha256_hash, chainIndex: b.chain_index, chainHash: b.chain_hash, previousHash: b.previous_hash, signatureHex: b.signature_hex, publicKeyHex: b.public_key_hex });
  const statement = buildStatement({ image_hash: b.sha256_hash, chain_index: b.chain_index, chain_hash: b.chain_hash, previous_hash: b.previous_hash, device_public_key: b.public_key_hex, device_signature: b.signature_hex, anchored_at: new Date().toISOString() });
  const hash = Buffer.from(computeServerHash(statement), 'hex');
  await Promise.all([signer.sign(hash), tsa.timestamp(Buffer.from(b.sha256_hash, 'hex')), pqTsa?.timestamp(Buffer.from(b.sha256_hash, 'hex'))]);
}
const used = process.cpuUsage(t0);
proofsCpuMsPerAnchor = round((used.user + used.system) / 1000 / proofBodies.length);
log(`the proofs of one anchor (device signature, statement, ML-DSA-65, classic and post-quantum tokens): ${proofsCpuMsPerAnchor} ms CPU`);

await counted.stop();
for (const p of proxies) await p.stop();

}

// ------------------------------------------------------------------ 3. many clients: batched against direct

interface ThroughputRow {
  mode: 'batched' | 'direct';
  clients: number;
  seconds: number;
  anchors: number;
  anchorsPerSecond: number;
  errors: number;
  errorSample: string[];
  p50Ms: number;
  p99Ms: number;
  apiCpuMsPerAnchor: number;
  /** The Hardhat node's CPU per anchor. */
  ledgerCpuMsPerAnchor: number;
  /** This process's CPU per anchor: dynalite and the 128 clients (their device signatures). */
  dynaliteAndClientsCpuMsPerAnchor: number;
  /** The machine's busy CPU per anchor, every process on it (other load included). */
  machineCpuMsPerAnchor: number;
}

async function throughput(mode: 'batched' | 'direct'): Promise<ThroughputRow> {
  const profile: Record<string, string> = process.env.REQUEST_PATH_PROFILE ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${path.resolve(process.env.REQUEST_PATH_PROFILE, mode)}`.trim() } : {};
  const stack = await startStack({ ...(mode === 'direct' ? { LEDGER_BATCH_WINDOW_MS: '0' } : ({} as Record<string, string>)), ...profile });
  try {
    const acct = await createAccount(stack.base, stack.adminToken, 'enterprise');
    const devices = Array.from({ length: manyClients }, () => new BenchDevice());
    const once = async (d: BenchDevice) => {
      const res = await post(stack.base, acct.apiKey, '/api/v2/evidence/anchor', d.next());
      const text = await res.text();
      return res.ok ? null : `${res.status} ${text.slice(0, 120)}`;
    };
    // Warm-up: every client's first anchor (its device chain's genesis), not measured.
    await Promise.all(devices.map((d) => once(d)));
    const latencies: number[] = [];
    const errors: string[] = [];
    const cpu0 = cpuMs(stack.apiPid);
    const ledger0 = cpuMs(stack.ledgerPid);
    const self0 = selfCpuMs();
    const machine0 = machineBusyMs();
    const start = performance.now();
    const end = start + seconds * 1000;
    await Promise.all(
      devices.map(async (d) => {
        while (performance.now() < end) {
          const t = performance.now();
          const error = await once(d);
          if (error) errors.push(error);
          else latencies.push(performance.now() - t);
        }
      }),
    );
    const elapsed = (performance.now() - start) / 1000;
    const cpu = cpuMs(stack.apiPid) - cpu0;
    const ledgerCpu = cpuMs(stack.ledgerPid) - ledger0;
    const selfCpu = selfCpuMs() - self0;
    const machineCpu = machineBusyMs() - machine0;
    const n = Math.max(1, latencies.length);
    const row: ThroughputRow = {
      mode,
      clients: manyClients,
      seconds: round(elapsed, 1),
      anchors: latencies.length,
      anchorsPerSecond: round(latencies.length / elapsed, 1),
      errors: errors.length,
      errorSample: [...new Set(errors)].slice(0, 3),
      p50Ms: round(pct(latencies, 50), 0),
      p99Ms: round(pct(latencies, 99), 0),
      apiCpuMsPerAnchor: round(cpu / n),
      ledgerCpuMsPerAnchor: round(ledgerCpu / n),
      dynaliteAndClientsCpuMsPerAnchor: round(selfCpu / n),
      machineCpuMsPerAnchor: round(machineCpu / n),
    };
    log(
      `${mode}, ${manyClients} clients: ${row.anchorsPerSecond} anchors/s, p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms, ${row.errors} errors; CPU per anchor: ` +
        `API ${row.apiCpuMsPerAnchor} ms, Hardhat ${row.ledgerCpuMsPerAnchor} ms, dynalite and clients ${row.dynaliteAndClientsCpuMsPerAnchor} ms, machine ${row.machineCpuMsPerAnchor} ms`,
    );
    return row;
  } finally {
    await stack.stop();
  }
}

const batched = parts.includes('batched') ? await throughput('batched') : undefined;
const direct = parts.includes('direct') ? await throughput('direct') : undefined;
const ratio = batched && direct ? round(batched.anchorsPerSecond / direct.anchorsPerSecond) : NaN;
if (batched && direct) log(`${manyClients} clients: batched ${batched.anchorsPerSecond}/s against direct ${direct.anchorsPerSecond}/s: ${ratio}×`);

const result = { counts, latency, throughput: { batched, direct, ratio }, proofsCpuMsPerAnchor, machine: { nproc: os.cpus().length, loadavg: os.loadavg().map((l) => round(l)) } };
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
