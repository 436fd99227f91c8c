import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { resetCoreDeps } from '../../lib/deps/core.js';
import { type HttpService, startHttpService } from '../support/http-server.js';
import { freePort, useStack } from '../support/stack.js';

let base: string;
let service: HttpService | undefined;

before(async () => {
  await useStack();
  service = await startHttpService();
  base = service.url;
});

after(() => service?.close());

describe('the local API over real HTTP', () => {
  it('reports every part up on /api/v1/health', async () => {
    const res = await fetch(`${base}/api/v1/health`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { status: string; parts: Record<string, { status: string; chain_id?: number }> };
    assert.equal(body.status, 'ok');
    assert.deepEqual(Object.keys(body.parts).sort(), ['database', 'keys', 'ledger']);
    assert.equal(body.parts.ledger?.chain_id, 31337);
  });

  it('answers 503 naming the part that is down, and only why, when the chain node cannot be reached', async () => {
    const saved = process.env.LEDGER_RPC_URL;
    process.env.LEDGER_RPC_URL = `http://127.0.0.1:${await freePort()}`;
    resetCoreDeps();
    try {
      const res = await fetch(`${base}/api/v1/health`);
      assert.equal(res.status, 503);
      const text = await res.text();
      const body = JSON.parse(text) as { status: string; detail?: string; parts: Record<string, { status: string }> };
      assert.equal(body.status, 'degraded');
      assert.deepEqual(body.parts.ledger, { status: 'down', reason: 'unreachable' });
      assert.equal(body.detail, 'ledger: unreachable');
      assert.equal(body.parts.database?.status, 'up');
      // Never the node's address, the fetch/socket error or a stack.
      assert.doesNotMatch(text, /127\.0\.0\.1|ECONN|fetch failed|\bat [\w.]+ \(/);
    } finally {
      process.env.LEDGER_RPC_URL = saved;
      resetCoreDeps();
    }
  });

  it('answers 503 with database: unreachable when DynamoDB cannot be reached, without the SDK message', async () => {
    const saved = process.env.DYNAMODB_ENDPOINT;
    process.env.DYNAMODB_ENDPOINT = `http://127.0.0.1:${await freePort()}`;
    resetCoreDeps();
    try {
      const res = await fetch(`${base}/api/v1/health`);
      assert.equal(res.status, 503);
      const text = await res.text();
      const body = JSON.parse(text) as { detail?: string; parts: Record<string, { status: string }> };
      assert.deepEqual(body.parts.database, { status: 'down', reason: 'unreachable' });
      assert.equal(body.detail, 'database: unreachable');
      assert.equal(body.parts.ledger?.status, 'up');
      assert.doesNotMatch(text, /127\.0\.0\.1|ECONN|\bat [\w.]+ \(/);
    } finally {
      process.env.DYNAMODB_ENDPOINT = saved;
      resetCoreDeps();
    }
  });

  it('answers a CORS preflight on a public endpoint and not on an account endpoint', async () => {
    const pre = await fetch(`${base}/api/v2/evidence/verify/${'a'.repeat(64)}`, {
      method: 'OPTIONS',
      headers: { origin: 'https://insurer.example', 'access-control-request-method': 'GET' },
    });
    assert.equal(pre.headers.get('access-control-allow-origin'), '*');
    const acct = await fetch(`${base}/api/v2/account/info`, { headers: { origin: 'https://insurer.example' } });
    assert.equal(acct.headers.get('access-control-allow-origin'), null);
  });

  it('refuses a body over 64 KiB with 413 problem+json', async () => {
    const res = await fetch(`${base}/api/v2/account/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'a@example.com', password: 'x'.repeat(70_000) }),
    });
    assert.equal(res.status, 413);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
  });

  it('answers an unknown route with a 404 problem and every response with a request id', async () => {
    const res = await fetch(`${base}/api/v3/nothing`);
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { code: string }).code, 'not_found');
    const ok = await fetch(`${base}/api/v1/health`);
    assert.match(ok.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });
});
