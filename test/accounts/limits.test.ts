import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { CounterTable } from '../../lib/store/counter-table.js';
import { counterKeys, minuteWindow, monthWindow, newHoldId } from '../../lib/accounts/limits.js';
import { OWNER_GRACE_MS, reconcileQuotaHolds } from '../../lib/accounts/quota-holds.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { useStack } from '../support/stack.js';
import { frozenClock, testDeps } from './support.js';

// At module level, not in a `before` hook: on Node 20 an `after()` registered inside a root
// `before` hook runs as soon as that hook ends (see test/functions/lambda-handler.test.ts).
await useStack();

describe('limit windows', () => {
  it('put 23:59:59.999 on the last day of a month and one millisecond later into different months', () => {
    const last = monthWindow(new Date('2026-11-30T23:59:59.999Z'));
    const next = monthWindow(new Date('2026-12-01T00:00:00.000Z'));
    assert.equal(last.id, '2026-11');
    assert.equal(next.id, '2026-12');
    assert.equal(last.end.toISOString(), '2026-12-01T00:00:00.000Z');
  });

  it('roll December over into January of the next year', () => {
    assert.equal(monthWindow(new Date('2026-12-31T23:59:59.999Z')).id, '2026-12');
    assert.equal(monthWindow(new Date('2027-01-01T00:00:00.000Z')).id, '2027-01');
  });

  it('cut minutes in UTC', () => {
    const w = minuteWindow(new Date('2026-11-22T10:15:59.999Z'));
    assert.equal(w.id, '2026-11-22T10:15');
    assert.equal(w.end.toISOString(), '2026-11-22T10:16:00.000Z');
    assert.equal(minuteWindow(new Date('2026-11-22T10:16:00.000Z')).id, '2026-11-22T10:16');
  });
});

describe('limit counters on the embedded DynamoDB', () => {
  it('let exactly one of 20 concurrent reservations through at quota - 1', async () => {
    const deps = testDeps({ tiers: { free: { monthly_quota: 10 } } });
    const account = `acc_quota_${Date.now()}`;
    for (let i = 0; i < 9; i++) assert.equal((await deps.limits.reserveQuota(account, 'free')).allowed, true);
    const results = await Promise.all(Array.from({ length: 20 }, () => deps.limits.reserveQuota(account, 'free')));
    assert.equal(results.filter((r) => r.allowed).length, 1);
    assert.equal((await deps.limits.usage(account, 'free')).used, 10);
  });

  it('give a refunded unit back, and never go below zero', async () => {
    const deps = testDeps();
    const account = `acc_refund_${Date.now()}`;
    const r = await deps.limits.reserveQuota(account, 'free');
    await deps.limits.refundQuota(r);
    await deps.limits.refundQuota(r);
    assert.equal((await deps.limits.usage(account, 'free')).used, 0);
  });

  it('count a reservation at 23:59:59.999 and one a millisecond later in different months', async () => {
    const clock = frozenClock('2030-11-30T23:59:59.999Z');
    const deps = testDeps({ clock });
    const account = `acc_edge_${Date.now()}`;
    await deps.limits.reserveQuota(account, 'free');
    clock.advance(1);
    const december = await deps.limits.reserveQuota(account, 'free');
    assert.equal(december.used, 1);
    assert.equal(december.counterKey, `meter#${account}#2030-12`);
    clock.set('2030-11-30T23:59:59.999Z');
    assert.equal((await deps.limits.usage(account, 'free')).used, 1);
  });

  it('refuse the 11th request of a minute on Free and allow again in the next minute', async () => {
    const clock = frozenClock('2030-11-22T10:15:30.000Z');
    const deps = testDeps({ clock });
    const account = `acc_rate_${Date.now()}`;
    const decisions = [];
    for (let i = 0; i < 11; i++) decisions.push(await deps.limits.consumeRate(account, 'free'));
    assert.deepEqual(decisions.map((d) => d.allowed), [...Array(10).fill(true), false]);
    assert.deepEqual(decisions.map((d) => d.remaining).slice(-3), [1, 0, 0]);
    assert.equal(decisions[10]?.resetSeconds, 30);
    clock.advance(30_000);
    assert.equal((await deps.limits.consumeRate(account, 'free')).allowed, true);
  });

  it('refuse everything when a tier is configured with a quota of zero', async () => {
    const deps = testDeps({ tiers: { free: { monthly_quota: 0 } } });
    assert.equal((await deps.limits.reserveQuota(`acc_zero_${Date.now()}`, 'free')).allowed, false);
  });

  it('write expires_at as the end of the window in epoch seconds', async () => {
    const clock = frozenClock('2030-11-22T10:15:30.000Z');
    const deps = testDeps({ clock });
    const account = `acc_ttl_${Date.now()}`;
    await deps.limits.reserveQuota(account, 'free');
    const item = await getDb().send(new GetCommand({ TableName: getConfig().tables.counters, Key: { pk: `meter#${account}#2030-11` } }));
    assert.equal(item.Item?.expires_at, Date.parse('2030-12-01T00:00:00Z') / 1000);
  });

  it('do not trust a counter whose expires_at has passed, as DynamoDB deletes it late', async () => {
    const counters = new CounterTable(getDb(), getConfig().tables.counters);
    const pk = counterKeys.account(`acc_stale_${Date.now()}`, monthWindow(new Date('2026-11-22T10:00:00Z')));
    await getDb().send(new PutCommand({ TableName: getConfig().tables.counters, Item: { pk, count: 7, expires_at: 1000 } }));
    assert.equal(await counters.read(pk, 2000), 0);
    assert.equal(await counters.read(pk, 999), 7);
  });

  it("leave a hold younger than the owner's grace to its request: the reconciler neither judges nor reads it", async () => {
    const deps = testDeps();
    const account = `acc_young_${Date.now()}`;
    const now = Date.now();
    const holdId = newHoldId('a', new Date(now), `${'ab'.repeat(32)}:claim-1`);
    const charged = await deps.limits.charge(account, 'pro', holdId);
    assert.equal(charged.quota?.allowed, true);
    const judged = async (nowMs: number) => {
      const seen: string[] = [];
      await reconcileQuotaHolds(deps.limits, async (hold) => (hold.counterKey.includes(account) && seen.push(hold.holdId), 'wait'), { nowMs, requestMaxMs: 120_000 });
      return seen;
    };
    assert.deepEqual(await judged(now + OWNER_GRACE_MS - 1_000), [], 'young: left to its request');
    assert.deepEqual(await judged(now + OWNER_GRACE_MS + 1_000), [holdId], 'past the grace: judged');
  });
});

