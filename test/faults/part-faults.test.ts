/**
 * decisions.md "Faults of the parts", tried as an SRE would, in the default (batched) mode: devices
 * anchoring continuously, each retrying its identical request until it gets a 200, while the
 * ledger node is SIGKILLed four times in 20 s, the database is frozen (SIGSTOP) and then killed,
 * and finally the whole service is killed. Then, through the public API, the chain's JSON-RPC and
 * the batches table: no 200 lost, no hash or Merkle root twice on the ledger, nothing left
 * unsettled past 60 s, the quota charged exactly, and public reads answering (503 problem+json)
 * within 5 s while the database was frozen, and, with a webhook receiver subscribed through it all,
 * every anchored photo's event delivered under one webhook-id. `CHAOS_SCHEDULE=sre npm run chaos`
 * is the longer run.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { formatReport, runCrashExperiment, type CrashReport } from '../support/crash-harness.js';

const say = (line: string) => process.stderr.write(`${line}\n`);

describe('the parts fail one at a time during continuous batched anchoring (ledger node ×4, database frozen then killed, then the whole service)', () => {
  let report: CrashReport;

  before(
    async () => {
      report = await runCrashExperiment({
        devices: 6,
        photos: 100_000,
        kills: 0,
        schedule: [
          { kind: 'kill-ledger', atMs: 3_000 },
          { kind: 'kill-ledger', atMs: 8_000 },
          { kind: 'kill-ledger', atMs: 13_000 },
          { kind: 'kill-ledger', atMs: 18_000 },
          { kind: 'stop-database', atMs: 23_000, durationMs: 7_000 },
          { kind: 'kill-database', atMs: 34_000 },
          { kind: 'kill', atMs: 40_000 },
        ],
        tailMs: 4_000,
        // A webhook receiver subscribed through it all: the outbox and the deliveries live through the same faults.
        webhooks: true,
        log: say,
      });
      say(formatReport(report));
    },
    { timeout: 360_000 },
  );

  const list = (items: string[]) => `\n  - ${items.slice(0, 20).join('\n  - ')}${items.length > 20 ? `\n  … and ${items.length - 20} more` : ''}`;

  it('injected every fault while anchors were in flight, in batch mode', () => {
    assert.deepEqual(
      report.faults.map((f) => f.kind),
      ['kill-ledger', 'kill-ledger', 'kill-ledger', 'kill-ledger', 'stop-database', 'kill-database', 'kill'],
      JSON.stringify(report.faults),
    );
    assert.ok(report.faults.every((f) => !/skipped/.test(f.note)), JSON.stringify(report.faults));
    assert.ok(report.settled200 > 50, `only ${report.settled200} anchors answered`);
    assert.ok(report.ledgerAnchorTransactions < report.hashes, 'anchors shared batch transactions');
  });

  it('loses no 200: every hash answered 200 verifies and has a receipt', () => {
    assert.ok(report.violations.verify200.length === 0, `200s that do not verify:${list(report.violations.verify200)}`);
  });

  it('puts each hash and each Merkle root on the ledger at most once, in the transaction its receipt names', () => {
    assert.equal(report.rootsTwice, 0);
    assert.equal(report.duplicates, 0);
    assert.ok(report.violations.ledgerOnce.length === 0, `ledger violations:${list(report.violations.ledgerOnce)}`);
  });

  it('leaves nothing unsettled past 60 s, forks no chain and charges exactly', () => {
    assert.ok(report.violations.limbo.length === 0, `limbo:${list(report.violations.limbo)}`);
    assert.ok(report.violations.noFork.length === 0, `forks:${list(report.violations.noFork)}`);
    assert.ok(report.violations.charging.length === 0, `charging:${list(report.violations.charging)}`);
  });

  it('delivers the anchored event of every photo that verifies, each fact under one webhook-id, one delivery per event', () => {
    assert.ok(report.violations.webhooks.length === 0, `webhooks:${list(report.violations.webhooks)}`);
    assert.ok((report.webhookRequests?.events ?? 0) >= report.anchorsHeld, JSON.stringify(report.webhookRequests));
  });

  it('answers public reads within 5 s while the database is frozen: 503 problem+json, never a hang', () => {
    assert.ok(report.readProbes.length >= 8, `only ${report.readProbes.length} reads were made while frozen`);
    assert.ok(report.readProbes.some((p) => p.status === 503), 'a frozen database was noticed by some read');
    assert.ok(report.violations.reads.length === 0, `reads:${list(report.violations.reads)}`);
  });
});
