import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_TSA_PQ_POLICY_OID } from '../../lib/config.js';
import { type HttpService, startHttpService } from '../support/http-server.js';
import { useStack } from '../support/stack.js';
import { Device, randomHash } from '../support/client.js';
import { ContractValidator, type Exchange } from './validator.js';

// A Free account may register two hashes a month here, so the session meets the quota's 429.
process.env.TIER_LIMITS = JSON.stringify({ free: { monthly_quota: 2 } });
// Hash trees are renewed to SHA-512 here, so the session offers a digest (202) and meets its errors.
process.env.ARCHIVE_HASH_ALGORITHM = 'SHA-512';
await useStack();

let service: HttpService;
let validator: ContractValidator;
const exchanges: Exchange[] = [];

before(async () => {
  service = await startHttpService();
  const doc = (await (await fetch(`${service.url}/api/openapi.json`)).json()) as Record<string, unknown>;
  validator = new ContractValidator(doc);
});
after(() => service?.close());

/** One request over real HTTP, recorded for the contract check. */
async function call(method: string, path: string, options: { json?: unknown; headers?: Record<string, string>; raw?: string | Uint8Array<ArrayBuffer>; contentType?: string } = {}) {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Uint8Array<ArrayBuffer> | undefined;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.raw !== undefined) {
    headers['content-type'] = options.contentType ?? 'text/plain';
    body = options.raw;
  }
  const res = await fetch(`${service.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  exchanges.push({ method, path, requestContentType: headers['content-type'], requestBody: options.json, status: res.status, headers: res.headers, body: text });
  return { status: res.status, headers: res.headers, body: (res.headers.get('content-type') ?? '').includes('json') && text ? (JSON.parse(text) as Record<string, unknown>) : text };
}

/** A DER TimeStampReq for a fresh file, as `openssl ts -query` makes it. */
function timeStampQuery(): Uint8Array<ArrayBuffer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'contract-tsq-'));
  writeFileSync(path.join(dir, 'photo.jpg'), randomBytes(64));
  const r = spawnSync('openssl', ['ts', '-query', '-data', path.join(dir, 'photo.jpg'), '-sha256', '-cert', '-out', path.join(dir, 'q.tsq')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return new Uint8Array(readFileSync(path.join(dir, 'q.tsq')));
}

describe('a realistic session, every exchange checked against the served OpenAPI document', () => {
  it('registers, manages keys, anchors, verifies and reads receipts (v2 and v1) and meets the main errors, with no violation', async () => {
    const email = `contract-${randomBytes(4).toString('hex')}@example.com`;
    const password = 'a long enough password';
    const reg = await call('POST', '/api/v2/account/register', { json: { email, password, name: 'Contract Test' } });
    assert.equal(reg.status, 200);
    const { account_id, api_key } = reg.body as { account_id: string; api_key: string };
    assert.equal((await call('POST', '/api/v2/account/register', { json: { email, password } })).status, 409);
    assert.equal((await call('POST', '/api/v2/account/register', { json: { email: 'x@example.com', password: 'short' } })).status, 400);
    const login = await call('POST', '/api/v2/account/login', { json: { email, password } });
    assert.equal(login.status, 200);
    const jwt = { authorization: `Bearer ${(login.body as { token: string }).token}` };
    assert.equal((await call('POST', '/api/v2/account/login', { json: { email, password: 'wrong password here' } })).status, 401);

    const key = await call('POST', '/api/v2/account/keys', { json: { name: 'second' }, headers: jwt });
    assert.equal(key.status, 200);
    assert.equal((await call('GET', '/api/v2/account/keys', { headers: jwt })).status, 200);
    assert.equal((await call('DELETE', `/api/v2/account/keys/${(key.body as { key_id: string }).key_id}`, { headers: jwt })).status, 200);
    assert.equal((await call('GET', '/api/v2/account/keys')).status, 401);
    assert.equal((await call('GET', '/api/v2/account/usage', { headers: jwt })).status, 200);
    assert.equal((await call('GET', '/api/v2/account/info', { headers: jwt })).status, 200);

    const keyed = { 'x-api-key': api_key };
    // Free: hash works, anchoring is refused (403), the quota of 2 ends in 429.
    const device = new Device();
    assert.equal((await call('POST', '/api/v2/evidence/anchor', { json: device.next(), headers: keyed })).status, 403);
    assert.equal((await call('POST', '/api/v2/evidence/hash', { json: { sha256_hash: 'not-a-hash' }, headers: keyed })).status, 400);
    assert.equal((await call('POST', '/api/v2/evidence/hash', { raw: 'not json', headers: keyed })).status, 415);
    assert.equal((await call('POST', '/api/v2/evidence/hash', { json: { sha256_hash: randomHash(), extra: 1 }, headers: keyed })).status, 400);
    assert.equal((await call('POST', '/api/v2/evidence/hash', { json: { sha256_hash: 'a'.repeat(70 * 1024) }, headers: keyed })).status, 413);
    assert.equal((await call('GET', '/api/v2/evidence/anchor')).status, 405);
    const registered = randomHash();
    assert.equal((await call('POST', '/api/v2/evidence/hash', { json: { sha256_hash: registered }, headers: keyed })).status, 200);
    assert.equal((await call('POST', '/api/v2/evidence/hash', { json: { sha256_hash: randomHash() }, headers: keyed })).status, 200);
    assert.equal((await call('POST', '/api/v2/evidence/hash', { json: { sha256_hash: randomHash() }, headers: keyed })).status, 429);

    const up = await call('PUT', `/api/v2/admin/accounts/${account_id}/tier`, { json: { tier: 'pro' }, headers: { authorization: `Bearer ${process.env.ADMIN_TOKEN}` } });
    assert.equal(up.status, 200);
    assert.equal((await call('PUT', `/api/v2/admin/accounts/${account_id}/tier`, { json: { tier: 'pro' }, headers: { authorization: 'Bearer wrong' } })).status, 401);

    // Pro: anchor (v2 and v1), verify, receipt, and the conflicts.
    const first = device.next();
    const anchored = await call('POST', '/api/v2/evidence/anchor', { json: first, headers: keyed });
    assert.equal(anchored.status, 200, JSON.stringify(anchored.body));
    device.advance(first);
    // The identical request again (a phone that lost the answer) gets its anchor; another request for the hash, 409.
    const again = await call('POST', '/api/v2/evidence/anchor', { json: first, headers: keyed });
    assert.equal(again.status, 200);
    assert.equal((again.body as { tx_hash?: string }).tx_hash, (anchored.body as { tx_hash?: string }).tx_hash);
    assert.equal((await call('POST', '/api/v2/evidence/anchor', { json: new Device().next(first.sha256_hash), headers: keyed })).status, 409);
    const full = device.next();
    assert.equal((await call('POST', '/api/v2/evidence/full', { json: full, headers: keyed })).status, 200);
    device.advance(full);
    const v1 = device.next();
    const v1Body = { image_hash: v1.sha256_hash, signature_hex: v1.signature_hex, public_key_hex: v1.public_key_hex, chain_hash: v1.chain_hash, chain_index: v1.chain_index, previous_hash: v1.previous_hash, device_id: 'contract-phone' };
    assert.equal((await call('POST', '/api/v1/chain/anchor', { json: v1Body, headers: keyed })).status, 201);
    const badSignature = { ...device.next(), signature_hex: 'ab'.repeat(64) };
    assert.equal((await call('POST', '/api/v2/evidence/anchor', { json: badSignature, headers: keyed })).status, 400);

    // The account's recent evidence: newest first, each hash with what the account obtained for it.
    const recent = await call('GET', '/api/v2/account/evidence?limit=10', { headers: jwt });
    assert.equal(recent.status, 200);
    const items = (recent.body as { items: { image_hash: string; proofs: string[] }[] }).items;
    assert.deepEqual(items.slice(0, 3).map((i) => [i.image_hash, i.proofs]), [
      [v1.sha256_hash, ['anchored']],
      [full.sha256_hash, ['anchored']],
      [first.sha256_hash, ['anchored']],
    ]);
    assert.deepEqual(items.find((i) => i.image_hash === registered)?.proofs, ['registered']);
    assert.equal((await call('GET', '/api/v2/account/evidence?limit=0', { headers: jwt })).status, 400);
    assert.equal((await call('GET', '/api/v2/account/evidence')).status, 401);

    const h = first.sha256_hash;
    for (const path of [
      `/api/v2/evidence/verify/${h}`,
      `/api/v2/evidence/verify/${registered}`,
      `/api/v2/evidence/verify/${randomHash()}`,
      `/api/v2/evidence/receipt/${h}`,
      `/api/v2/evidence/receipt/${randomHash()}`,
      `/api/v1/chain/verify/${v1.sha256_hash}`,
      `/api/v1/chain/verify/${randomHash()}`,
      `/api/v1/chain/all/${device.publicKeyHex}`,
      `/api/v1/pq/info`,
      `/api/v1/pq/verify/${h}`,
      `/api/v1/pq/registration`,
      `/api/v1/ledger/status`,
      `/api/v1/ledger/verify/${h}`,
      `/api/v1/stats`,
      `/api/v1/health`,
      `/api/v2/tsa/certificates`,
      `/.well-known/jwks.json`,
      `/.well-known/evidence-trust-anchors.json`,
    ]) {
      const res = await call('GET', path);
      assert.ok(res.status === 200 || res.status === 404, `${path}: ${res.status}`);
    }
    assert.equal((await call('POST', '/api/v1/timestamp', { json: { hash: randomHash() }, headers: keyed })).status, 200);
    assert.equal((await call('POST', '/api/v2/evidence/timestamp', { json: { sha256_hash: h }, headers: keyed })).status, 200);
    // The post-quantum TSA chosen by its policy OID, and a policy no TSA of the service has.
    assert.equal((await call('POST', '/api/v2/evidence/timestamp', { json: { sha256_hash: h, policy: DEFAULT_TSA_PQ_POLICY_OID }, headers: keyed })).status, 200);
    assert.equal((await call('POST', '/api/v2/evidence/timestamp', { json: { sha256_hash: h, policy: '2.25.1' }, headers: keyed })).status, 400);
    assert.equal((await call('POST', '/api/v2/evidence/sign', { json: { sha256_hash: h }, headers: keyed })).status, 200);
    // RFC 3161 over HTTP: a TimeStampReq as application/timestamp-query gets a TimeStampResp; as any
    // other type 415, before the credentials (none: still 415; the right type without them: 401).
    const tsq = timeStampQuery();
    assert.equal((await call('POST', '/api/v2/tsa', { raw: tsq, contentType: 'application/timestamp-query', headers: keyed })).status, 200);
    assert.equal((await call('POST', '/api/v2/tsa', { raw: tsq, contentType: 'text/plain', headers: keyed })).status, 415);
    assert.equal((await call('POST', '/api/v2/tsa', { raw: tsq, contentType: 'application/json' })).status, 415);
    assert.equal((await call('POST', '/api/v2/tsa', { raw: tsq, contentType: 'application/timestamp-query' })).status, 401);
    assert.equal((await call('POST', '/api/v2/tsa', { raw: new Uint8Array([1, 2, 3]), contentType: 'application/timestamp-query', headers: keyed })).status, 400);
    assert.equal((await call('GET', `/api/v2/evidence/verify/abc`)).status, 400);

    // The digest offer of the evidence record (RFC 4998 hash-tree renewal) and the record's reads.
    const sha512 = 'ab'.repeat(64);
    const digestPath = `/api/v2/evidence/evidence-record/${h}/digest`;
    assert.equal((await call('POST', digestPath, { json: { algorithm: 'SHA-512', digest: sha512 }, headers: keyed })).status, 202);
    assert.equal((await call('POST', digestPath, { json: { algorithm: 'SHA-512', digest: sha512, extra: 'x' }, headers: keyed })).status, 400);
    assert.equal((await call('POST', digestPath, { json: { algorithm: 'SHA-512', digest: 'zz' }, headers: keyed })).status, 400);
    assert.equal((await call('POST', digestPath, { json: { algorithm: 'SHA-384', digest: sha512.slice(0, 96) }, headers: keyed })).status, 400);
    assert.equal((await call('POST', `/api/v2/evidence/evidence-record/${randomHash()}/digest`, { json: { algorithm: 'SHA-512', digest: sha512 }, headers: keyed })).status, 404);
    assert.equal((await call('POST', digestPath, { json: { algorithm: 'SHA-512', digest: sha512 } })).status, 401);
    for (const query of ['', `?sha512=${sha512}`]) assert.equal((await call('GET', `/api/v2/evidence/evidence-record/${h}${query}`)).status, 404);
    assert.equal((await call('GET', `/api/v2/evidence/evidence-record/${h}?sha512=zz`)).status, 400);

    const violations = exchanges.flatMap((x) => validator.check(x));
    assert.deepEqual(violations, [], `${violations.length} violations in ${exchanges.length} exchanges`);
    assert.ok(exchanges.length >= 45, `${exchanges.length} exchanges`);
  });

  it('finds a drift: a receipt without a field, an undocumented status, a missing request id', () => {
    const receipt = exchanges.find((x) => x.path.startsWith('/api/v2/evidence/receipt/') && x.status === 200);
    assert.ok(receipt, 'the session read a receipt');
    const body = JSON.parse(receipt.body) as Record<string, unknown>;
    delete body.server_hash;
    assert.ok(validator.check({ ...receipt, body: JSON.stringify(body) }).some((v) => /server_hash/.test(v)));
    assert.ok(validator.check({ ...receipt, status: 418 }).some((v) => /not documented/.test(v)));
    const headers = new Headers(receipt.headers);
    headers.delete('x-request-id');
    assert.ok(validator.check({ ...receipt, headers }).some((v) => /X-Request-Id/.test(v)));
  });
});
