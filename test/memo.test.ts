import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lazy as lazyDependency, resetDeps } from '../lib/deps/lazy.js';
import { lazy, ProcessCache } from '../lib/memo.js';

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

describe('lazy (lib/memo.ts), the one idiom for one value a process or an object keeps', () => {
  it('builds once on first use and hands out the same value', () => {
    let builds = 0;
    const value = lazy(() => ({ n: ++builds }));
    assert.equal(builds, 0, 'nothing is built before the first call');
    const first = value();
    assert.equal(value(), first);
    assert.equal(builds, 1);
  });

  it('keeps no failure: a build that throws or rejects is built again by the next call', async () => {
    let builds = 0;
    const throwing = lazy(() => {
      builds++;
      throw new Error('down');
    });
    assert.throws(throwing, /down/);
    assert.throws(throwing, /down/);
    assert.equal(builds, 2);
    let calls = 0;
    const rejecting = lazy(async () => {
      if (++calls === 1) throw new Error('down');
      return calls;
    });
    await assert.rejects(rejecting());
    await new Promise((r) => setImmediate(r));
    assert.equal(await rejecting(), 2);
    assert.equal(await rejecting(), 2, 'the value that succeeded is kept');
  });

  it('reset() disposes of the value and builds it again on the next call', () => {
    const disposed: number[] = [];
    let builds = 0;
    const value = lazy(() => ++builds, (n) => disposed.push(n));
    value();
    value.reset();
    assert.deepEqual(disposed, [1]);
    assert.equal(value(), 2);
  });

  it('resetDeps() forgets the composition root\'s lazies (lib/deps/lazy.ts), not a module\'s or an object\'s own', () => {
    let root = 0;
    let own = 0;
    const dependency = lazyDependency(() => ++root);
    const value = lazy(() => ++own);
    dependency();
    value();
    resetDeps();
    assert.equal(dependency(), 2);
    assert.equal(value(), 1);
  });
});
