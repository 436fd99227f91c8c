/**
 * The in-memory per-IP window of the public reads (PUBLIC_RATE_LIMIT=process): the same fixed UTC
 * minute and RateLimit numbers as the DynamoDB counters, a new minute starting from zero, and a
 * bounded map whatever the number of addresses.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IpRateWindow } from '../../lib/accounts/ip-rate-window.js';

const at = (iso: string) => new Date(iso);

describe('IpRateWindow', () => {
  it('allows `limit` requests of one address in a UTC minute, then refuses until the minute ends', () => {
    const w = new IpRateWindow();
    const decisions = [1, 2, 3, 4].map(() => w.consume('198.51.100.1', 3, at('2026-11-25T10:15:20.500Z')));
    assert.deepEqual(decisions.map((d) => d.allowed), [true, true, true, false]);
    assert.deepEqual(decisions.map((d) => d.remaining), [2, 1, 0, 0]);
    assert.equal(decisions[3]?.resetSeconds, 40); // 10:16:00 − 10:15:20.5, rounded up
    assert.equal(decisions[3]?.limit, 3);
    // Another address has its own budget; the next minute starts from zero.
    assert.equal(w.consume('198.51.100.2', 3, at('2026-11-25T10:15:59.999Z')).allowed, true);
    const next = w.consume('198.51.100.1', 3, at('2026-11-25T10:16:00.000Z'));
    assert.deepEqual(next, { allowed: true, limit: 3, remaining: 2, resetSeconds: 60 });
  });

  it('keeps at most maxAddresses entries: further addresses share one overflow budget', () => {
    const w = new IpRateWindow(2);
    const now = at('2026-11-25T10:00:00Z');
    assert.equal(w.consume('a', 2, now).allowed, true);
    assert.equal(w.consume('b', 2, now).allowed, true);
    assert.equal(w.consume('c', 2, now).allowed, true);
    assert.equal(w.consume('d', 2, now).allowed, true);
    assert.equal(w.consume('e', 2, now).allowed, false, 'c, d and e share the overflow count');
    assert.equal(w.consume('a', 2, now).allowed, true, 'a known address keeps its own count');
  });
});
