import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { app as defaultLoginApp } from '../../functions/v2/account-login.js';
import { app as defaultRegisterApp } from '../../functions/v2/account-register.js';
import type { PasswordHasher } from '../../lib/accounts/passwords.js';
import { useStack } from '../support/stack.js';
import { PASSWORD, body, fastHasher, fromRandomIp, post, registerDirect, testDeps, uniqueEmail, withAccountDeps } from '../accounts/support.js';

// At module level, not in a `before` hook (see test/functions/lambda-handler.test.ts).
await useStack();

const PATH = '/api/v2/account/login';

/** The fast hasher, counting verifications and what they were checked against. */
function countingHasher(): PasswordHasher & { verified: string[] } {
  const verified: string[] = [];
  return {
    verified,
    dummyHash: fastHasher.dummyHash,
    hash: (p) => fastHasher.hash(p),
    verify: (p, stored) => {
      verified.push(stored === fastHasher.dummyHash ? 'dummy' : 'account');
      return fastHasher.verify(p, stored);
    },
  };
}

describe('POST /api/v2/account/login', () => {
  it('returns a JWT for the account, on the production password cost', async () => {
    const email = uniqueEmail();
    const registered = await body(await defaultRegisterApp.request('/api/v2/account/register', post({ email, password: PASSWORD })));
    const res = await defaultLoginApp.request(PATH, post({ email: email.toUpperCase(), password: PASSWORD }));
    assert.equal(res.status, 200);
    const b = await body(res);
    assert.deepEqual(Object.keys(b).sort(), ['account_id', 'expires_in', 'token', 'token_type']);
    assert.equal(b.account_id, registered.account_id);
    assert.equal(b.token_type, 'Bearer');
    assert.equal(decodeJwt(String(b.token)).sub, registered.account_id);
  });

  it('gives the same 401 body for an unknown e-mail address and a wrong password', async () => {
    const deps = testDeps();
    const { email } = await registerDirect(deps);
    const app = withAccountDeps(defaultLoginApp, deps);
    const unknown = await app.request(PATH, post({ email: uniqueEmail('nobody'), password: PASSWORD }));
    const wrong = await app.request(PATH, post({ email, password: `${PASSWORD}!` }));
    assert.equal(unknown.status, 401);
    assert.equal(wrong.status, 401);
    // The same body but for request_id, which names each occurrence.
    const [a, b] = [await body(unknown), await body(wrong)];
    assert.notEqual(a.request_id, b.request_id);
    assert.deepEqual({ ...a, request_id: undefined }, { ...b, request_id: undefined });
    assert.equal(a.code, 'invalid_credentials');
  });

  it('runs one scrypt verification for an unknown e-mail address, as for a wrong password', async () => {
    const passwords = countingHasher();
    const deps = testDeps({ passwords });
    const { email } = await registerDirect(deps);
    const app = withAccountDeps(defaultLoginApp, deps);
    await app.request(PATH, post({ email: uniqueEmail('nobody'), password: PASSWORD }));
    await app.request(PATH, post({ email, password: `${PASSWORD}!` }));
    assert.deepEqual(passwords.verified, ['dummy', 'account']);
  });

  it('refuses unknown fields with 400', async () => {
    const app = withAccountDeps(defaultLoginApp, testDeps());
    const res = await app.request(PATH, post({ email: uniqueEmail(), password: PASSWORD, remember: true }));
    assert.equal(res.status, 400);
  });

  it('slows password guessing down to a few attempts a minute per client address', async () => {
    const deps = testDeps({ config: { publicRatePerMinute: 60 } });
    const { email } = await registerDirect(deps);
    const app = withAccountDeps(defaultLoginApp, deps);
    const ip = fromRandomIp();
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await app.request(PATH, post({ email, password: `guess number ${i}` }), ip)).status);
    assert.deepEqual(statuses, [401, 401, 401, 429]);
  });

  it('locks an address out after too many failed log-ins, until the window ends, without counting successes', async () => {
    const deps = testDeps({ config: { authFailuresPerWindow: 3 } });
    const { email } = await registerDirect(deps);
    const app = withAccountDeps(defaultLoginApp, deps);
    const ip = fromRandomIp();
    // Successful log-ins give their slot back: any number of them locks nothing.
    for (let i = 0; i < 4; i++) assert.equal((await app.request(PATH, post({ email, password: PASSWORD }), ip)).status, 200);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await app.request(PATH, post({ email, password: `guess number ${i}` }), ip)).status);
    assert.deepEqual(statuses, [401, 401, 401]);
    // Locked: even the right password gets 429 from this address.
    const locked = await app.request(PATH, post({ email, password: PASSWORD }), ip);
    assert.equal(locked.status, 429);
    const problem = await body(locked);
    assert.equal(problem.code, 'too_many_failed_attempts');
    const retryAfter = Number(locked.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 15 * 60, `Retry-After ${retryAfter}`);
    // Another address is not locked out, and neither is the account.
    assert.equal((await app.request(PATH, post({ email, password: PASSWORD }), fromRandomIp())).status, 200);
  });

  it('admits at most the failure limit of concurrent guesses from one address', async () => {
    const deps = testDeps({ config: { authFailuresPerWindow: 4 } });
    const { email } = await registerDirect(deps);
    const app = withAccountDeps(defaultLoginApp, deps);
    const ip = fromRandomIp();
    const statuses = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => (await app.request(PATH, post({ email, password: `parallel guess ${i}` }), ip)).status),
    );
    assert.equal(statuses.filter((s) => s === 401).length, 4);
    assert.equal(statuses.filter((s) => s === 429).length, 8);
  });
});
