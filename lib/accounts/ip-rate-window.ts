import type { RateDecision } from './limits.js';

/**
 * The per-IP limit of the public reads when it is enforced in process (PUBLIC_RATE_LIMIT=process:
 * `npm start` and the tests): a fixed window of one UTC minute per client address, counted in
 * memory.
 *
 * Why memory and not DynamoDB: this is a rate limit, not state anyone must find again. A lost
 * count (a restart) lets at most one more minute's budget through; a DynamoDB counter cost a paid
 * write on every public read, the main cost of a verify. In AWS the same limit is enforced at the
 * edge (the WAF rate-based rule of infra/edge-waf.cjs), where it spans every Lambda instance; a
 * per-instance counter there would multiply the budget by the number of instances, which is why
 * production does not use this class.
 *
 * Bounded: only the current window's addresses are kept (a new minute starts from an empty map),
 * and at most `maxAddresses` of them; past that, new addresses share one overflow count with the
 * same limit, so memory stays bounded whatever the traffic.
 */
export class IpRateWindow {
  private windowId = -1;
  private counts = new Map<string, number>();

  constructor(private readonly maxAddresses = 100_000) {}

  /**
   * Counts one request of `ip` in the minute of `now` against `limit`: the same fixed UTC minute,
   * decision and RateLimit numbers as the DynamoDB counters give (a refused request is counted
   * too, which changes nothing: it stays refused).
   */
  consume(ip: string, limit: number, now: Date): RateDecision {
    // The same fixed UTC minute as the DynamoDB counters (limits.ts minuteWindow).
    const start = Math.floor(now.getTime() / 60_000) * 60_000;
    const w = { id: start, end: new Date(start + 60_000) };
    if (w.id !== this.windowId) {
      // Windows are fixed and named: a clock that goes back a minute simply starts a new map.
      this.windowId = w.id;
      this.counts = new Map();
    }
    ip = ip.slice(0, 64);
    const key = this.counts.has(ip) || this.counts.size < this.maxAddresses ? ip : OVERFLOW;
    const count = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, count);
    const resetSeconds = Math.max(1, Math.ceil((w.end.getTime() - now.getTime()) / 1000));
    return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetSeconds };
  }
}

const OVERFLOW = '\u0000overflow';
