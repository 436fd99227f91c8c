import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { app as usageApp } from '../../functions/v2/account-usage.js';
import { useStack } from '../support/stack.js';
import { bearer, body, evidenceTestApp, frozenClock, registerDirect, testDeps, withKey, withAccountDeps } from '../accounts/support.js';

// At module level, not in a `before` hook (see test/functions/lambda-handler.test.ts).
await useStack();

const PATH = '/api/v2/account/usage';

describe('GET /api/v2/account/usage', () => {
  it("reports a new account's month: nothing used, the Free quota and rate", async () => {
    const deps = testDeps({ clock: frozenClock('2030-02-14T08:00:00.000Z') });
    const account = await registerDirect(deps);
    const res = await withAccountDeps(usageApp, deps).request(PATH, { headers: bearer(account.token) });
    assert.equal(res.status, 200);
    assert.deepEqual(await body(res), {
      tier: 'free',
      period_start: '2030-02-01T00:00:00.000Z',
      resets_at: '2030-03-01T00:00:00.000Z',
      monthly_quota: 50,
      used: 0,
      remaining: 50,
      rate_per_minute: 10,
    });
  });

  it('moves with every successful evidence operation', async () => {
    const deps = testDeps();
    const account = await registerDirect(deps);
    const app = evidenceTestApp(deps);
    await app.request('/op', withKey(account.api_key));
    await app.request('/op', withKey(account.api_key));
    const usage = await body(await withAccountDeps(usageApp, deps).request(PATH, { headers: bearer(account.token) }));
    assert.equal(usage.used, 2);
    assert.equal(usage.remaining, 48);
  });

  it('shows the figures of TIER_LIMITS when the operator overrides the tier table', async () => {
    const deps = testDeps({ tiers: { free: { monthly_quota: 7, rate_per_minute: 3 } } });
    const account = await registerDirect(deps);
    const usage = await body(await withAccountDeps(usageApp, deps).request(PATH, { headers: bearer(account.token) }));
    assert.equal(usage.monthly_quota, 7);
    assert.equal(usage.rate_per_minute, 3);
  });

  it('answers 401 without a token', async () => {
    assert.equal((await withAccountDeps(usageApp, testDeps()).request(PATH)).status, 401);
  });
});
