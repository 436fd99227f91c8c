/**
 * The two caching idioms of the code, for what a process keeps between requests:
 * - `lazy(build)`: ONE value, built on first use and handed out afterwards. A build that throws,
 *   or whose promise rejects, is not kept: the next call builds again (a KMS or file read that
 *   failed once is retried, never cached as a failure). A module's lazy lives as long as the
 *   process, an object's as long as the object. The composition root's dependencies are lazies
 *   that resetDeps() also forgets (lib/deps/lazy.ts).
 * - `ProcessCache`: MANY values by key, a bounded map, least recently used out first, that
 *   {@link forgetProcessCaches} clears (lib/deps `resetDeps()` calls it, so one call forgets both).
 *
 * Use them for values that are the same computation every time (a parsed certificate, a verified
 * token, a final record that can no longer change, a secret read once from KMS, a key's public
 * key): a hit must be indistinguishable from computing again. A promise is kept as it is; one that
 * rejects is forgotten, so a failure is retried, never cached. Objects that key a memo by identity
 * use a WeakMap instead (they go with their object).
 */

/** A lazily built value: call it to get (or build) the value. */
export interface Lazy<T> {
  (): T;
  /** Forgets the value (disposing of it) so that the next call builds it again. */
  reset(): void;
}

/** `dispose` is called with a value forgotten by reset(); `resets`, when given, collects reset() (lib/deps/lazy.ts resetDeps). */
export function lazy<T>(build: () => T, dispose?: (value: T) => void, resets?: (() => void)[]): Lazy<T> {
  // Whether a value is held (0 or 1: the smallest code, as every bundle carries this).
  let built = 0;
  let value: T | undefined;
  function get(): T {
    if (!built) {
      const v = build();
      value = v;
      built = 1;
      // A failed build is forgotten (unless a reset or a newer build replaced it meanwhile).
      if (v instanceof Promise) v.catch(() => value === v && (built = 0));
    }
    return value as T;
  }
  get.reset = () => {
    // The value stays referenced until the next build replaces it (less code in every bundle).
    const had = built;
    built = 0;
    if (had && dispose) dispose(value as T);
  };
  resets?.push(get.reset);
  return get;
}

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
