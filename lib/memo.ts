/**
 * The one idiom for what a process keeps between requests, next to the composition root's
 * `lazy()` (lib/deps/lazy.ts): a bounded map, least recently used out first, that
 * {@link forgetProcessCaches} clears (lib/deps `resetDeps()` calls it, so one call forgets both).
 *
 * Use it for values that are the same computation every time (a parsed certificate, a verified
 * token, a final record that can no longer change, a secret read once from KMS): a hit must be
 * indistinguishable from computing again. A promise is kept as it is; one that rejects is
 * forgotten, so a failure is retried, never cached. Objects that key a memo by identity use a
 * WeakMap instead (they go with their object).
 */

const all: ProcessCache<unknown, unknown>[] = [];

export class ProcessCache<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(
    /** What it holds, for readers of the code and of heap snapshots. */
    readonly name: string,
    /** At most this many entries; the least recently used goes first. */
    private readonly max: number,
  ) {
    all.push(this as ProcessCache<unknown, unknown>);
  }

  get(key: K): V | undefined {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key); // most recently used last
      this.entries.set(key, hit);
    }
    return hit;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as K);
    if (value instanceof Promise) {
      value.catch(() => {
        if (this.entries.get(key) === value) this.entries.delete(key);
      });
    }
  }

  /** The cached value, or `compute()`'s (kept; a rejected promise is forgotten). */
  getOrSet(key: K, compute: () => V): V {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const value = compute();
    this.set(key, value);
    return value;
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

/** Clears every ProcessCache (tests that change the environment, the admin CLI). */
export function forgetProcessCaches(): void {
  for (const cache of all) cache.clear();
}
