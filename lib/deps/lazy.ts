/**
 * The composition root's `lazy(build)`: lib/memo.ts's lazy (a dependency built on first use and
 * handed out afterwards, per process, per Lambda container; a failed build is not kept), and
 * forgotten by {@link resetDeps} with every other one (tests that change the environment),
 * disposing of clients on the way.
 *
 * The domain receives what lib/deps builds as parameters. What a process keeps besides (memoised
 * computations) is a ProcessCache (lib/memo.ts), which resetDeps() clears too.
 */

import { type Lazy, forgetProcessCaches, lazy as lazyValue } from '../memo.js';

const resets: (() => void)[] = [];

export const lazy = <T>(build: () => T, dispose?: (value: T) => void): Lazy<T> => lazyValue(build, dispose, resets);

/** Forgets every dependency built so far, in the order they were declared, and every ProcessCache (tests, the admin CLI). */
export function resetDeps(): void {
  for (const reset of resets) reset();
  forgetProcessCaches();
}
