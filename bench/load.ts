/**
 * The load generator, in its own process: autocannon (programmatic), one scenario per run.
 * Reads the scenario from BENCH_LOAD_SPEC (JSON, see LoadSpec), runs a warm-up and then the
 * measured run, and prints one JSON line (LoadResult).
 *
 * Scenarios:
 * - static: the same request every time (the bare server, login);
 * - hash:   POST /api/v2/evidence/hash, a new SHA-256 value per request;
 * - anchor: POST /api/v2/evidence/anchor, a new image hash per request. Each connection owns a
 *           device chain of pre-signed bodies (Ed25519 signatures made before the run, so the
 *           load generator does no signing while measuring); a connection whose request failed
 *           continues on a fresh device, so one failure never cascades into chain errors;
 * - verify: GET /api/v2/evidence/verify/{hash}, cycling through hashes anchored before.
 */
import { randomBytes } from 'node:crypto';
import autocannon, { type AutocannonClient, type AutocannonRequest, type AutocannonResult } from 'autocannon';
import { type AnchorBody, BenchDevice } from './lib/device.js';

export interface LoadSpec {
  name: string;
  kind: 'static' | 'hash' | 'anchor' | 'verify';
  url: string;
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  /** Seconds. */
  duration: number;
  /** Seconds of the same load before the measured run (0: none). */
  warmup: number;
  /** verify: the hashes to cycle through. */
  hashes?: string[];
  /** anchor: pre-signed bodies in total (spread over the connections' chains). */
  anchorBodies?: number;
  /** Request timeout, seconds. */
  timeout?: number;
}

export interface LoadResult {
  name: string;
  connections: number;
  durationS: number;
  total: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** All completed responses per second. */
  rps: number;
  /** 2xx responses per second. */
  okPerSec: number;
  latencyMs: { p50: number; p90: number; p99: number; avg: number; max: number };
  statusCodes: Record<string, number>;
  /** CPU time of the load generator during the measured run. */
  loadGenCpuMs: number;
  /** A sample of the non-2xx bodies (first few). */
  failures: string[];
  /** anchor: hashes anchored in the measured run (up to 2000). */
  anchoredHashes?: string[];
  /** anchor: bodies signed on the fly because the pre-signed ones ran out. */
  signedDuringRun?: number;
  /** anchor: the measured run's answers per ledger transaction (tx_hash → anchors that named it). */
  txAnchors?: Record<string, number>;
}

const spec = JSON.parse(process.env.BENCH_LOAD_SPEC ?? '{}') as LoadSpec;
const failures: string[] = [];
const anchored: string[] = [];
const txAnchors: Record<string, number> = {};
const TX_HASH = /"tx_hash"\s*:\s*"(0x[0-9a-f]{64})"/;

// ------------------------------------------------------------------ request builders per kind

const runPrefix = randomBytes(20).toString('hex'); // 40 hex characters, then a 24-digit hex counter
let hashCounter = 0;
const nextHash = () => `${runPrefix}${(hashCounter++).toString(16).padStart(24, '0')}`;

/** Pre-signed device chains, handed to connections one at a time. */
class ChainPool {
  private readonly chains: AnchorBody[][] = [];
  signedDuringRun = 0;
  constructor(connections: number, totalBodies: number) {
    const devices = connections * 3; // spares for connections whose chain broke or ran out
    const perChain = Math.max(8, Math.ceil(totalBodies / connections));
    for (let i = 0; i < devices; i++) this.chains.push(new BenchDevice().chain(perChain));
  }
  take(): AnchorBody[] {
    const chain = this.chains.pop();
    if (chain) return chain;
    const fresh = new BenchDevice().chain(64);
    this.signedDuringRun += fresh.length;
    return fresh;
  }
}

function recordFailure(status: number, body: string): void {
  if (failures.length < 5) failures.push(`${status} ${body.slice(0, 300)}`);
}

function clientSetup(pool: ChainPool | undefined, measuring: { on: boolean }): ((client: AutocannonClient) => void) | undefined {
  const base: AutocannonRequest = { method: spec.method, path: spec.path, headers: { ...(spec.headers ?? {}) } };
  switch (spec.kind) {
    case 'static':
      return (client) =>
        client.setRequests([
          {
            ...base,
            ...(spec.body !== undefined ? { body: spec.body } : {}),
            onResponse: (status, body) => {
              if (status >= 300) recordFailure(status, body);
            },
          },
        ]);
    case 'hash':
      return (client) =>
        client.setRequests([
          {
            ...base,
            setupRequest: (req) => ({ ...req, body: JSON.stringify({ sha256_hash: nextHash() }) }),
            onResponse: (status, body) => {
              if (status >= 300) recordFailure(status, body);
            },
          },
        ]);
    case 'verify': {
      const hashes = spec.hashes ?? [];
      if (hashes.length === 0) throw new Error('verify needs hashes');
      let i = 0; // in order: with as many hashes as requests, each request is a first verification
      return (client) =>
        client.setRequests([
          {
            ...base,
            setupRequest: (req) => ({ ...req, path: `${spec.path}/${hashes[i++ % hashes.length]}` }),
            onResponse: (status, body) => {
              if (status >= 300) recordFailure(status, body);
            },
          },
        ]);
    }
    case 'anchor':
      return (client) => {
        if (!pool) throw new Error('anchor needs a chain pool');
        let chain = pool.take();
        let position = 0;
        let current: AnchorBody | undefined;
        client.setRequests([
          {
            ...base,
            setupRequest: (req) => {
              if (position >= chain.length) {
                chain = pool.take();
                position = 0;
              }
              current = chain[position++];
              return { ...req, body: JSON.stringify(current) };
            },
            onResponse: (status, body) => {
              if (status === 200) {
                if (measuring.on && current && anchored.length < 2000) anchored.push(current.sha256_hash);
                const tx = measuring.on ? TX_HASH.exec(String(body))?.[1] : undefined;
                if (tx) txAnchors[tx] = (txAnchors[tx] ?? 0) + 1;
                return;
              }
              recordFailure(status, body);
              // The device's chain may now have a gap: continue on a fresh device.
              chain = pool.take();
              position = 0;
            },
          },
        ]);
      };
  }
}

async function run(duration: number, measuring: { on: boolean }, pool: ChainPool | undefined): Promise<AutocannonResult> {
  const setupClient = clientSetup(pool, measuring);
  return autocannon({
    url: spec.url,
    connections: spec.connections,
    duration,
    pipelining: 1,
    timeout: spec.timeout ?? 30,
    requests: [{ method: spec.method, path: spec.path, headers: spec.headers ?? {} }],
    ...(setupClient ? { setupClient } : {}),
  });
}

const pool = spec.kind === 'anchor' ? new ChainPool(spec.connections, spec.anchorBodies ?? 3000) : undefined;
if (spec.warmup > 0) {
  // Warm-up chains are not reused: a request cut off at the end of the warm-up may have anchored.
  await run(spec.warmup, { on: false }, spec.kind === 'anchor' ? new ChainPool(spec.connections, 16 * spec.connections) : undefined);
  failures.length = 0;
}
process.stdout.write('MEASURE START\n');
const cpuBefore = process.cpuUsage();
const r = await run(spec.duration, { on: true }, pool);
const cpu = process.cpuUsage(cpuBefore);
process.stdout.write('MEASURE END\n');

const statusCodes: Record<string, number> = {};
for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = s.count;
const total = Object.values(statusCodes).reduce((a, b) => a + b, 0);
const result: LoadResult = {
  name: spec.name,
  connections: spec.connections,
  durationS: r.duration,
  total,
  ok: r['2xx'],
  non2xx: r.non2xx,
  errors: r.errors,
  timeouts: r.timeouts,
  rps: total / r.duration,
  okPerSec: r['2xx'] / r.duration,
  latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, avg: r.latency.average, max: r.latency.max },
  statusCodes,
  failures,
  loadGenCpuMs: (cpu.user + cpu.system) / 1000,
  ...(spec.kind === 'anchor' ? { anchoredHashes: anchored, signedDuringRun: pool?.signedDuringRun ?? 0, txAnchors } : {}),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
