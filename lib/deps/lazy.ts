/**
 * The one caching idiom of the composition root: `lazy(build)` builds a dependency on first use
 * and hands out the same one afterwards, per process (per Lambda container). A build that throws,
 * or whose promise rejects, is not kept: the next call builds again (a KMS or file read that
 * failed once is retried, never cached as a failure). {@link resetDeps} forgets everything every
 * `lazy` built (tests that change the environment), disposing of clients on the way.
 *
 * Only lib/deps uses this; the domain receives what it builds as parameters. What a process keeps
 * besides (memoised computations) is a ProcessCache (lib/memo.ts), which resetDeps() clears too.
 */

import { forgetProcessCaches } from '../memo.js';

/** A lazily built dependency: call it to get (or build) the value. */
export interface Lazy<T> {
  (): T;
  /** Forgets the value (disposing of it) so that the next call builds it again. */
  reset(): void;
}

const resets: (() => void)[] = [];

export function lazy<T>(build: () => T, dispose?: (value: T) => void): Lazy<T> {
  let cell: { value: T } | undefined;
  const get = (() => {
    if (cell) return cell.value;
    const value = build();
    const built = { value };
    cell = built;
    if (value instanceof Promise) {
      // A failed build is forgotten (unless a reset or a newer build replaced it meanwhile).
      value.catch(() => {
        if (cell === built) cell = undefined;
      });
    }
    return value;
  }) as Lazy<T>;
  get.reset = () => {
    const old = cell;
    cell = undefined;
    if (old && dispose) dispose(old.value);
  };
  resets.push(get.reset);
  return get;
}

/** Forgets every dependency built so far, in the order they were declared, and every ProcessCache (tests, the admin CLI). */
export function resetDeps(): void {
  for (const reset of resets) reset();
  forgetProcessCaches();
}
