import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createKeyAuthDeps, type KeyAuthDeps } from '../../lib/deps/key-auth.js';
import type { TierName } from '../../lib/accounts/tiers.js';
import { getDb } from '../../lib/deps/core.js';
import { createApp } from '../../lib/http/app.js';
import { apiKeyAuth } from '../../lib/http/auth.js';
import { useStack } from '../support/stack.js';
import { waitFor } from '../support/wait.js';
import { body, evidenceTestApp, frozenClock, registerDirect, testDeps, withKey } from '../accounts/support.js';

// At module level, not in a `before` hook (see test/functions/lambda-handler.test.ts).
await useStack();

/** Mid-minute, so that a burst of requests stays in one window whatever the real time. */
const MID_MINUTE = '2030-11-22T10:15:30.000Z';

/** A DynamoDB client that records each call: its command, and how many other calls were in flight when it started. */
function recordingDb() {
  const base = getDb();
  const calls: { command: string; table: string; concurrent: number; at: number }[] = [];
  let inFlight = 0;
  const db = Object.create(base) as typeof base;
  db.send = (async (command: Parameters<typeof base.send>[0]) => {
    calls.push({ command: command.constructor.name, table: String((command.input as { TableName?: string }).TableName), concurrent: inFlight, at: performance.now() });
    inFlight++;
    try {
      return await base.send(command);
    } finally {
      inFlight--;
    }
  }) as typeof base.send;
  return { db, calls };
}

/** Key-auth dependencies of `deps`' configuration and clock whose limits count their calls (and fail as told). */
function withLimits(deps: KeyAuthDeps, patch: { failCharge?: boolean }) {
  const counts = { charges: 0, holds: 0, refunds: 0 };
  const limits = Object.create(deps.limits) as KeyAuthDeps['limits'];
  limits.charge = async (accountId: string, tier: TierName, holdId?: string, options?: { rate?: boolean }) => {
    counts.charges++;
    if (holdId) counts.holds++;
    if (patch.failCharge) throw new Error('meter unavailable');
    return deps.limits.charge(accountId, tier, holdId, options);
  };
  limits.refundQuota = async (reservation) => {
    counts.refunds++;
    return deps.limits.refundQuota(reservation);
  };
  return { deps: { ...deps, limits } as KeyAuthDeps, counts };
}

function quotaApp(deps: KeyAuthDeps, feature: 'hash' | 'anchor' = 'hash') {
  const app = createApp();
  app.use('*', apiKeyAuth({ feature, charge: 'quota', deps: () => deps }));
  app.post('/op', (c) => c.json({ ok: true }));
  return app;
}

async function used(deps: KeyAuthDeps, accountId: string): Promise<number> {
  return (await deps.limits.usage(accountId, 'free')).used;
}

describe('API key, rate and quota on a quota-counted endpoint', () => {
  it('reads the key once per API_KEY_CACHE_MS, charges rate and quota in one conditional write, and settles on the next charge: one DynamoDB call per request', async () => {
    const deps = testDeps({ clock: frozenClock(MID_MINUTE) });
    const account = await registerDirect(deps);
    const { db, calls } = recordingDb();
    const keyAuth = createKeyAuthDeps({ config: { ...deps.config, apiKeyCacheMs: 5000 }, db, clock: deps.clock });
    const app = quotaApp(keyAuth);
    assert.equal((await app.request('/op', withKey(account.api_key))).status, 200); // reads the key, records last_used_at
    calls.length = 0;
    for (let i = 0; i < 3; i++) assert.equal((await app.request('/op', withKey(account.api_key))).status, 200);
    assert.deepEqual(
      calls.map((c) => [c.command, c.table]),
      Array.from({ length: 3 }, () => ['UpdateCommand', deps.config.tables.counters]),
      'one meter write per request: no key read, no settle of its own',
    );
    // The last request's settle waits for a charge that does not come: it goes out by itself.
    await keyAuth.limits.flushSettles();
    assert.deepEqual(calls.slice(3).map((c) => [c.command, c.table]), [['UpdateCommand', deps.config.tables.counters]]);
    assert.equal(await used(deps, account.account_id), 4);
    const open = (await deps.limits.openHolds()).holds.filter((h) => h.counterKey.includes(account.account_id));
    assert.deepEqual(open, [], 'no hold stays open after completed requests');
  });

  it('a settle no charge carries goes out by itself once it has waited a second; one a charge carried is never sent again', async () => {
    const deps = testDeps({ clock: frozenClock(MID_MINUTE) });
    const account = await registerDirect(deps);
    const { db, calls } = recordingDb();
    const keyAuth = createKeyAuthDeps({ config: { ...deps.config, apiKeyCacheMs: 5000 }, db, clock: deps.clock });
    const app = quotaApp(keyAuth);
    assert.equal((await app.request('/op', withKey(account.api_key))).status, 200);
    // 700 ms later (timers never fire early), the second request carries the first one's settle.
    await new Promise((r) => setTimeout(r, 700));
    const secondStart = performance.now(); // its settle begins waiting after this
    assert.equal((await app.request('/op', withKey(account.api_key))).status, 200);
    calls.length = 0;
    const openHolds = async () => (await deps.limits.openHolds()).holds.filter((h) => h.counterKey.includes(account.account_id)).length;
    // The second request's settle: no charge comes, the timer sends it (one write), and nothing else goes out.
    await waitFor('the last settle to go out by itself', 20_000, async () => ((await openHolds()) === 0 ? true : undefined));
    await new Promise((r) => setTimeout(r, 1500));
    assert.deepEqual(calls.map((c) => [c.command, c.table]), [['UpdateCommand', deps.config.tables.counters]], 'one settle write, no second for the settle the charge carried');
    assert.ok((calls[0]?.at ?? 0) - secondStart >= 1000, `the second settle waited its second for a charge: sent ${Math.round((calls[0]?.at ?? 0) - secondStart)} ms after its request began`);
    assert.equal(await used(deps, account.account_id), 2);
  });

  it('spends the rate unit of a request the quota refuses, as every authenticated request does', async () => {
    const deps = testDeps({ clock: frozenClock(MID_MINUTE), tiers: { free: { monthly_quota: 1, rate_per_minute: 10 } } });
    const account = await registerDirect(deps);
    const app = evidenceTestApp(deps);
    const first = await app.request('/op', withKey(account.api_key));
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('ratelimit-remaining'), '9');
    const refused = await app.request('/op', withKey(account.api_key));
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('content-type'), 'application/problem+json');
    assert.equal(refused.headers.get('ratelimit-limit'), '10');
    assert.equal(refused.headers.get('ratelimit-remaining'), '8');
    assert.equal(refused.headers.get('ratelimit-reset'), '30');
    assert.equal(refused.headers.get('retry-after'), String((Date.parse('2030-12-01T00:00:00Z') - Date.parse(MID_MINUTE)) / 1000));
    const problem = await body(refused);
    assert.equal(problem.code, 'quota_exceeded');
    assert.equal(problem.status, 429);
    assert.equal(problem.resets_at, '2030-12-01T00:00:00.000Z');
    assert.equal((await app.request('/op', withKey(account.api_key))).headers.get('ratelimit-remaining'), '7');
    assert.equal(await used(deps, account.account_id), 1);
  });

  it('answers rate_limit_exceeded, not quota_exceeded, when both are spent, and keeps the quota as it was', async () => {
    const deps = testDeps({ clock: frozenClock(MID_MINUTE), tiers: { free: { monthly_quota: 1, rate_per_minute: 2 } } });
    const account = await registerDirect(deps);
    const app = evidenceTestApp(deps);
    assert.equal((await app.request('/op', withKey(account.api_key))).status, 200);
    assert.equal((await body(await app.request('/op', withKey(account.api_key)))).code, 'quota_exceeded');
    const res = await app.request('/op', withKey(account.api_key));
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '30');
    assert.equal(res.headers.get('ratelimit-remaining'), '0');
    assert.equal((await body(res)).code, 'rate_limit_exceeded');
    assert.equal(await used(deps, account.account_id), 1);
  });

  it('charges nothing for a request the rate refuses: its quota is not touched', async () => {
    const deps = testDeps({ clock: frozenClock(MID_MINUTE), tiers: { free: { monthly_quota: 100, rate_per_minute: 1 } } });
    const account = await registerDirect(deps);
    const { deps: patched, counts } = withLimits(deps, {});
    const app = quotaApp(patched);
    assert.equal((await app.request('/op', withKey(account.api_key))).status, 200);
    const res = await app.request('/op', withKey(account.api_key));
    assert.equal(res.status, 429);
    assert.equal((await body(res)).code, 'rate_limit_exceeded');
    assert.deepEqual(counts, { charges: 2, holds: 2, refunds: 0 });
    assert.equal(await used(deps, account.account_id), 1);
  });

  it('holds no quota for a request the tier gate refuses, and spends its rate unit', async () => {
    const deps = testDeps({ clock: frozenClock(MID_MINUTE) });
    const account = await registerDirect(deps);
    const { deps: patched, counts } = withLimits(deps, {});
    const res = await quotaApp(patched, 'anchor').request('/op', withKey(account.api_key));
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('ratelimit-remaining'), '9');
    assert.equal((await body(res)).code, 'tier_insufficient');
    assert.deepEqual(counts, { charges: 1, holds: 0, refunds: 0 });
    assert.equal(await used(deps, account.account_id), 0);
  });

  it('answers 500 without details when the meter fails, and charges nothing', async () => {
    const deps = testDeps({ clock: frozenClock(MID_MINUTE) });
    const account = await registerDirect(deps);
    const { deps: patched, counts } = withLimits(deps, { failCharge: true });
    const res = await quotaApp(patched).request('/op', withKey(account.api_key));
    assert.equal(res.status, 500);
    assert.doesNotMatch(JSON.stringify(await body(res)), /meter unavailable/);
    assert.deepEqual(counts, { charges: 1, holds: 1, refunds: 0 });
    assert.equal(await used(deps, account.account_id), 0);
  });
});
