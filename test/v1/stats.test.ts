import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { useStack } from '../support/stack.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { StatsRecorder } from '../../lib/store/stats-counters.js';
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

  it('writes concurrent events together: 40 of them in two rounds of writes, every one counted', async () => {
    const db = getDb();
    let writes = 0;
    const counting = { send: (command: Parameters<typeof db.send>[0]) => (writes++, db.send(command)) } as unknown as typeof db;
    const recorder = new StatsRecorder(counting, getConfig().tables.counters, {
      clock: () => new Date('2026-11-22T10:00:00.000Z'),
      prefix: `test-stats-${randomBytes(4).toString('hex')}#`,
    });
    await Promise.all(Array.from({ length: 40 }, () => recorder.record({ transactions: 1 })));
    // The first event goes out alone (totals + its hour), the 39 recorded meanwhile in one more round.
    assert.equal(writes, 4);
    assert.equal((await recorder.read()).totals.transactions, 40);
  });

  it('keeps each event of a combined write in the hour it happened', async () => {
    const { recorder, setNow } = recorderAt('2026-11-22T10:59:59.000Z');
    const first = recorder.record({ anchored: 1 }); // in flight: the next two wait for it
    const second = recorder.record({ anchored: 1 });
    setNow('2026-11-22T11:00:01.000Z');
    const third = recorder.record({ anchored: 1 });
    await Promise.all([first, second, third]);
    setNow('2026-11-23T10:30:00.000Z'); // the 10:00 bucket has left the window, the 11:00 one has not
    const s = await recorder.read();
    assert.equal(s.totals.anchored, 3);
    assert.equal(s.last_24h.anchored, 1);
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
