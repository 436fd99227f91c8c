import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Bounded work with idle waits given back (decisions.md "Limits", the anchors' bulkhead).
 *
 * A pool admits at most `max` pieces of work at once; the rest wait their turn in arrival order,
 * each for at most the wait it was given. Work that then only waits (an anchor in a batch waiting
 * for its window to end and its transaction to be mined: no CPU, no database call of its own)
 * gives its slot back with `whileIdle` and takes one again, ahead of the new arrivals, when the wait
 * is over. The bound is on work in hand, not on anchors in a batch: held through the wait, 16
 * slots let at most 16 anchors share a window, and the batch size, not the CPU, set the
 * throughput (measured: 42 anchors/s at 128 clients with the machine half idle).
 *
 * Domain code calls `whileIdle` without knowing whether it runs under a pool (outside one, or in a
 * Lambda instance serving one request at a time, it just awaits).
 */
export interface WorkPool {
  /** Runs `work` once admitted; false when it waited `waitMs` without a turn (work not run). */
  run<T>(work: () => Promise<T>, waitMs: number): Promise<{ admitted: true; value: T } | { admitted: false }>;
  /** Slots in use now (tests, health). */
  inHand(): number;
}

interface Slot {
  /** Awaits `wait` with the slot given back, then holds it again (see {@link whileIdle}). */
  idle<T>(wait: Promise<T>): Promise<T>;
}

const current = new AsyncLocalStorage<Slot>();

/** A pool of `max()` slots (read at each admission: a setting may change between tests). */
export function workPool(max: () => number): WorkPool {
  let inHand = 0;
  /** Work coming back from an idle wait: first in line, never timed out (it was admitted once). */
  const resuming: (() => void)[] = [];
  const waiting: (() => void)[] = [];

  /** Hands the slot to the next in line, or gives it back. */
  const pass = () => {
    const next = resuming.shift() ?? waiting.shift();
    if (next) next();
    else inHand--;
  };
  const take = (): Promise<void> => {
    if (inHand < max()) {
      inHand++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => resuming.push(resolve));
  };

  return {
    inHand: () => inHand,
    async run(work, waitMs) {
      if (inHand >= max()) {
        const admitted = await new Promise<boolean>((resolve) => {
          const turn = () => {
            clearTimeout(timer);
            resolve(true);
          };
          const timer = setTimeout(() => {
            const i = waiting.indexOf(turn);
            if (i >= 0) waiting.splice(i, 1);
            resolve(false);
          }, waitMs);
          waiting.push(turn);
        });
        if (!admitted) return { admitted: false };
      } else inHand++;
      // One piece of work may wait in several branches at once (the batch anchor finishes its
      // entries side by side): the first branch to wait gives the slot back, the first to come back
      // takes it again, and the others share that take; the slot is never given or taken twice.
      let holding = true;
      let done = false;
      let taking: Promise<void> | undefined;
      const slot: Slot = {
        idle: async (wait) => {
          if (holding && !taking) {
            holding = false;
            pass();
          }
          try {
            return await wait;
          } finally {
            if (!holding) {
              taking ??= take().then(() => {
                taking = undefined;
                if (done) pass(); // the work ended while this branch waited for its turn
                else holding = true;
              });
              await taking;
            }
          }
        },
      };
      try {
        return { admitted: true, value: await current.run(slot, work) };
      } finally {
        done = true;
        if (holding) {
          holding = false;
          pass();
        }
      }
    },
  };
}

/**
 * Awaits `wait` without holding the caller's slot, and takes a slot again before going on. The
 * wait must need no slot itself: it is shared with, or done by, work that holds its own.
 */
export async function whileIdle<T>(wait: Promise<T>): Promise<T> {
  const slot = current.getStore();
  return slot ? slot.idle(wait) : wait;
}
