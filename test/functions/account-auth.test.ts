import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SignJWT, UnsecuredJWT, generateKeyPair } from 'jose';
import type { Hono } from 'hono';
import { app as accountInfoApp } from '../../functions/v2/account-info.js';
import { app as keysCreateApp } from '../../functions/v2/account-keys-create.js';
import { app as keysDeleteApp } from '../../functions/v2/account-keys-delete.js';
import { app as keysListApp } from '../../functions/v2/account-keys-list.js';
import { app as usageApp } from '../../functions/v2/account-usage.js';
import { generateApiKey } from '../../lib/accounts/api-key-format.js';
import { loadJwtSecret } from '../../lib/accounts/jwt-secret.js';
import { getConfig } from '../../lib/deps/core.js';
import { useStack } from '../support/stack.js';
import { bearer, body, evidenceTestApp, frozenClock, registerDirect, testDeps, withKey, withAccountDeps } from '../accounts/support.js';

// At module level, not in a `before` hook (see test/functions/lambda-handler.test.ts).
await useStack();

const deps = testDeps();
const keysApp = withAccountDeps(keysListApp, deps);
const evidence = evidenceTestApp(deps);
const account = await registerDirect(deps);
const secret = await loadJwtSecret(getConfig().jwt);
const { issuer, audience } = getConfig().jwt;
const now = Math.floor(Date.now() / 1000);
const claims = (overrides: Record<string, unknown> = {}) => ({ iss: issuer, aud: audience, sub: account.account_id, iat: now, exp: now + 600, ...overrides });
const hs256 = (c: Record<string, unknown>) => new SignJWT(c).setProtectedHeader({ alg: 'HS256' }).sign(secret);

async function assertInvalidToken(headers: Record<string, string>) {
  const res = await keysApp.request('/api/v2/account/keys', { headers });
  assert.equal(res.status, 401);
  assert.equal(res.headers.get('content-type'), 'application/problem+json');
  assert.equal((await body(res)).code, 'invalid_token');
}

async function assertInvalidApiKey(init: RequestInit) {
  const res = await evidence.request('/op', init);
  assert.equal(res.status, 401);
  assert.equal((await body(res)).code, 'invalid_api_key');
  assert.equal(res.headers.get('ratelimit-limit'), null);
}

describe('JWT authentication of account endpoints', () => {
  it('accepts the token from registration', async () => {
    assert.equal((await keysApp.request('/api/v2/account/keys', { headers: bearer(account.token) })).status, 200);
  });

  it('accepts a token it did not issue itself but that is HS256 with the right claims and secret', async () => {
    assert.equal((await keysApp.request('/api/v2/account/keys', { headers: bearer(await hs256(claims())) })).status, 200);
  });

  it('answers 401 invalid_token without a token or with another scheme', async () => {
    await assertInvalidToken({});
    await assertInvalidToken({ authorization: `Basic ${Buffer.from('a:b').toString('base64')}` });
    await assertInvalidToken({ authorization: 'Bearer' });
  });

  it('answers 401 invalid_token for a malformed token', async () => {
    await assertInvalidToken(bearer('not.a.jwt'));
  });

  it('answers 401 invalid_token for alg none', async () => {
    await assertInvalidToken(bearer(new UnsecuredJWT(claims()).encode()));
  });

  it('answers 401 invalid_token for a token signed with HS512', async () => {
    await assertInvalidToken(bearer(await new SignJWT(claims()).setProtectedHeader({ alg: 'HS512' }).sign(secret)));
  });

  it('answers 401 invalid_token for a token signed with RS256', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    await assertInvalidToken(bearer(await new SignJWT(claims()).setProtectedHeader({ alg: 'RS256' }).sign(privateKey)));
  });

  it('answers 401 invalid_token for a tampered token', async () => {
    const [h, , s] = account.token.split('.');
    const payload = Buffer.from(JSON.stringify(claims({ sub: 'acc_someone_else' }))).toString('base64url');
    await assertInvalidToken(bearer(`${h}.${payload}.${s}`));
  });

  it('answers 401 invalid_token for an expired token', async () => {
    const ttl = getConfig().jwt.ttlSeconds;
    const issuedEarlier = testDeps({ clock: frozenClock(new Date(Date.now() - (ttl + 5) * 1000).toISOString()) });
    const { token } = await issuedEarlier.tokens.issue(account.account_id);
    await assertInvalidToken(bearer(token));
  });

  it('answers 401 invalid_token for a wrong audience or issuer', async () => {
    await assertInvalidToken(bearer(await hs256(claims({ aud: 'another-api' }))));
    await assertInvalidToken(bearer(await hs256(claims({ iss: 'another-issuer' }))));
  });

  it('answers 401 invalid_token for a token signed with another secret', async () => {
    const other = new TextEncoder().encode('x'.repeat(48));
    await assertInvalidToken(bearer(await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256' }).sign(other)));
  });

  it('answers 401 invalid_token for an API key sent as a bearer token', async () => {
    await assertInvalidToken(bearer(account.api_key));
  });

  it('answers 401 invalid_token for a token issued in the future or living longer than configured', async () => {
    const ttl = getConfig().jwt.ttlSeconds;
    await assertInvalidToken(bearer(await hs256(claims({ iat: now + 365 * 86400, exp: now + 365 * 86400 + 600 }))));
    await assertInvalidToken(bearer(await hs256(claims({ exp: now + 100 * 365 * 86400 }))));
    await assertInvalidToken(bearer(await hs256(claims({ exp: now + ttl + 1 }))));
  });

  it('answers 401 invalid_token on every account endpoint for a token whose account does not exist', async () => {
    const token = await hs256(claims({ sub: 'acc_deleted0000000000000' }));
    const apps: [Hono<never>, string, RequestInit][] = [
      [keysApp as never, '/api/v2/account/keys', { headers: bearer(token) }],
      [withAccountDeps(keysCreateApp, deps) as never, '/api/v2/account/keys', { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: '{}' }],
      [withAccountDeps(keysDeleteApp, deps) as never, '/api/v2/account/keys/key_0000000000000000', { method: 'DELETE', headers: bearer(token) }],
      [withAccountDeps(usageApp, deps) as never, '/api/v2/account/usage', { headers: bearer(token) }],
      [withAccountDeps(accountInfoApp, deps) as never, '/api/v2/account/info', { headers: bearer(token) }],
    ];
    for (const [app, path, init] of apps) {
      const res = await app.request(path, init);
      assert.equal(res.status, 401, `${init.method ?? 'GET'} ${path}`);
      assert.equal((await body(res)).code, 'invalid_token');
    }
  });

  it('limits the account endpoints per account and minute, with RateLimit headers and Retry-After', async () => {
    const limited = testDeps({ config: { accountRatePerMinute: 3 } });
    const own = await registerDirect(limited);
    const other = await registerDirect(limited);
    const app = withAccountDeps(keysListApp, limited);
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 4; i++) {
      last = await app.request('/api/v2/account/keys', { headers: bearer(own.token) });
      statuses.push(last.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    assert.equal(last?.headers.get('ratelimit-limit'), '3');
    assert.equal(last?.headers.get('ratelimit-remaining'), '0');
    assert.ok(Number(last?.headers.get('retry-after')) >= 1);
    assert.equal((await body(last as Response)).code, 'rate_limit_exceeded');
    // Another account has its own budget.
    assert.equal((await app.request('/api/v2/account/keys', { headers: bearer(other.token) })).status, 200);
  });
});

describe('API key authentication of evidence endpoints', () => {
  it('accepts a valid key and names the caller', async () => {
    const res = await evidence.request('/op', withKey(account.api_key));
    assert.equal(res.status, 200);
    assert.deepEqual(await body(res), { ok: true, account_id: account.account_id, tier: 'free', key_id: account.key_id });
  });

  it('answers 401 invalid_api_key without a key', async () => {
    await assertInvalidApiKey({ method: 'POST' });
  });

  it('answers 401 invalid_api_key for a JWT sent as an API key', async () => {
    await assertInvalidApiKey(withKey(account.token));
  });

  it('answers 401 invalid_api_key for a malformed key', async () => {
    await assertInvalidApiKey(withKey('eas_tooshort'));
    await assertInvalidApiKey(withKey('Bearer something'));
  });

  it('answers 401 invalid_api_key for a key whose checksum does not match', async () => {
    const key = account.api_key;
    await assertInvalidApiKey(withKey(`${key.slice(0, 8)}${key[8] === 'A' ? 'B' : 'A'}${key.slice(9)}`));
  });

  it('answers 401 invalid_api_key for a well-formed key that was never issued', async () => {
    await assertInvalidApiKey(withKey(generateApiKey()));
  });

  it('answers 401 invalid_api_key for a deactivated key', async () => {
    const other = await registerDirect(deps);
    await deps.apiKeys.deactivate(other.account_id, other.key_id);
    await assertInvalidApiKey(withKey(other.api_key));
  });
});
