import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { app as adminSetTierApp } from '../../functions/v2/admin-set-tier.js';
import { app as usageApp } from '../../functions/v2/account-usage.js';
import { getConfig } from '../../lib/deps/core.js';
import { createApp } from '../../lib/http/app.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { useStack } from '../support/stack.js';
import { bearer, body, evidenceTestApp, fromRandomIp, frozenClock, provider, registerDirect, testDeps, withKey, withAccountDeps } from '../accounts/support.js';
import type { AccountDeps } from '../../lib/deps/accounts.js';

// At module level, not in a `before` hook (see test/functions/lambda-handler.test.ts).
await useStack();

/** Mid-minute, so that a burst of requests stays in one window whatever the real time. */
const MID_MINUTE = '2030-11-22T10:15:30.000Z';

async function usage(deps: AccountDeps, token: string) {
  const res = await withAccountDeps(usageApp, deps).request('/api/v2/account/usage', { headers: bearer(token) });
  assert.equal(res.status, 200);
  return body(res);
}

describe('per-minute rate limit of API-key requests', () => {
  it('sets RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset on a success', async () => {
    const deps = testDeps({ clock: frozenClock(MID_MINUTE) });
    const account = await registerDirect(deps);
    const res = await evidenceTestApp(deps).request('/op', withKey(account.api_key));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('ratelimit-limit'), '10');
    assert.equal(res.headers.get('ratelimit-remaining'), '9');
    assert.equal(res.headers.get('ratelimit-reset'), '30');
    // The current draft's fields name the same budget (Structured Fields).
    assert.equal(res.headers.get('ratelimit-policy'), '"account";q=10;w=60');
    assert.equal(res.headers.get('ratelimit'), '"account";r=9;t=30');
  });

  it('answers the 11th request within a minute on Free with 429, Retry-After and a detail naming the per-minute limit', async () => {
    const deps = testDeps({ clock: frozenClock(MID_MINUTE) });
    const account = await registerDirect(deps);
    const app = evidenceTestApp(deps);
    for (let i = 0; i < 10; i++) assert.equal((await app.request('/op', withKey(account.api_key))).status, 200);
    const res = await app.request('/op', withKey(account.api_key));
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '30');
    assert.equal(res.headers.get('ratelimit-limit'), '10');
    assert.equal(res.headers.get('ratelimit-remaining'), '0');
    assert.equal(res.headers.get('ratelimit-reset'), '30');
    assert.equal(res.headers.get('ratelimit'), '"account";r=0;t=30');
    const problem = await body(res);
    assert.equal(problem.code, 'rate_limit_exceeded');
    assert.match(String(problem.detail), /per-minute limit of the Free tier is 10 requests/);
  });

  it('counts all keys of an account together', async () => {
    const deps = testDeps({ clock: frozenClock(MID_MINUTE) });
    const account = await registerDirect(deps);
    const second = await deps.apiKeys.create(account.account_id, 'second');
    const app = evidenceTestApp(deps);
    for (let i = 0; i < 5; i++) await app.request('/op', withKey(account.api_key));
    for (let i = 0; i < 5; i++) await app.request('/op', withKey(second.api_key));
    assert.equal((await app.request('/op', withKey(second.api_key))).status, 429);
  });
});

describe('monthly quota of evidence operations', () => {
  it('answers 429 quota_exceeded once the quota is used, with Retry-After until the month ends', async () => {
    const deps = testDeps({ clock: frozenClock('2030-11-30T23:00:00.000Z'), tiers: { free: { monthly_quota: 3, rate_per_minute: 1000 } } });
    const account = await registerDirect(deps);
    const app = evidenceTestApp(deps);
    for (let i = 0; i < 3; i++) assert.equal((await app.request('/op', withKey(account.api_key))).status, 200);
    const res = await app.request('/op', withKey(account.api_key));
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '3600');
    const problem = await body(res);
    assert.equal(problem.code, 'quota_exceeded');
    assert.match(String(problem.detail), /Monthly quota exhausted: the Free tier includes 3 evidence operations per calendar month/);
    assert.match(String(problem.detail), /resets at 2030-12-01T00:00:00.000Z/);
    assert.deepEqual(await usage(deps, account.token), {
      tier: 'free',
      period_start: '2030-11-01T00:00:00.000Z',
      resets_at: '2030-12-01T00:00:00.000Z',
      monthly_quota: 3,
      used: 3,
      remaining: 0,
      rate_per_minute: 1000,
    });
  });

  it('lets exactly one of 20 concurrent requests through at quota - 1', async () => {
    const deps = testDeps({ tiers: { free: { monthly_quota: 5, rate_per_minute: 1000 } } });
    const account = await registerDirect(deps);
    const app = evidenceTestApp(deps);
    for (let i = 0; i < 4; i++) await app.request('/op', withKey(account.api_key));
    const responses = await Promise.all(Array.from({ length: 20 }, () => app.request('/op', withKey(account.api_key))));
    assert.equal(responses.filter((r) => r.status === 200).length, 1);
    assert.equal(responses.filter((r) => r.status === 429).length, 19);
    assert.equal((await usage(deps, account.token)).used, 5);
  });

  it('consumes nothing for a request the handler refuses or that throws', async () => {
    const deps = testDeps({ tiers: { free: { rate_per_minute: 1000 } } });
    const account = await registerDirect(deps);
    const app = evidenceTestApp(deps);
    assert.equal((await app.request('/op', withKey(account.api_key))).status, 200);
    assert.equal((await app.request('/fail', withKey(account.api_key))).status, 400);
    assert.equal((await app.request('/boom', withKey(account.api_key))).status, 500);
    assert.equal((await usage(deps, account.token)).used, 1);
  });

  it('consumes nothing for a request the tier gate or the rate limit refuses', async () => {
    const deps = testDeps({ clock: frozenClock(MID_MINUTE), tiers: { free: { rate_per_minute: 2 } } });
    const account = await registerDirect(deps);
    assert.equal((await evidenceTestApp(deps, 'anchor').request('/op', withKey(account.api_key))).status, 403);
    assert.equal((await evidenceTestApp(deps).request('/op', withKey(account.api_key))).status, 200);
    assert.equal((await evidenceTestApp(deps).request('/op', withKey(account.api_key))).status, 429);
    assert.equal((await usage(deps, account.token)).used, 1);
  });

  it('counts a request at 23:59:59.999 on the last day of a month and one a millisecond later in different months', async () => {
    const clock = frozenClock('2030-11-30T23:59:59.999Z');
    const deps = testDeps({ clock });
    const account = await registerDirect(deps);
    const app = evidenceTestApp(deps);
    assert.equal((await app.request('/op', withKey(account.api_key))).status, 200);
    clock.advance(1);
    assert.equal((await app.request('/op', withKey(account.api_key))).status, 200);
    const december = await usage(deps, account.token);
    assert.equal(december.used, 1);
    assert.equal(december.period_start, '2030-12-01T00:00:00.000Z');
    clock.set('2030-11-30T23:59:59.999Z');
    assert.equal((await usage(deps, account.token)).used, 1);
  });

  it('starts a new month at zero even when no reset ran', async () => {
    const clock = frozenClock('2030-10-15T12:00:00.000Z');
    const deps = testDeps({ clock, tiers: { free: { monthly_quota: 1 } } });
    const account = await registerDirect(deps);
    const app = evidenceTestApp(deps);
    await app.request('/op', withKey(account.api_key));
    assert.equal((await app.request('/op', withKey(account.api_key))).status, 429);
    clock.set('2030-11-01T00:00:00.000Z');
    assert.equal((await app.request('/op', withKey(account.api_key))).status, 200);
  });
});

describe('tier gate', () => {
  it('answers anchor on Free with 403 naming Pro, and lets it through after an admin upgrade', async () => {
    const deps = testDeps();
    const account = await registerDirect(deps);
    const anchor = evidenceTestApp(deps, 'anchor');
    const refused = await anchor.request('/op', withKey(account.api_key));
    assert.equal(refused.status, 403);
    assert.ok(refused.headers.get('ratelimit-limit'));
    const problem = await body(refused);
    assert.equal(problem.code, 'tier_insufficient');
    assert.equal(problem.required_tier, 'pro');
    assert.match(String(problem.detail), /needs the Pro tier/);

    const admin = withAccountDeps(adminSetTierApp, deps);
    const upgrade = await admin.request(`/api/v2/admin/accounts/${account.account_id}/tier`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...bearer(getConfig().adminToken ?? '') },
      body: JSON.stringify({ tier: 'pro' }),
    });
    assert.equal(upgrade.status, 200);

    const allowed = await anchor.request('/op', withKey(account.api_key));
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers.get('ratelimit-limit'), '200');
  });

  it('answers the stand-alone timestamp on Free with 403 naming Starter', async () => {
    const deps = testDeps();
    const account = await registerDirect(deps);
    const problem = await body(await evidenceTestApp(deps, 'timestamp').request('/op', withKey(account.api_key)));
    assert.equal(problem.required_tier, 'starter');
    assert.match(String(problem.detail), /Starter tier/);
  });
});

describe('per-IP limit of public endpoints', () => {
  const deps = testDeps({ clock: frozenClock(MID_MINUTE), config: { publicRatePerMinute: 3 } });
  const app = createApp({ publicCors: true });
  app.use('*', publicRateLimit({ deps: provider(deps) }));
  app.get('/public', (c) => c.json({ ok: true }));

  it('answers 429 rate_limit_exceeded after the per-minute budget of one client address', async () => {
    const ip = fromRandomIp();
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await app.request('/public', {}, ip)).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    const res = await app.request('/public', {}, ip);
    assert.equal(res.headers.get('retry-after'), '30');
    assert.equal(res.headers.get('ratelimit-limit'), '3');
    assert.equal((await body(res)).code, 'rate_limit_exceeded');
  });

  it('keeps separate budgets for different client addresses', async () => {
    const ip = fromRandomIp();
    for (let i = 0; i < 3; i++) await app.request('/public', {}, ip);
    assert.equal((await app.request('/public', {}, fromRandomIp())).status, 200);
  });
});
