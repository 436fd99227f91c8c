import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { app as accountInfoApp } from '../../functions/v2/account-info.js';
import { useStack } from '../support/stack.js';
import { bearer, body, registerDirect, testDeps, uniqueEmail, withAccountDeps } from '../accounts/support.js';

// At module level, not in a `before` hook (see test/functions/lambda-handler.test.ts).
await useStack();

const PATH = '/api/v2/account/info';
const deps = testDeps();
const app = withAccountDeps(accountInfoApp, deps);

describe('GET /api/v2/account/info', () => {
  it('describes the account, its keys, limits and features, without secrets', async () => {
    const email = uniqueEmail();
    const account = await deps.accounts.register({ email, password: 'correct horse battery staple', name: 'Bob' });
    const res = await app.request(PATH, { headers: bearer(account.token) });
    assert.equal(res.status, 200);
    const info = await body(res);
    assert.deepEqual(Object.keys(info).sort(), ['account_id', 'active_keys', 'created_at', 'email', 'features', 'limits', 'max_keys', 'name', 'tier']);
    assert.equal(info.account_id, account.account_id);
    assert.equal(info.email, email);
    assert.equal(info.name, 'Bob');
    assert.equal(info.tier, 'free');
    assert.equal(info.active_keys, 1);
    assert.equal(info.max_keys, 5);
    assert.deepEqual(info.limits, { monthly_quota: 50, rate_per_minute: 10, price_eur_per_month: 0 });
    assert.deepEqual(info.features, ['hash', 'verify']);
  });

  it('reflects a tier change at once', async () => {
    const account = await registerDirect(deps);
    await deps.accounts.setTier(account.account_id, 'pro');
    const info = await body(await app.request(PATH, { headers: bearer(account.token) }));
    assert.equal(info.tier, 'pro');
    assert.deepEqual(info.limits, { monthly_quota: 2000, rate_per_minute: 200, price_eur_per_month: 99 });
    assert.deepEqual(info.features, ['hash', 'verify', 'timestamp', 'ed25519_signing', 'pdf_certificate', 'anchor', 'full']);
  });

  it('answers 401 invalid_token for a valid token whose account does not exist, as every account endpoint does', async () => {
    const { token } = await deps.tokens.issue('acc_never_registered');
    const res = await app.request(PATH, { headers: bearer(token) });
    assert.equal(res.status, 401);
    assert.equal((await body(res)).code, 'invalid_token');
  });
});
