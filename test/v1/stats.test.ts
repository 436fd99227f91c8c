import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { useStack } from '../support/stack.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import type { StatsEvent } from '../../lib/evidence/stats.js';
import { sequenceKey } from '../../lib/evidence/derived.js';
import { StatsRecorder } from '../../lib/store/stats-counters.js';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { setLogLevel } from '../../lib/log.js';

/** A recorder over the real counters table, with its own keys and a clock the test moves; `sent` names every request it made. */
function recorderAt(start: string) {
  let now = new Date(start);
  const sent: string[] = [];
  const db = {
    send(command: { constructor: { name: string } }) {
      sent.push(command.constructor.name.replace(/Command$/, ''));
      return getDb().send(command as never);
    },
  } as unknown as DynamoDBDocumentClient;
  const prefix = `test-stats-${randomBytes(4).toString('hex')}#`;
  const recorder = new StatsRecorder(db, getConfig().tables.counters, { clock: () => now, prefix });
  const item = async () => (await getDb().send(new GetCommand({ TableName: getConfig().tables.counters, Key: { pk: `${prefix}total` } }))).Item ?? {};
  return { recorder, setNow: (iso: string) => (now = new Date(iso)), sent, item };
}

const hourOf = (iso: string) => Math.floor(Date.parse(iso) / 3_600_000) * 3_600_000;
/** The events of one stream batch: sequence numbers `from`, `from + 1`, …, each of the given delta, in the given hour. */
function events(from: number, deltas: StatsEvent['delta'][], hourIso: string): StatsEvent[] {
  return deltas.map((delta, i) => ({ seq: sequenceKey(String(from + i)), hourStartMs: hourOf(hourIso), delta }));
}

before(async () => {
  await useStack();
});

describe('statistics counters', () => {
  it('adds every event to the totals and to the last 24 hours', async () => {
    const { recorder } = recorderAt('2026-11-22T10:15:00.000Z');
    await recorder.applyStats('shard-a', events(1, [{ anchored: 1, devices: 1, transactions: 1 }, { registered: 1 }, { anchored: 1, transactions: 1, devices: 0 }], '2026-11-22T10:15:00.000Z'));
    const s = await recorder.read();
    const expected = { registered: 1, anchored: 2, devices: 1, transactions: 2 };
    assert.deepEqual(s.totals, expected);
    assert.deepEqual(s.last_24h, expected);
    assert.equal(s.last_24h_since, '2026-11-21T11:00:00.000Z');
  });

  it('drops an hour from the last 24 hours once it is 24 hours old, and keeps it in the totals', async () => {
    const { recorder, setNow } = recorderAt('2026-11-22T10:59:00.000Z');
    await recorder.applyStats('shard-a', events(1, [{ anchored: 1 }], '2026-11-22T10:59:00.000Z'));
    setNow('2026-11-23T09:30:00.000Z');
    assert.equal((await recorder.read()).last_24h.anchored, 1);
    setNow('2026-11-23T10:00:00.000Z');
    const s = await recorder.read();
    assert.equal(s.last_24h.anchored, 0);
    assert.equal(s.totals.anchored, 1);
  });

  it('is one item: one write per batch whatever hours it spans, one read per answer; an hour out of the window leaves the item', async () => {
    const { recorder, setNow, sent, item } = recorderAt('2026-11-22T12:30:00.000Z');
    await recorder.applyStats('shard-a', [
      ...events(1, [{ anchored: 1 }], '2026-11-22T10:10:00.000Z'),
      ...events(2, [{ anchored: 1 }], '2026-11-22T11:10:00.000Z'),
      ...events(3, [{ registered: 1 }], '2026-11-22T12:10:00.000Z'),
    ]);
    assert.deepEqual(sent.splice(0), ['Update']);
    const s = await recorder.read();
    assert.deepEqual(sent.splice(0), ['Get']);
    assert.deepEqual(s.last_24h, { registered: 1, anchored: 2, devices: 0, transactions: 0 });
    assert.deepEqual(Object.keys(await item()).filter((k) => k.startsWith('hour#')).sort(), ['hour#2026-11-22T10#anchored', 'hour#2026-11-22T11#anchored', 'hour#2026-11-22T12#registered']);
    // A day later the 10:00 and 11:00 hours are more than 25 hours old: the next write but one removes them
    // (the first learns of them from the item it returns), and counts nothing twice meanwhile.
    setNow('2026-11-23T12:30:00.000Z');
    await recorder.applyStats('shard-a', events(4, [{ anchored: 1 }], '2026-11-23T12:30:00.000Z'));
    await recorder.applyStats('shard-a', events(5, [{ anchored: 1 }], '2026-11-23T12:30:00.000Z'));
    assert.deepEqual(Object.keys(await item()).filter((k) => k.startsWith('hour#')).sort(), ['hour#2026-11-22T12#registered', 'hour#2026-11-23T12#anchored']);
    const later = await recorder.read();
    assert.deepEqual(later.totals, { registered: 1, anchored: 4, devices: 0, transactions: 0 });
    assert.deepEqual(later.last_24h, { registered: 0, anchored: 2, devices: 0, transactions: 0 }, 'the 12:00 hour of yesterday is out of the window, though still on the item');
  });

  it('counts a late event of an hour already out of the window in the totals only', async () => {
    const { recorder, item } = recorderAt('2026-11-23T12:30:00.000Z');
    await recorder.applyStats('shard-a', events(1, [{ anchored: 1 }], '2026-11-22T10:10:00.000Z'));
    const s = await recorder.read();
    assert.equal(s.totals.anchored, 1);
    assert.equal(s.last_24h.anchored, 0);
    assert.deepEqual(Object.keys(await item()).filter((k) => k.startsWith('hour#')), []);
  });

  it('counts a batch delivered again once, and of an overlapping batch only what it had not counted', async () => {
    const { recorder } = recorderAt('2026-11-22T10:00:00.000Z');
    const first = events(1, [{ anchored: 1 }, { anchored: 1 }, { anchored: 1 }], '2026-11-22T10:00:00.000Z');
    await recorder.applyStats('shard-a', first);
    await recorder.applyStats('shard-a', first); // redelivered
    assert.equal((await recorder.read()).totals.anchored, 3);
    // Sequence numbers 2..5: 2 and 3 are counted, 4 and 5 are new (a bisected or partly failed batch).
    await recorder.applyStats('shard-a', events(2, [{ anchored: 1 }, { anchored: 1 }, { anchored: 1 }, { anchored: 1 }], '2026-11-22T10:00:00.000Z'));
    const s = await recorder.read();
    assert.equal(s.totals.anchored, 5);
    assert.equal(s.last_24h.anchored, 5);
  });

  it('keeps shards apart: the same sequence number of another shard is another event', async () => {
    const { recorder } = recorderAt('2026-11-22T10:00:00.000Z');
    await recorder.applyStats('shard-a', events(7, [{ registered: 1 }], '2026-11-22T10:00:00.000Z'));
    await recorder.applyStats('shard-b', events(7, [{ registered: 1 }], '2026-11-22T10:00:00.000Z'));
    assert.equal((await recorder.read()).totals.registered, 2);
  });

  it('counts each event once when the same batches are applied by two consumers at once', async () => {
    const { recorder } = recorderAt('2026-11-22T10:00:00.000Z');
    const other = new StatsRecorder(getDb(), getConfig().tables.counters, { clock: () => new Date('2026-11-22T10:00:00.000Z'), prefix: (recorder as unknown as { pk: string }).pk.replace(/total$/, '') });
    const batches = Array.from({ length: 10 }, (_, b) => events(1 + b * 4, [{ transactions: 1 }, { transactions: 1 }, { transactions: 1 }, { transactions: 1 }], '2026-11-22T10:00:00.000Z'));
    await Promise.all([
      (async () => {
        for (const b of batches) await recorder.applyStats('shard-a', b);
      })(),
      (async () => {
        for (const b of batches) await other.applyStats('shard-a', b);
      })(),
    ]);
    assert.equal((await recorder.read()).totals.transactions, 40);
  });

  it('keeps each event in the hour it happened', async () => {
    const { recorder, setNow } = recorderAt('2026-11-22T11:00:01.000Z');
    await recorder.applyStats('shard-a', [...events(1, [{ anchored: 1 }, { anchored: 1 }], '2026-11-22T10:59:59.000Z'), ...events(3, [{ anchored: 1 }], '2026-11-22T11:00:01.000Z')]);
    setNow('2026-11-23T10:30:00.000Z'); // the 10:00 bucket has left the window, the 11:00 one has not
    const s = await recorder.read();
    assert.equal(s.totals.anchored, 3);
    assert.equal(s.last_24h.anchored, 1);
  });

  it('counts an event of its own once per id (the key registration), and never throws', async () => {
    const { recorder } = recorderAt('2026-11-22T10:00:00.000Z');
    await recorder.recordOnce('pq-key#abc', { transactions: 1 });
    await recorder.recordOnce('pq-key#abc', { transactions: 1 });
    assert.equal((await recorder.read()).totals.transactions, 1);
    const broken = new StatsRecorder(getDb(), 'no-such-table');
    setLogLevel('error'); // the swallowed failure is logged as a warning
    try {
      await broken.recordOnce('x', { anchored: 1 });
    } finally {
      setLogLevel('warn');
    }
  });

  it('throws when a batch cannot be written, so that it is delivered again', async () => {
    const broken = new StatsRecorder(getDb(), 'no-such-table');
    await assert.rejects(broken.applyStats('shard-a', events(1, [{ anchored: 1 }], '2026-11-22T10:00:00.000Z')));
  });
});
