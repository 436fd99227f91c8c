/**
 * decisions.md "Faults and retries" under SIGKILL: `npm start` is killed (its whole process group)
 * three times at random moments of a burst of chained anchors from 8 devices, restarted on the
 * same DATA_DIR each time, while the devices retry exactly as a phone app does. Then the five
 * promises are checked through the public API and the chain's own JSON-RPC.
 *
 * The kill schedule is seeded: the seed is printed, and CRASH_SEED=<seed> replays it.
 * The harness is test/support/crash-harness.ts; `npm run chaos` is the longer run.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { formatReport, runCrashExperiment, type CrashReport } from '../support/crash-harness.js';

const say = (line: string) => process.stderr.write(`${line}\n`);

describe('npm start killed (SIGKILL of the process tree) three times during a burst of chained anchors', () => {
  let report: CrashReport;

  before(
    async () => {
      report = await runCrashExperiment({ devices: 8, photos: 8, kills: 3, log: say });
      say(formatReport(report));
    },
    { timeout: 300_000 },
  );

  const list = (items: string[]) => `\n  - ${items.slice(0, 20).join('\n  - ')}${items.length > 20 ? `\n  … and ${items.length - 20} more` : ''}\n  (seed ${report.seed}: CRASH_SEED=${report.seed} replays the schedule)`;

  it('really kills the service three times while anchors are in flight', () => {
    assert.equal(report.faults.filter((f) => f.kind === 'kill').length, 3, `kills done: ${JSON.stringify(report.faults)}`);
    assert.ok(report.interrupted > 0, 'no request was in flight at any kill: the run proves nothing');
  });

  it('1. every hash that got a 200 verifies and has a receipt', () => {
    assert.ok(report.violations.verify200.length === 0, `200s that do not verify:${list(report.violations.verify200)}`);
  });

  it('2. leaves no hash in limbo: every interrupted anchor settles within 60 s of the restart', () => {
    assert.ok(report.violations.limbo.length === 0, `hashes left in limbo:${list(report.violations.limbo)}`);
  });

  it('3. puts each image hash on the ledger at most once, in the transaction its receipt names', () => {
    assert.ok(report.violations.ledgerOnce.length === 0, `ledger violations:${list(report.violations.ledgerOnce)}`);
  });

  it('4. never forks a device chain: one verified hash per (device, index), the one the device sent', () => {
    assert.ok(report.violations.noFork.length === 0, `forks:${list(report.violations.noFork)}`);
  });

  it('5. charges the account exactly for the anchors it holds', () => {
    assert.ok(report.violations.charging.length === 0, `charging:${list(report.violations.charging)}`);
  });

  it('6. counts the statistics exactly once the change feed converged: every anchor, device and transaction once', () => {
    assert.ok(report.violations.stats.length === 0, `statistics:${list(report.violations.stats)}`);
  });
});
