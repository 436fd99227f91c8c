import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './app.js';
import { getConfig } from '../deps/core.js';
import { serviceUnavailable } from './errors.js';
import { type WorkPool, workPool } from '../work-slots.js';

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
 * deadlines and the rest wait; the errors are gone. An anchor waiting for its batch's window and
 * receipt gives its slot back meanwhile (lib/work-slots.ts `whileIdle`): the bound is on work in
 * hand, and a batch is not capped at the pool's size. A Lambda instance serves one request at a time, so there the bulkhead never holds anything back;
 * `npm start` serves every request from one process, as does the in-process test stack.
 */
/** The pools by bulkhead name (a handful, declared at module level): live state, not a cache (no ProcessCache). */
const pools = new Map<string, WorkPool>();

export function bulkhead(options: { name: string; max: () => number; waitMs: () => number }): MiddlewareHandler<AppEnv> {
  return async (_c, next) => {
    const max = options.max();
    if (max <= 0) return next();
    let pool = pools.get(options.name);
    if (!pool) pools.set(options.name, (pool = workPool(options.max)));
    const outcome = await pool.run(() => next(), options.waitMs());
    if (!outcome.admitted) {
      throw serviceUnavailable('server_busy', `This server has ${max} anchors in hand and this one waited its turn for ${Math.round(options.waitMs() / 1000)} s; nothing was recorded and no quota was used. Retry the identical request.`, 2);
    }
  };
}

/** The anchors' bulkhead (v2 anchor and full, v1 chain anchor share it): ANCHOR_CONCURRENCY, ANCHOR_WAIT_MS. */
export const anchorBulkhead = bulkhead({ name: 'anchor', max: () => getConfig().anchorConcurrency, waitMs: () => getConfig().anchorWaitMs });
