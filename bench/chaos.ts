/**
 * `npm run chaos`: the longer crash run. Same harness as test/faults/crash.test.ts
 * (test/support/crash-harness.ts): `npm start` in its own process group, a burst of chained
 * anchors from many devices retrying as phone apps do, SIGKILLs of the whole tree at random
 * (seeded) moments, restarts on the same DATA_DIR, then the five invariants of docs/decisions.md
 * "Faults and retries" read back through the public API and the chain's JSON-RPC.
 *
 * Environment (all optional):
 *   CHAOS_DEVICES=16        devices, each with its own Ed25519 key and chain
 *   CHAOS_PHOTOS=20         photos per device
 *   CHAOS_KILLS=3           SIGKILLs of the process group
 *   CHAOS_STOP_DB=0         times to SIGSTOP the database child for CHAOS_STOP_DB_MS (then SIGCONT)
 *   CHAOS_STOP_DB_MS=6000
 *   CHAOS_KILL_LEDGER=0     times to SIGKILL the ledger node child (hardhat)
 *   CHAOS_BLOCK_TIME_MS=0   LEDGER_BLOCK_TIME_MS of the service (0: automine)
 *   CHAOS_PROBE_ALL=1       send a conflicting photo at every settled index, not only the
 *                           interrupted ones (with CHAOS_KILLS=0: a self-check of the harness)
 *   CHAOS_SCHEDULE=…        continuous mode: faults at fixed times after the burst began, as
 *                           `kind@seconds[:seconds frozen]`, comma-separated; kinds: kill (the
 *                           whole service), kill-ledger, kill-database, stop-database. The devices
 *                           keep anchoring new photos (up to CHAOS_PHOTOS each) until the last fault
 *                           is over and CHAOS_TAIL_S (default 10) has passed. `CHAOS_SCHEDULE=sre`
 *                           is the issue's experiment: 4 ledger-node kills in one minute, then a
 *                           database frozen for 10 s, then a killed database, then the whole service.
 *   CHAOS_BATCH_WINDOW_MS   LEDGER_BATCH_WINDOW_MS of the service (default: the service's own, 250)
 *   CHAOS_WEBHOOKS=1        a webhook receiver subscribed through the run (0: none); the verdict adds
 *                           every anchored photo's event delivered under one webhook-id
 *   CRASH_SEED=<n>          replay a schedule (the seed is printed)
 *   CRASH_KEEP=1            keep DATA_DIR and the service log
 * The two optional faults look for a child process of the service whose command line mentions
 * dynalite / hardhat; when there is none (the database runs inside the service) they say so and
 * are skipped. Exit code 1 when an invariant is broken.
 */
import { type FaultKind, formatReport, killStartedServices, runCrashExperiment, type ScheduledFault } from '../test/support/crash-harness.js';

// The service runs in its own process group: a Ctrl-C here must end it too.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killStartedServices();
    process.exit(130);
  });
}

const int = (name: string, fallback: number) => {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  if (!/^\d+$/.test(v)) throw new Error(`${name} must be a non-negative integer, got "${v}"`);
  return Number(v);
};

/** The issue's experiment (4 ledger-node kills in a minute, a frozen then a killed database, a whole-service kill). */
const SRE = 'kill-ledger@10,kill-ledger@25,kill-ledger@40,kill-ledger@55,stop-database@70:10,kill-database@95,kill@115';

function parseSchedule(text: string): ScheduledFault[] {
  const kinds: FaultKind[] = ['kill', 'kill-ledger', 'kill-database', 'stop-database'];
  return (text === 'sre' ? SRE : text).split(',').map((part) => {
    const m = /^([a-z-]+)@(\d+(?:\.\d+)?)(?::(\d+(?:\.\d+)?))?$/.exec(part.trim());
    if (!m || !kinds.includes(m[1] as FaultKind)) throw new Error(`CHAOS_SCHEDULE: "${part}" is not kind@seconds[:seconds] with kind one of ${kinds.join(', ')}`);
    return { kind: m[1] as FaultKind, atMs: Number(m[2]) * 1000, ...(m[3] ? { durationMs: Number(m[3]) * 1000 } : {}) };
  });
}

const schedule = process.env.CHAOS_SCHEDULE ? parseSchedule(process.env.CHAOS_SCHEDULE) : undefined;
const windowMs = process.env.CHAOS_BATCH_WINDOW_MS;
const stopDbTimes = int('CHAOS_STOP_DB', 0);
const killLedgerTimes = int('CHAOS_KILL_LEDGER', 0);
const report = await runCrashExperiment({
  devices: int('CHAOS_DEVICES', schedule ? 8 : 16),
  photos: int('CHAOS_PHOTOS', schedule ? 100_000 : 20),
  kills: int('CHAOS_KILLS', 3),
  blockTimeMs: int('CHAOS_BLOCK_TIME_MS', 0),
  forkProbe: process.env.CHAOS_PROBE_ALL === '1' ? 'all' : true,
  webhooks: process.env.CHAOS_WEBHOOKS !== '0',
  ...(stopDbTimes > 0 ? { stopDatabase: { times: stopDbTimes, durationMs: int('CHAOS_STOP_DB_MS', 6000) } } : {}),
  ...(killLedgerTimes > 0 ? { killLedger: { times: killLedgerTimes } } : {}),
  ...(schedule ? { schedule, tailMs: int('CHAOS_TAIL_S', 10) * 1000 } : {}),
  ...(windowMs !== undefined ? { env: { LEDGER_BATCH_WINDOW_MS: windowMs } } : {}),
  log: (line) => process.stdout.write(`${line}\n`),
});

process.stdout.write(`\n${formatReport(report)}\n\nfaults:\n`);
for (const f of report.faults) process.stdout.write(`  ${f.kind}${f.kind === 'kill' ? ` ${f.n}` : ''}: ${f.note}\n`);
let broken = 0;
for (const [name, items] of Object.entries(report.violations)) {
  if (items.length === 0) continue;
  broken += 1;
  process.stdout.write(`\n${name} (${items.length}):\n`);
  for (const item of items.slice(0, 30)) process.stdout.write(`  - ${item}\n`);
  if (items.length > 30) process.stdout.write(`  … and ${items.length - 30} more\n`);
}
process.stdout.write(broken === 0 ? '\nevery invariant held\n' : `\n${broken} invariant(s) broken (seed ${report.seed})\n`);
process.exit(broken === 0 ? 0 : 1);
