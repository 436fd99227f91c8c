import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { useStack } from '../support/stack.js';
import { createAccount, json, randomHash } from '../support/client.js';

type Token = { timestamp_token: string; hash: string; nonce?: string; tsa_certificates: string[]; gen_time: string };

let app: typeof import('../../functions/v1/timestamp.js').app;
let usageApp: typeof import('../../functions/v2/account-usage.js').app;
let starter: Awaited<ReturnType<typeof createAccount>>;

before(async () => {
  await useStack();
  app = (await import('../../functions/v1/timestamp.js')).app;
  usageApp = (await import('../../functions/v2/account-usage.js')).app;
  starter = await createAccount('starter');
});

const stamp = (body: unknown, key = starter.apiKey) => app.request('/api/v1/timestamp', json(body, { 'x-api-key': key }));

/** openssl ts -verify of a base64 TimeStampResp against a hash, with the root of the returned chain as trust anchor. */
function opensslVerify(token: Token, digest: string, extra: string[] = []): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'v1-ts-'));
  writeFileSync(path.join(dir, 'token.tsr'), Buffer.from(token.timestamp_token, 'base64'));
  writeFileSync(path.join(dir, 'root.pem'), token.tsa_certificates.at(-1) ?? '');
  return execFileSync('openssl', ['ts', '-verify', '-digest', digest, '-in', path.join(dir, 'token.tsr'), '-CAfile', path.join(dir, 'root.pem'), ...extra], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

describe('POST /api/v1/timestamp', () => {
  it('returns an RFC 3161 token over the hash that openssl ts -verify accepts, for a Starter key', async () => {
    const hash = randomHash();
    const res = await stamp({ hash: hash.toUpperCase() });
    assert.equal(res.status, 200, await res.clone().text());
    const token = (await res.json()) as Token;
    assert.equal(token.hash, hash);
    assert.match(opensslVerify(token, hash), /Verification: OK/);
  });

  it('echoes a requested nonce in the token', async () => {
    const hash = randomHash();
    const nonce = '123456789012345678901234567890';
    const res = await stamp({ hash, nonce });
    assert.equal(res.status, 200, await res.clone().text());
    const token = (await res.json()) as Token;
    assert.equal(token.nonce, nonce);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'v1-ts-text-'));
    writeFileSync(path.join(dir, 'token.tsr'), Buffer.from(token.timestamp_token, 'base64'));
    const text = execFileSync('openssl', ['ts', '-reply', '-in', path.join(dir, 'token.tsr'), '-text'], { encoding: 'utf8' });
    assert.match(text, new RegExp(`Nonce: 0x0*${BigInt(nonce).toString(16)}\\n`, 'i'));
  });

  it('refuses a token that is checked against another hash', async () => {
    const res = await stamp({ hash: randomHash() });
    const token = (await res.json()) as Token;
    assert.throws(() => opensslVerify(token, randomHash()));
  });

  it('refuses a Free key with 403 tier_insufficient', async () => {
    const free = await createAccount('free');
    const res = await stamp({ hash: randomHash() }, free.apiKey);
    assert.equal(res.status, 403);
    assert.equal(((await res.json()) as { code: string }).code, 'tier_insufficient');
  });

  it('answers 400 for a malformed hash, a bad nonce and unknown fields', async () => {
    for (const body of [{ hash: 'abc' }, { hash: randomHash(), nonce: '-5' }, { hash: randomHash(), nonce: 0 }, { hash: randomHash(), extra: 1 }, {}]) {
      const res = await stamp(body);
      assert.equal(res.status, 400, JSON.stringify(body));
    }
  });

  it('counts each token toward the monthly quota', async () => {
    const account = await createAccount('starter');
    for (let i = 0; i < 2; i++) assert.equal((await stamp({ hash: randomHash() }, account.apiKey)).status, 200);
    assert.equal((await stamp({ hash: 'nope' }, account.apiKey)).status, 400);
    const usage = await usageApp.request('/api/v2/account/usage', { headers: { authorization: `Bearer ${account.token}` } });
    assert.equal(((await usage.json()) as { used: number }).used, 2);
  });
});
