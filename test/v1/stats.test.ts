import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { useStack } from '../support/stack.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { StatsRecorder } from '../../lib/evidence/stats.js';
import { setLogLevel } from '../../lib/log.js';

/** A recorder over the real counters table, with its own keys and a clock the test moves. */
function recorderAt(start: string) {
  let now = new Date(start);
  const recorder = new StatsRecorder(getDb(), getConfig().tables.counters, { clock: () => now, prefix: `test-stats-${randomBytes(4).toString('hex')}#` });
  return { recorder, setNow: (iso: string) => (now = new Date(iso)) };
}

before(async () => {
  await useStack();
});

describe('statistics counters', () => {
  it('adds every event to the totals and to the last 24 hours', async () => {
    const { recorder } = recorderAt('2026-11-22T10:15:00.000Z');
    await recorder.record({ anchored: 1, devices: 1, transactions: 1 });
    await recorder.record({ registered: 1 });
    await recorder.record({ anchored: 1, transactions: 1, devices: 0 });
    const s = await recorder.read();
    const expected = { registered: 1, anchored: 2, devices: 1, transactions: 2 };
    assert.deepEqual(s.totals, expected);
    assert.deepEqual(s.last_24h, expected);
    assert.equal(s.last_24h_since, '2026-11-21T11:00:00.000Z');
  });

  it('drops an hour from the last 24 hours once it is 24 hours old, and keeps it in the totals', async () => {
    const { recorder, setNow } = recorderAt('2026-11-22T10:59:00.000Z');
    await recorder.record({ anchored: 1 });
    setNow('2026-11-23T09:30:00.000Z');
    assert.equal((await recorder.read()).last_24h.anchored, 1);
    setNow('2026-11-23T10:00:00.000Z');
    const s = await recorder.read();
    assert.equal(s.last_24h.anchored, 0);
    assert.equal(s.totals.anchored, 1);
  });

  it('counts every one of many concurrent events (atomic ADD)', async () => {
    const { recorder } = recorderAt('2026-11-22T10:00:00.000Z');
    await Promise.all(Array.from({ length: 40 }, () => recorder.record({ transactions: 1 })));
    assert.equal((await recorder.read()).totals.transactions, 40);
  });

  it('never throws when the counters cannot be written', async () => {
    const broken = new StatsRecorder(getDb(), 'no-such-table');
    setLogLevel('error'); // the swallowed failure is logged as a warning
    try {
      await broken.record({ anchored: 1 });
    } finally {
      setLogLevel('warn');
    }
  });
});
