/**
 * A sample of the crash-point sweep (`npm run sweep` runs every point): the service SIGKILLs itself
 * at the k-th DynamoDB or ledger call of an anchor request (lib/local/fault-hook.ts), before the
 * call leaves or after its answer arrived, at points spread over the whole path, in direct and in
 * batch mode (sealing included); the phone's identical retry after the restart, and the
 * reconciler, must leave every invariant of decisions.md "Faults and retries" intact. Then the
 * same on the two paths issue 33 added: a hash registration (the meter's charge, the
 * registration's write) and the change feed's applying of an anchor's changes (the statistics
 * must come out exact).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CrashPoint, formatReport, runCrashExperiment } from '../support/crash-harness.js';

const say = (line: string) => process.stderr.write(`${line}\n`);

/** Six points spread over a path of `length` calls, alternating before and after. */
function spread(length: number): CrashPoint[] {
  return [1, 2, 3, 4, 5, 6].map((i) => ({ killAt: Math.max(1, Math.round((i * length) / 6)), when: i % 2 ? 'before' : 'after' }));
}

for (const [mode, window] of [
  ['direct', '0'],
  ['batch', '250'],
] as const) {
  describe(`crash points along the ${mode} anchor path`, () => {
    it('holds every invariant when the service is killed at calls spread over the path, before and after the call', { timeout: 300_000 }, async () => {
      const env = { LEDGER_BATCH_WINDOW_MS: window };
      const measured = await runCrashExperiment({ devices: 1, photos: 5, kills: 0, env, forkProbe: false, crashPoints: [1, 2, 3].map(() => ({ killAt: 1e6, when: 'before' as const })), log: say });
      // The path's length varies (a key read, a link read, the final receipt's reads when the
      // receipt came in time, and in batch mode the polls of a seal another waiter is sealing:
      // measured 15 to 21 calls for one path): the sample spreads its points over the first three
      // quarters of the shortest seen, so that each is reached; `npm run sweep` covers every call.
      const length = Math.min(...measured.crashPoints.map((p) => p.calls ?? 0));
      assert.ok(length >= 10, `the anchor path made ${length} calls`);
      const points = spread(Math.floor(length * 0.75));
      const report = await runCrashExperiment({ devices: 1, photos: 20, kills: 0, env, crashPoints: points, log: say });
      say(formatReport(report));
      for (const p of report.crashPoints) say(`  call ${p.killAt} ${p.when}: ${p.reached ? `killed at ${p.call ?? '?'}` : `not reached (${p.calls} calls)`}`);
      assert.ok(report.crashPoints.filter((p) => p.reached).length >= 5, 'the service was killed at (almost) every sampled point');
      for (const [name, items] of Object.entries(report.violations)) assert.deepEqual(items, [], `${name} (seed ${report.seed})`);
      assert.equal(report.unsettled, 0);
      assert.equal(report.charged, report.anchorsHeld);
    });
  });
}

describe('crash points along a hash registration and along the change feed', () => {
  for (const operation of ['register', 'feed'] as const) {
    it(`${operation}: kills along the path, before and after a call, leave the charge, the statistics and the webhook events exact`, { timeout: 300_000 }, async () => {
      const env = { LEDGER_BATCH_WINDOW_MS: '0' };
      // The feed runs with a webhook receiver subscribed: its outbox writes are on the feed's path.
      const webhooks = operation === 'feed';
      const measured = await runCrashExperiment({ devices: 1, photos: 5, kills: 0, env, operation, webhooks, forkProbe: false, crashPoints: [{ killAt: 1e6, when: 'before' }, { killAt: 1e6, when: 'before' }], log: say });
      const length = Math.min(...measured.crashPoints.map((p) => p.calls ?? 0));
      say(`${operation}: the path made ${measured.crashPoints.map((p) => p.calls ?? 0).join(', ')} calls`);
      assert.ok(length >= (webhooks ? 3 : 2), `the ${operation} path made ${length} calls`);
      // register: its first two calls, before and after. feed (statistics, then the outbox: the
      // endpoints' reads, the delivery's write; `npm run sweep` kills every call both ways): the
      // statistics' first write before it leaves, the endpoints' read after its answer, and the
      // delivery's write both ways: before it leaves, and written but not trimmed.
      const points: CrashPoint[] = webhooks
        ? [
            { killAt: 1, when: 'before' },
            { killAt: Math.max(1, length - 2), when: 'after' },
            { killAt: length, when: 'before' },
            { killAt: length, when: 'after' },
          ]
        : [1, 2].flatMap((k) => (['before', 'after'] as const).map((when) => ({ killAt: k, when })));
      const report = await runCrashExperiment({ devices: 1, photos: 12, kills: 0, env, operation, webhooks, crashPoints: points, log: say });
      say(formatReport(report));
      for (const p of report.crashPoints) say(`  call ${p.killAt} ${p.when}: ${p.reached ? `killed at ${p.call ?? '?'}` : `not reached (${p.calls} calls)`}`);
      assert.ok(report.crashPoints.filter((p) => p.reached).length >= 3, 'the service was killed at (almost) every point');
      if (webhooks) assert.ok((report.webhookRequests?.events ?? 0) >= report.anchorsHeld, 'the receiver got an event of every anchored photo');
      for (const [name, items] of Object.entries(report.violations)) assert.deepEqual(items, [], `${name} (seed ${report.seed})`);
      assert.equal(report.unsettled, 0);
    });
  }
});

describe('crash points along a batch anchor request (issue 36)', () => {
  it('a SIGKILL at calls spread over a batch of 4 photos, then the identical batch again: each entry anchored once, no fork or hole, each root on the chain once, the charge exact', { timeout: 300_000 }, async () => {
    const env = { LEDGER_BATCH_WINDOW_MS: '250' };
    const measured = await runCrashExperiment({ devices: 1, photos: 5, kills: 0, env, operation: 'batch', forkProbe: false, crashPoints: [{ killAt: 1e6, when: 'before' }, { killAt: 1e6, when: 'before' }], log: say });
    const length = Math.min(...measured.crashPoints.map((p) => p.calls ?? 0));
    assert.ok(length >= 16, `the batch path made ${length} calls`);
    const points = spread(Math.floor(length * 0.9));
    const report = await runCrashExperiment({ devices: 1, photos: 30, kills: 0, env, operation: 'batch', crashPoints: points, log: say });
    say(formatReport(report));
    for (const p of report.crashPoints) say(`  call ${p.killAt} ${p.when}: ${p.reached ? `killed at ${p.call ?? '?'}` : `not reached (${p.calls} calls)`}`);
    assert.ok(report.crashPoints.filter((p) => p.reached).length >= 5, 'the service was killed at (almost) every sampled point');
    for (const [name, items] of Object.entries(report.violations)) assert.deepEqual(items, [], `${name} (seed ${report.seed})`);
    assert.equal(report.unsettled, 0);
    assert.equal(report.hashes, points.length * 4, 'every entry of every batch is accounted for');
    assert.equal(report.charged, report.anchorsHeld);
  });
});
