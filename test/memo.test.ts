import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resetDeps } from '../lib/deps/lazy.js';
import { ProcessCache } from '../lib/memo.js';

describe('ProcessCache (lib/memo.ts), the one idiom for what a process keeps', () => {
  it('holds at most its size, dropping the least recently used first', () => {
    const cache = new ProcessCache<string, number>('test', 2);
    cache.set('a', 1);
    cache.set('b', 2);
    assert.equal(cache.get('a'), 1); // a is now the most recently used
    cache.set('c', 3);
    assert.deepEqual([cache.get('a'), cache.get('b'), cache.get('c')], [1, undefined, 3]);
    assert.equal(cache.size, 2);
  });

  it('computes once, keeps the promise, and forgets a rejected one so that it is computed again', async () => {
    const cache = new ProcessCache<string, Promise<number>>('test', 4);
    let calls = 0;
    const ok = () => cache.getOrSet('k', async () => ++calls);
    assert.equal(await ok(), 1);
    assert.equal(await ok(), 1);
    const failing = cache.getOrSet('bad', async () => {
      calls++;
      throw new Error('down');
    });
    await assert.rejects(failing);
    await new Promise((r) => setImmediate(r));
    assert.equal(cache.get('bad'), undefined, 'a failure is never cached');
  });

  it('is cleared with the composition root by resetDeps()', () => {
    const cache = new ProcessCache<string, number>('test', 4);
    cache.set('a', 1);
    resetDeps();
    assert.equal(cache.get('a'), undefined);
  });
});
