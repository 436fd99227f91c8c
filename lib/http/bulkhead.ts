import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './app.js';
import { getConfig } from '../deps/core.js';
import { serviceUnavailable } from './errors.js';

/**
 * A bulkhead (decisions.md "Limits"): at most `max` requests of one kind in hand at once in this
 * process; the others wait their turn, in arrival order, for at most `waitMs`, then get 503
 * `server_busy` with Retry-After (nothing recorded, no quota used; the request's rate unit counts, as
 * for every authenticated request).
 *
 * Why: an anchor holds DynamoDB calls (each with a 1.5 s attempt deadline) and CPU-bound proofs
 * (ML-DSA-65 and two RFC 3161 tokens) at once. Two hundred of them started together in one Node
 * process starve each other's event loop: the database answers in time, but the answers are read
 * too late, every deadline fires, and every request fails 503 although nothing is down (measured:
 * 170 of 200 after five retries each). Admitted a few at a time, each finishes well within its
 * deadlines and the rest wait; the throughput is the same and the errors are gone. A Lambda
 * instance serves one request at a time, so there the bulkhead never holds anything back;
 * `npm start` serves every request from one process, as does the in-process test stack.
 */
const bulkheads = new Map<string, { inHand: number; waiting: (() => void)[] }>();

export function bulkhead(options: { name: string; max: () => number; waitMs: () => number }): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const max = options.max();
    if (max <= 0) return next();
    let b = bulkheads.get(options.name);
    if (!b) bulkheads.set(options.name, (b = { inHand: 0, waiting: [] }));
    const state = b;
    if (state.inHand >= max) {
      const admitted = await new Promise<boolean>((resolve) => {
        const turn = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          const i = state.waiting.indexOf(turn);
          if (i >= 0) state.waiting.splice(i, 1);
          resolve(false);
        }, options.waitMs());
        state.waiting.push(turn);
      });
      if (!admitted) {
        throw serviceUnavailable('server_busy', `This server has ${max} anchors in hand and this one waited its turn for ${Math.round(options.waitMs() / 1000)} s; nothing was recorded and no quota was used. Retry the identical request.`, 2);
      }
    } else state.inHand++;
    try {
      await next();
    } finally {
      // The turn passes to the next in line (who takes this slot over), or the slot is given back.
      const following = state.waiting.shift();
      if (following) following();
      else state.inHand--;
    }
  };
}

/** The anchors' bulkhead (v2 anchor and full, v1 chain anchor share it): ANCHOR_CONCURRENCY, ANCHOR_WAIT_MS. */
export const anchorBulkhead = bulkhead({ name: 'anchor', max: () => getConfig().anchorConcurrency, waitMs: () => getConfig().anchorWaitMs });
