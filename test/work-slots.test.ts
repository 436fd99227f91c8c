/**
 * lib/work-slots.ts: a pool bounds the work in hand, not the waits; work that goes idle gives its
 * slot back and comes back ahead of new arrivals; a new arrival that waits too long is refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { whileIdle, workPool } from '../lib/work-slots.js';

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Lets every settled promise's continuations run. */
const drain = () => new Promise((r) => setImmediate(r));

describe('a work pool', () => {
  it('admits at most max at once, lets idle work give its slot to the next in line, and takes it back ahead of new arrivals', async () => {
    const pool = workPool(() => 2);
    const order: string[] = [];
    const idle = deferred();
    const finishB = deferred();
    const finishC = deferred();
    const a = pool.run(async () => {
      order.push('a starts');
      await whileIdle(idle.promise);
      order.push('a resumes');
    }, 10_000);
    const b = pool.run(async () => {
      order.push('b starts');
      await finishB.promise;
      order.push('b ends');
    }, 10_000);
    const c = pool.run(async () => {
      order.push('c starts');
      await finishC.promise;
      order.push('c ends');
    }, 10_000);
    await drain();
    // a went idle at once: c took its slot; two in hand (b, c), a waits outside.
    assert.deepEqual(order, ['a starts', 'b starts', 'c starts']);
    assert.equal(pool.inHand(), 2);
    // a's wait ends while both slots are taken, and a new arrival d queues behind it.
    idle.resolve();
    const d = pool.run(async () => {
      order.push('d starts');
    }, 10_000);
    await drain();
    assert.deepEqual(order, ['a starts', 'b starts', 'c starts'], 'a waits for a slot: no third piece of work in hand');
    finishB.resolve();
    await b;
    await drain();
    // The freed slot goes to a, ahead of d; d gets the slot a gives back when it ends.
    await a;
    await d;
    assert.deepEqual(order, ['a starts', 'b starts', 'c starts', 'b ends', 'a resumes', 'd starts']);
    finishC.resolve();
    assert.deepEqual(await c, { admitted: true, value: undefined });
    assert.equal(pool.inHand(), 0);
  });

  it('refuses a new arrival that waited its whole wait, and runs nothing of it', async () => {
    const pool = workPool(() => 1);
    const hold = deferred();
    const first = pool.run(() => hold.promise, 10_000);
    let ran = false;
    const late = await pool.run(async () => {
      ran = true;
    }, 30);
    assert.deepEqual(late, { admitted: false });
    assert.equal(ran, false);
    hold.resolve();
    await first;
    assert.equal(pool.inHand(), 0);
  });

  it('gives the slot back when the work throws, also from an idle wait', async () => {
    const pool = workPool(() => 1);
    await assert.rejects(pool.run(() => whileIdle(Promise.reject(new Error('boom'))), 1000), /boom/);
    assert.equal(pool.inHand(), 0);
    assert.deepEqual(await pool.run(async () => 7, 1000), { admitted: true, value: 7 });
  });

  it('gives one slot back and takes one again when one piece of work waits in several branches at once (the batch anchor)', async () => {
    const pool = workPool(() => 1);
    const waits = [deferred(), deferred(), deferred()];
    const other = deferred();
    const order: string[] = [];
    const batch = pool.run(async () => {
      await Promise.all(
        waits.map(async (w, i) => {
          await whileIdle(w.promise);
          order.push(`branch ${i} resumes`);
        }),
      );
      return 'done';
    }, 10_000);
    await drain();
    assert.equal(pool.inHand(), 0, 'the one slot was given back once');
    const b = pool.run(async () => {
      order.push('other starts');
      await other.promise;
    }, 10_000);
    await drain();
    assert.equal(pool.inHand(), 1);
    // Two branches come back while the other work holds the slot: they wait for it together.
    waits[0]?.resolve();
    waits[1]?.resolve();
    await drain();
    assert.deepEqual(order, ['other starts']);
    other.resolve();
    await b;
    await drain();
    assert.deepEqual(order, ['other starts', 'branch 0 resumes', 'branch 1 resumes']);
    assert.equal(pool.inHand(), 1, 'one slot taken again, for both');
    waits[2]?.resolve();
    assert.deepEqual(await batch, { admitted: true, value: 'done' });
    assert.equal(pool.inHand(), 0, 'nothing leaked: the pool is empty again');
    // And the pool still admits up to its bound.
    assert.deepEqual(await pool.run(async () => pool.inHand(), 10), { admitted: true, value: 1 });
  });

  it('outside a pool, whileIdle only awaits', async () => {
    assert.equal(await whileIdle(Promise.resolve(5)), 5);
  });
});
