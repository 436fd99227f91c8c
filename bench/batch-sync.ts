/**
 * A phone's queue of 100 photos (issue 36's timing goals): the wall time of one
 * POST /api/v2/evidence/anchor/batch of 100 consecutive links of a device, against the same 100
 * sent one by one as `evidence anchor` sends them, on `npm start` with its defaults (batched
 * anchoring, 250 ms window) straight on dynalite (no counting proxy: bench/requests.ts counts the
 * requests; its proxy adds a hop to every call, which would cost the one-by-one queue more).
 * Rounds alternate the two, each on a fresh device, so that a machine's changing load falls on
 * both; the goal is read within one run (machines here differ about 4× in speed).
 *
 * Also the API process's CPU per entry in each, and the machine's load. Writes its JSON result as
 * the last line of stdout.
 *
 * Environment: BATCH_SYNC_ROUNDS=3, BATCH_SYNC_SIZE=100, BATCH_SYNC_PROFILE=<dir> (the API process
 * writes a V8 CPU profile there; bench/profile-summary.ts summarises it), BATCH_SYNC_QUEUE=0 (batches
 * only: a profile of the batch path alone).
 */
import os from 'node:os';
import path from 'node:path';
import { createAccount } from './lib/accounts.js';
import { cpuMs } from './lib/cpu.js';
import { BenchDevice, type AnchorBody } from './lib/device.js';
import { startStack } from './lib/local-service.js';
import { envNumber } from './lib/env.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const rounds = envNumber('BATCH_SYNC_ROUNDS', 3);
const size = envNumber('BATCH_SYNC_SIZE', 100);
const withQueue = process.env.BATCH_SYNC_QUEUE !== '0';
const log = (line: string) => process.stderr.write(`batch-sync: ${line}\n`);
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

const profile: Record<string, string> = process.env.BATCH_SYNC_PROFILE ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${path.resolve(process.env.BATCH_SYNC_PROFILE)}`.trim() } : {};
const stack = await startStack(profile);
try {
  const { apiKey } = await createAccount(stack.base, stack.adminToken, 'enterprise');
  const post = async (p: string, body: unknown): Promise<unknown> => {
    const res = await fetch(`${stack.base}${p}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${p}: ${res.status} ${text.slice(0, 300)}`);
    return JSON.parse(text);
  };
  const batch = async (anchors: AnchorBody[]) => {
    const out = (await post('/api/v2/evidence/anchor/batch', { anchors })) as { results: { status: number }[] };
    const refused = out.results.filter((r) => r.status !== 200).length;
    if (refused) throw new Error(`batch: ${refused} of ${anchors.length} entries refused`);
  };
  const oneByOne = async (anchors: AnchorBody[]) => {
    for (const a of anchors) await post('/api/v2/evidence/anchor', a);
  };
  /** Wall time and the API process's CPU per entry of `run` over a fresh device's `size` links. */
  const timed = async (run: (anchors: AnchorBody[]) => Promise<void>) => {
    const anchors = new BenchDevice().chain(size);
    const cpu0 = cpuMs(stack.apiPid);
    const t0 = performance.now();
    await run(anchors);
    return { ms: performance.now() - t0, cpuMsEach: (cpuMs(stack.apiPid) - cpu0) / size };
  };

  // Warm-up: every module loaded and both paths taken once.
  await timed(async (anchors) => {
    await batch(anchors.slice(0, 10));
    await oneByOne(anchors.slice(10, 12));
  });

  const batches: { ms: number; cpuMsEach: number }[] = [];
  const queues: { ms: number; cpuMsEach: number }[] = [];
  for (let r = 0; r < rounds; r++) {
    const b = await timed(batch);
    batches.push(b);
    log(`round ${r + 1}: a batch of ${size}: ${Math.round(b.ms)} ms (${round(b.cpuMsEach)} ms API CPU each), load ${os.loadavg()[0]?.toFixed(1)}`);
    if (!withQueue) continue;
    const q = await timed(oneByOne);
    queues.push(q);
    log(`round ${r + 1}: ${size} one by one: ${Math.round(q.ms)} ms (${round(q.cpuMsEach)} ms API CPU each), load ${os.loadavg()[0]?.toFixed(1)}`);
  }
  const batchMs = p50(batches.map((b) => b.ms));
  const queueMs = p50(queues.map((q) => q.ms));
  const result = {
    size,
    rounds,
    batchMs: batches.map((b) => Math.round(b.ms)),
    oneByOneMs: queues.map((q) => Math.round(q.ms)),
    batchP50Ms: Math.round(batchMs),
    oneByOneP50Ms: Math.round(queueMs),
    sooner: round(queueMs / batchMs, 1),
    apiCpuMsEach: { batch: round(p50(batches.map((b) => b.cpuMsEach))), oneByOne: round(p50(queues.map((q) => q.cpuMsEach))) },
    machine: { nproc: os.cpus().length, loadavg: os.loadavg().map((l) => round(l)) },
  };
  log(`a batch of ${size}: p50 ${result.batchP50Ms} ms; one by one: p50 ${result.oneByOneP50Ms} ms; ${result.sooner}× sooner`);
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await stack.stop();
}
