import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { decodeJwt } from 'jose';
import { app as defaultRegisterApp } from '../../functions/v2/account-register.js';
import { isWellFormedApiKey } from '../../lib/accounts/api-key-format.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { useStack } from '../support/stack.js';
import type { PasswordHasher } from '../../lib/accounts/passwords.js';
import { PASSWORD, body, fastHasher, fromRandomIp, post, testDeps, uniqueEmail, withAccountDeps } from '../accounts/support.js';

// At module level, not in a `before` hook (see test/functions/lambda-handler.test.ts).
await useStack();

const PATH = '/api/v2/account/register';

describe('POST /api/v2/account/register', () => {
  it('creates a Free account with an API key and a JWT, on the production password cost', async () => {
    const email = uniqueEmail('Alice').replace('alice', 'Alice');
    const res = await defaultRegisterApp.request(PATH, post({ email, password: PASSWORD, name: 'Alice' }));
    assert.equal(res.status, 200);
    const b = await body(res);
    assert.deepEqual(Object.keys(b).sort(), ['account_id', 'api_key', 'email', 'expires_in', 'key_id', 'tier', 'token', 'token_type']);
    assert.equal(b.email, email.toLowerCase());
    assert.equal(b.tier, 'free');
    assert.equal(b.token_type, 'Bearer');
    assert.equal(b.expires_in, 3600);
    assert.equal(isWellFormedApiKey(String(b.api_key)), true);
    assert.equal(decodeJwt(String(b.token)).sub, b.account_id);
    assert.equal(res.headers.get('cache-control'), 'no-store');
  });

  it('answers 409 email_exists for an address already registered, whatever its case', async () => {
    const app = withAccountDeps(defaultRegisterApp, testDeps());
    const email = uniqueEmail();
    assert.equal((await app.request(PATH, post({ email, password: PASSWORD }))).status, 200);
    const res = await app.request(PATH, post({ email: email.toUpperCase(), password: PASSWORD }));
    assert.equal(res.status, 409);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    assert.equal((await body(res)).code, 'email_exists');
  });

  it('hashes the password before answering 409 email_exists, as for a new address (decisions.md "Accounts")', async () => {
    // A hasher that records what it hashed, around the real (fast) one.
    const hashed: string[] = [];
    const counting: PasswordHasher = { ...fastHasher, hash: (password) => (hashed.push(password), fastHasher.hash(password)) };
    const app = withAccountDeps(defaultRegisterApp, testDeps({ passwords: counting }));
    const email = uniqueEmail();
    assert.equal((await app.request(PATH, post({ email, password: PASSWORD }))).status, 200);
    assert.deepEqual(hashed, [PASSWORD]);
    const other = `${PASSWORD} but another one`;
    const res = await app.request(PATH, post({ email, password: other }));
    assert.equal(res.status, 409);
    assert.equal((await body(res)).code, 'email_exists');
    assert.deepEqual(hashed, [PASSWORD, other]);
    // The short-password 400 comes first, for either address: no hash.
    assert.equal((await app.request(PATH, post({ email, password: 'elevenchars' }))).status, 400);
    assert.equal(hashed.length, 2);
  });

  it('lets exactly one of 10 concurrent registrations of one address succeed and leaves one account', async () => {
    const app = withAccountDeps(defaultRegisterApp, testDeps());
    const email = uniqueEmail('race');
    const responses = await Promise.all(Array.from({ length: 10 }, () => app.request(PATH, post({ email, password: PASSWORD }))));
    const statuses = responses.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, ...Array(9).fill(409)]);
    const winner = await body(responses.find((r) => r.status === 200) as Response);
    const accounts = await getDb().send(
      new ScanCommand({
        TableName: getConfig().tables.accounts,
        FilterExpression: 'email = :e AND begins_with(pk, :acct)',
        ExpressionAttributeValues: { ':e': email, ':acct': 'acct#' },
      }),
    );
    assert.deepEqual(accounts.Items?.map((i) => i.account_id), [winner.account_id]);
  });

  it('refuses a password under 12 characters with 400 password_too_short', async () => {
    const app = withAccountDeps(defaultRegisterApp, testDeps());
    const res = await app.request(PATH, post({ email: uniqueEmail(), password: 'elevenchars' }));
    assert.equal(res.status, 400);
    assert.equal((await body(res)).code, 'password_too_short');
  });

  it('refuses unknown fields, a bad e-mail address and malformed JSON with 400', async () => {
    const app = withAccountDeps(defaultRegisterApp, testDeps());
    const unknown = await app.request(PATH, post({ email: uniqueEmail(), password: PASSWORD, tier: 'pro' }));
    const badEmail = await app.request(PATH, post({ email: 'not-an-address', password: PASSWORD }));
    const malformed = await app.request(PATH, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"email":' });
    assert.deepEqual([unknown.status, badEmail.status, malformed.status], [400, 400, 400]);
    assert.equal((await body(unknown)).code, 'invalid_request');
  });

  it('limits attempts per client address and answers 429 with Retry-After', async () => {
    // 40 public requests a minute → 2 register/login attempts a minute per address.
    const app = withAccountDeps(defaultRegisterApp, testDeps({ config: { publicRatePerMinute: 40 } }));
    const env = fromRandomIp();
    const attempt = () => app.request(PATH, post({ email: uniqueEmail(), password: 'short' }), env);
    await attempt();
    await attempt();
    const res = await attempt();
    assert.equal(res.status, 429);
    assert.equal((await body(res)).code, 'rate_limit_exceeded');
    assert.ok(Number(res.headers.get('retry-after')) >= 1);
    const elsewhere = await app.request(PATH, post({ email: uniqueEmail(), password: 'short' }), fromRandomIp());
    assert.equal(elsewhere.status, 400);
  });
});
