/**
 * Smoke test of the API through serverless-offline: real HTTP to the bundled Lambda handlers
 * behind API Gateway's HTTP API emulation, on the embedded stack. Run by test/offline/run.ts
 * (`npm run test:offline`), which passes OFFLINE_URL, OFFLINE_LAMBDA_URL and ADMIN_TOKEN.
 * Named `*.offline.ts` so that `npm test` (`*.test.ts`, the in-process apps) does not run it.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { before, describe, test } from 'node:test';
import { Device, randomHash } from '../support/client.js';

const require = createRequire(import.meta.url);
const registry = require('../../infra/registry.cjs') as {
  HTTP_FUNCTIONS: { name: string; method: string; path: string; public: boolean }[];
  SCHEDULED_FUNCTIONS: { name: string }[];
};

const BASE = process.env.OFFLINE_URL ?? '';
const LAMBDA = process.env.OFFLINE_LAMBDA_URL ?? '';
const ADMIN_TOKEN = process.env.ADMIN_TOKEN ?? '';
const PROBLEM = 'application/problem+json';

interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
}

async function call<T = Record<string, unknown>>(method: string, path: string, init: { body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${BASE}${path}`, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  return { status: res.status, headers: res.headers, body: (/json/.test(type) && text ? JSON.parse(text) : text) as T };
}

/** `fn` over `items`, at most `limit` at a time, results in order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

const show = (a: Answer<unknown>) => `${a.status} ${typeof a.body === 'string' ? a.body.slice(0, 500) : JSON.stringify(a.body).slice(0, 500)}`;

before(() => {
  assert.ok(BASE && LAMBDA, 'OFFLINE_URL and OFFLINE_LAMBDA_URL are not set: run `npm run test:offline`');
});

describe('the API through serverless-offline (bundled handlers, API Gateway v2 events)', () => {
  const device = new Device();
  const imageHash = randomHash();
  let account: { account_id: string; api_key: string; token: string };
  let txHash = '';

  test('GET /api/v1/health: 200, every part up', async () => {
    const res = await call<{ status: string; parts: Record<string, { status: string }> }>('GET', '/api/v1/health');
    assert.equal(res.status, 200, show(res));
    assert.equal(res.body.status, 'ok');
    for (const part of ['database', 'ledger', 'keys']) assert.equal(res.body.parts[part]?.status, 'up', `${part}: ${JSON.stringify(res.body.parts[part])}`);
  });

  test('POST /api/v2/account/register: an account with an API key and a token', async () => {
    const email = `offline-${randomHash().slice(0, 12)}@example.test`;
    const res = await call<typeof account & { tier: string }>('POST', '/api/v2/account/register', { body: { email, password: 'correct horse battery staple' } });
    assert.equal(res.status, 200, show(res));
    assert.equal(res.body.tier, 'free');
    assert.match(res.body.api_key, /^eas_/);
    account = res.body;
  });

  test('PUT /api/v2/admin/accounts/{id}/tier: ADMIN_TOKEN reaches the admin function only, and it sets pro', async () => {
    const path = `/api/v2/admin/accounts/${account.account_id}/tier`;
    const refused = await call('PUT', path, { body: { tier: 'pro' }, headers: { authorization: 'Bearer not-the-admin-token' } });
    assert.equal(refused.status, 401, show(refused));
    const res = await call<{ tier: string }>('PUT', path, { body: { tier: 'pro' }, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(res.status, 200, show(res));
    assert.equal(res.body.tier, 'pro');
    const info = await call<{ tier: string }>('GET', '/api/v2/account/info', { headers: { authorization: `Bearer ${account.token}` } });
    assert.equal(info.status, 200, show(info));
    assert.equal(info.body.tier, 'pro');
  });

  test('POST /api/v2/evidence/hash: registers the hash', async () => {
    const res = await call<{ sha256_hash: string; algorithm: string; timestamp: string }>('POST', '/api/v2/evidence/hash', {
      body: { sha256_hash: imageHash },
      headers: { 'x-api-key': account.api_key },
    });
    assert.equal(res.status, 200, show(res));
    assert.equal(res.body.sha256_hash, imageHash);
    assert.equal(res.body.algorithm, 'SHA-256');
  });

  test('POST /api/v2/evidence/anchor: a device-signed hash is anchored (ML-DSA-65, RFC 3161, local chain)', async () => {
    const body = device.next(imageHash);
    const res = await call<{ status: string; image_hash: string; pq_signed: boolean; has_timestamp: boolean; blockchain_anchored: boolean; tx_hash: string; ledgerscan_url: string }>(
      'POST',
      '/api/v2/evidence/anchor',
      { body, headers: { 'x-api-key': account.api_key } },
    );
    assert.equal(res.status, 200, show(res));
    assert.equal(res.body.status, 'anchored');
    assert.equal(res.body.image_hash, imageHash);
    assert.equal(res.body.pq_signed, true);
    assert.equal(res.body.has_timestamp, true);
    assert.equal(res.body.blockchain_anchored, true);
    assert.match(res.body.tx_hash, /^0x[0-9a-f]{64}$/);
    // PUBLIC_BASE_URL is the offline URL, so the explorer link points at the ledgerTxPage function.
    assert.equal(res.body.ledgerscan_url, `${BASE}/ledger/tx/${res.body.tx_hash}`);
    txHash = res.body.tx_hash;
    device.advance(body);
  });

  test('GET /api/v2/evidence/verify/{hash}: verified, from the proofs', async () => {
    const res = await call<{ verified: boolean; has_pq_signature: boolean; has_blockchain: boolean; ledger_tx: string; chain_index: number }>(
      'GET',
      `/api/v2/evidence/verify/${imageHash}`,
    );
    assert.equal(res.status, 200, show(res));
    assert.equal(res.body.verified, true);
    assert.equal(res.body.has_pq_signature, true);
    assert.equal(res.body.has_blockchain, true);
    assert.equal(res.body.ledger_tx, txHash);
    assert.equal(res.body.chain_index, 0);
  });

  test('GET /api/v2/evidence/receipt/{hash}: the receipt with every proof', async () => {
    const res = await call<{ server_hash: string; statement_canonical: string; pq_signature: { signature: string }; timestamp: { token: string }; ledger: { tx_hash: string; chain_id: number } }>(
      'GET',
      `/api/v2/evidence/receipt/${imageHash}`,
    );
    assert.equal(res.status, 200, show(res));
    assert.match(res.body.server_hash, /^[0-9a-f]{64}$/);
    assert.ok(res.body.statement_canonical.length > 0);
    assert.ok(res.body.pq_signature.signature.length > 0);
    assert.ok(res.body.timestamp.token.length > 0);
    assert.equal(res.body.ledger.tx_hash, txHash);
    assert.equal(res.body.ledger.chain_id, 31337);
  });

  test('GET /api/v1/chain/verify/{hash}: found and every check passes', async () => {
    const res = await call<Record<string, unknown>>('GET', `/api/v1/chain/verify/${imageHash}`);
    assert.equal(res.status, 200, show(res));
    assert.equal(res.body.found, true);
    for (const check of ['pq_verified', 'chain_verified', 'timestamp_verified', 'ledger_verified', 'verified']) assert.equal(res.body[check], true, check);
  });

  test('GET /ledger/tx/{tx_hash}: the explorer page of the anchor transaction', async () => {
    const res = await call<string>('GET', `/ledger/tx/${txHash}`);
    assert.equal(res.status, 200, show(res));
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.ok(res.body.includes(txHash));
  });

  test('400 problem+json for a malformed hash', async () => {
    const res = await call<{ status: number; code: string }>('POST', '/api/v2/evidence/hash', { body: { sha256_hash: 'not-a-hash' }, headers: { 'x-api-key': account.api_key } });
    assert.equal(res.status, 400, show(res));
    assert.equal(res.headers.get('content-type'), PROBLEM);
    assert.equal(res.body.status, 400);
    const v1 = await call('GET', '/api/v1/chain/verify/1234');
    assert.equal(v1.status, 400, show(v1));
    assert.equal(v1.headers.get('content-type'), PROBLEM);
  });

  test('401 problem+json for an unknown API key', async () => {
    const res = await call<{ code: string }>('POST', '/api/v2/evidence/hash', { body: { sha256_hash: randomHash() }, headers: { 'x-api-key': 'eas_unknownunknownunknownunknownunknown00' } });
    assert.equal(res.status, 401, show(res));
    assert.equal(res.headers.get('content-type'), PROBLEM);
    assert.equal(res.body.code, 'invalid_api_key');
  });

  test('404 for an unknown hash', async () => {
    const res = await call<{ verified: boolean }>('GET', `/api/v2/evidence/verify/${randomHash()}`);
    assert.equal(res.status, 404, show(res));
    assert.equal(res.body.verified, false);
  });

  test('CORS on a public GET: the allow-origin header, and a preflight that does not allow X-API-Key', async () => {
    const origin = 'https://photos.example.org';
    const res = await call('GET', `/api/v2/evidence/verify/${imageHash}`, { headers: { origin } });
    assert.equal(res.status, 200, show(res));
    // API Gateway (allowedOrigins ['*']) and the app answer `*`; serverless-offline echoes the origin.
    assert.ok(['*', origin].includes(res.headers.get('access-control-allow-origin') ?? ''), `allow-origin: ${res.headers.get('access-control-allow-origin')}`);
    const preflight = await fetch(`${BASE}/api/v2/evidence/verify/${imageHash}`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'GET' },
    });
    assert.equal(preflight.status, 204);
    assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /GET/);
    assert.doesNotMatch(preflight.headers.get('access-control-allow-headers') ?? '', /x-api-key|authorization/i);
  });
});

describe('every function of infra/functions.json is deployed and loads', () => {
  const fill = (path: string) =>
    path
      .replace('{image_hash}', randomHash())
      .replace('{public_key_hex}', new Device().publicKeyHex)
      .replace('{tx_hash}', `0x${randomHash()}`)
      .replace('{account_id}', 'acc_doesnotexist000000')
      .replace('{key_id}', 'key_doesnotexist000000');

  test('each HTTP route answers from its function (not the gateway), with no 5xx', async () => {
    // Two at a time: a cold start loads the function's bundle in a new worker thread (1-3 s on
    // two cores), and many at once would run into the functions' 10 s timeout on a small runner.
    const answers = await mapLimit(registry.HTTP_FUNCTIONS, 2, async (fn) => {
      // No credentials and no body: authenticated routes answer 401, public ones their answer.
      const res = await fetch(`${BASE}${fill(fn.path)}`, { method: fn.method });
      const text = await res.text();
      return { fn: fn.name, status: res.status, requestId: res.headers.get('x-request-id'), text: text.slice(0, 300) };
    });
    const bad = answers.filter((a) => a.status >= 500 || !a.requestId || /Serverless-offline/.test(a.text));
    assert.deepEqual(bad, [], JSON.stringify(bad, null, 1));
    for (const a of answers) {
      const fn = registry.HTTP_FUNCTIONS.find((f) => f.name === a.fn);
      // Without credentials or a body, every non-public route refuses: 401 (register and login: 400;
      // POST /api/v2/tsa 415, its media type being checked before the credentials, since 2939514).
      if (fn && !fn.public) assert.ok(a.status === 401 || a.status === 400 || (a.fn === 'v2Tsa' && a.status === 415), `${a.fn}: ${a.status} ${a.text}`);
    }
  });

  test('the scheduled archive job (RFC 4998 evidence records) runs through the Lambda invoke API', async () => {
    const res = await fetch(`${LAMBDA}/2015-03-31/functions/evidence-anchoring-dev-archive/invocations`, { method: 'POST', body: JSON.stringify({ source: 'aws.events' }) });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert.equal(res.headers.get('x-amz-function-error'), null, text);
    const report = JSON.parse(text) as Record<string, unknown>;
    assert.equal(typeof report.grouped, 'number', text);
    assert.equal(typeof report.renewed, 'number', text);
  });

  test('the scheduled reconcile job runs through the Lambda invoke API', async () => {
    const name = registry.SCHEDULED_FUNCTIONS.find((f) => f.name === 'reconcile')?.name;
    assert.ok(name);
    // Deployed name: <service>-<stage>-<function> (serverless.yml service, the default stage dev).
    const res = await fetch(`${LAMBDA}/2015-03-31/functions/evidence-anchoring-dev-${name}/invocations`, { method: 'POST', body: JSON.stringify({ source: 'aws.events' }) });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert.equal(res.headers.get('x-amz-function-error'), null, text);
    const report = JSON.parse(text) as Record<string, unknown>;
    assert.equal(typeof report.checked, 'number', text);
  });
});
