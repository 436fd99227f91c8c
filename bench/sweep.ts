/**
 * `npm run sweep`: the crash-point sweep (FoundationDB's simulation, TigerBeetle's VOPR, applied to
 * the anchor path). The fault hook (lib/local/fault-hook.ts) sits at the two ports the state
 * machines write through, DynamoDB and the ledger; with it, `npm start` SIGKILLs itself at the k-th
 * call of an armed request, before the call leaves or after its answer arrived. For every k of
 * each path, the service is killed there, restarted, the phone retries the identical request, the
 * reconciler runs, and then every invariant of decisions.md "Faults and retries" is checked
 * (test/support/crash-harness.ts): every 200 verifies (a registration: is registered), nothing in
 * limbo, each hash and each Merkle root on the ledger at most once, no fork, exact charging, and
 * exact statistics once the change feed converged. The paths:
 *   direct    an anchor, one transaction each (LEDGER_BATCH_WINDOW_MS=0)
 *   batched   an anchor in a batch (250 ms window, sealing included)
 *   register  a hash registration (the account meter's charge, the registration's write)
 *   feed      the change feed's applying of an anchor's changes (statistics, the link's anchored
 *             mark), direct; feed-batched the same in batch mode. The photo is anchored unarmed;
 *             the feed's k-th call kills the service.
 *   batch-request  POST /api/v2/evidence/anchor/batch of 4 consecutive photos of one device, batch
 *             mode (every entry's charge, link, proofs, publish, the leaves' BatchWriteItem, the
 *             seal, the finish); after the restart the identical batch is sent again.
 *
 * Every path runs with a webhook receiver subscribed (CrashRunOptions.webhooks): the feed's outbox
 * writes (lib/webhooks/outbox.ts) are on the feed paths' calls, and the verdict adds that every
 * anchored photo's event was delivered, each fact under one webhook-id, one delivery per event.
 *
 * First the path's length is measured (three armed requests that are not killed report how many
 * calls they made); then the points are 1…max+2 calls × {before, after}.
 *
 * Environment (all optional):
 *   SWEEP_MODE=all          direct | batched | register | feed | feed-batched | batch-request, several with commas;
 *                           both = direct,batched; all = every path
 *   SWEEP_WHEN=both         before | after | both
 *   SWEEP_FROM=1 SWEEP_TO=  a part of the path only (k from … to)
 *   CRASH_KEEP=1            keep each run's DATA_DIR and service log
 * Exit code 1 when an invariant is broken at any point; the report lists each point's call.
 */
import { type CrashPoint, type CrashReport, formatReport, killStartedServices, runCrashExperiment } from '../test/support/crash-harness.js';

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killStartedServices();
    process.exit(130);
  });
}

const say = (line: string) => process.stdout.write(`${line}\n`);
const env = (name: string, fallback: string) => process.env[name] || fallback;
const ALL = ['direct', 'batched', 'register', 'feed', 'feed-batched', 'batch-request'];
const modeSetting = env('SWEEP_MODE', 'all');
const modes = modeSetting === 'all' ? ALL : modeSetting === 'both' ? ['direct', 'batched'] : modeSetting.split(',').map((m) => m.trim());
for (const m of modes) if (!ALL.includes(m)) throw new Error(`SWEEP_MODE: unknown path ${m} (${ALL.join(', ')})`);
const whens: CrashPoint['when'][] = env('SWEEP_WHEN', 'both') === 'both' ? ['before', 'after'] : [env('SWEEP_WHEN', 'before') as CrashPoint['when']];

/** LEDGER_BATCH_WINDOW_MS of each mode (250: the default of npm start). */
const WINDOW: Record<string, string> = { direct: '0', batched: '250', register: '0', feed: '0', 'feed-batched': '250', 'batch-request': '250' };
const OPERATION: Record<string, 'anchor' | 'register' | 'feed' | 'batch'> = { direct: 'anchor', batched: 'anchor', register: 'register', feed: 'feed', 'feed-batched': 'feed', 'batch-request': 'batch' };

let broken = 0;
const summary: string[] = [];
for (const mode of modes) {
  const windowEnv = { LEDGER_BATCH_WINDOW_MS: WINDOW[mode] ?? '250' };
  const operation = OPERATION[mode] ?? 'anchor';
  say(`\n== ${mode}: measuring the ${operation} path`);
  const measured = await runCrashExperiment({
    devices: 1,
    photos: 10,
    kills: 0,
    env: windowEnv,
    operation,
    crashPoints: [1, 2, 3].map(() => ({ killAt: 1_000_000, when: 'before' as const })),
    forkProbe: false,
    webhooks: true,
    log: say,
  });
  const lengths = measured.crashPoints.map((p) => p.calls ?? 0);
  const longest = Math.max(...lengths.slice(1)); // the first photo of a device starts a chain: a shorter path
  say(`${mode}: the armed ${operation === 'feed' ? 'change feed batches' : 'requests'} made ${lengths.join(', ')} calls to DynamoDB and the ledger`);
  const from = Number(env('SWEEP_FROM', '1'));
  const to = Number(env('SWEEP_TO', String(longest + 2)));
  const points: CrashPoint[] = [];
  for (let k = from; k <= to; k++) for (const when of whens) points.push({ killAt: k, when });
  say(`${mode}: ${points.length} crash points (calls ${from}…${to} × ${whens.join(', ')})`);
  const report: CrashReport = await runCrashExperiment({
    devices: 1,
    photos: points.length + 10,
    kills: 0,
    env: windowEnv,
    operation,
    crashPoints: points,
    webhooks: true,
    log: say,
  });
  say(formatReport(report));
  const reached = report.crashPoints.filter((p) => p.reached);
  for (const p of report.crashPoints) say(`  call ${String(p.killAt).padStart(3)} ${p.when.padEnd(6)} ${p.reached ? `killed at ${p.call ?? '?'}` : `not reached (${p.calls ?? '?'} calls)`}`);
  const violations = Object.values(report.violations).reduce((n, list) => n + list.length, 0);
  for (const [name, items] of Object.entries(report.violations)) for (const item of items) say(`  ${name}: ${item}`);
  broken += violations;
  summary.push(`${mode}: path of ${longest} calls; ${points.length} crash points, ${reached.length} reached (killed there); ${violations} invariant violations`);
}
say(`\n${summary.join('\n')}`);
say(broken === 0 ? 'every invariant held at every crash point' : `${broken} violation(s)`);
process.exit(broken === 0 ? 0 : 1);
