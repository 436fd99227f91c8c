import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { useStack } from '../support/stack.js';
import { createAccount, Device, json, randomHash, sendUntilNot503 } from '../support/client.js';
import { loadV1Apps, v1Body, type V1Apps } from './support.js';

type Problem = { status: number; code: string; detail: string; next_index?: number };

let v1: V1Apps;
let v2: {
  anchor: typeof import('../../functions/v2/evidence-anchor.js').app;
  verify: typeof import('../../functions/v2/evidence-verify.js').app;
  usage: typeof import('../../functions/v2/account-usage.js').app;
};
let pro: Awaited<ReturnType<typeof createAccount>>;

before(async () => {
  await useStack();
  v1 = await loadV1Apps();
  v2 = {
    anchor: (await import('../../functions/v2/evidence-anchor.js')).app,
    verify: (await import('../../functions/v2/evidence-verify.js')).app,
    usage: (await import('../../functions/v2/account-usage.js')).app,
  };
  pro = await createAccount('pro');
});

// A 503 (a database call past its deadline on a loaded machine) is followed by the identical request, as a phone does.
const anchorV1 = (body: unknown, key = pro.apiKey) => sendUntilNot503(async () => v1.anchor.request('/api/v1/chain/anchor', json(body, { 'x-api-key': key })));
const anchorV2 = (body: unknown, key = pro.apiKey) => sendUntilNot503(async () => v2.anchor.request('/api/v2/evidence/anchor', json(body, { 'x-api-key': key })));

async function problem(res: Response): Promise<Problem> {
  assert.equal(res.headers.get('content-type'), 'application/problem+json');
  return (await res.json()) as Problem;
}

describe('POST /api/v1/chain/anchor', () => {
  it('answers 201 with exactly the documented fields, id equal to chain_index', async () => {
    const device = new Device();
    const body = v1Body(device, randomHash(), { device_id: 'pixel-8-field-unit' });
    const res = await anchorV1(body);
    assert.equal(res.status, 201, await res.clone().text());
    const result = (await res.json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(result).sort(), ['anchored_at', 'chain_index', 'id', 'image_hash', 'pq_signature', 'timestamp_token', 'tx_hash', 'tx_status']);
    assert.equal(result.id, 0);
    assert.equal(result.chain_index, 0);
    assert.equal(result.image_hash, body.image_hash);
    assert.equal(Buffer.from(result.pq_signature as string, 'base64').length, 3309);
    assert.equal(Buffer.from(result.timestamp_token as string, 'base64')[0], 0x30, 'a DER SEQUENCE');
    assert.match(result.tx_hash as string, /^0x[0-9a-f]{64}$/);
    assert.equal(result.tx_status, 'confirmed');
    assert.match(result.anchored_at as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(res.headers.get('location'), `/api/v1/chain/verify/${body.image_hash}`);
  });

  it('accepts previous_hash absent, null or 64 zeros at index 0, and no device_id', async () => {
    for (const previous of [undefined, null, '0'.repeat(64)]) {
      const { previous_hash: _omit, ...body } = v1Body(new Device());
      const res = await anchorV1(previous === undefined ? body : { ...body, previous_hash: previous });
      assert.equal(res.status, 201, `previous_hash ${String(previous)}: ${await res.clone().text()}`);
    }
  });

  it('continues a chain with the next index and its previous_hash', async () => {
    const device = new Device();
    const first = v1Body(device);
    assert.equal((await anchorV1(first)).status, 201);
    device.advance(first);
    const second = v1Body(device);
    const res = await anchorV1(second);
    assert.equal(res.status, 201, await res.clone().text());
    assert.equal(((await res.json()) as { id: number }).id, 1);
  });

  it('answers the same 400 codes as v2 for a bad signature, chain hash or previous hash, and unknown fields', async () => {
    const device = new Device();
    const good = v1Body(device);
    const cases: [Record<string, unknown>, string][] = [
      [{ ...good, signature_hex: v1Body(new Device(), good.image_hash).signature_hex }, 'invalid_signature'],
      [{ ...good, chain_hash: randomHash() }, 'invalid_chain_hash'],
      [{ ...good, previous_hash: randomHash() }, 'invalid_previous_hash'],
      [{ ...good, chain_index: 3, previous_hash: null }, 'invalid_previous_hash'],
      [{ ...good, image_hash: 'xyz' }, 'invalid_request'],
      [{ ...good, colour: 'blue' }, 'invalid_request'],
    ];
    for (const [body, code] of cases) {
      const res = await anchorV1(body);
      assert.equal(res.status, 400, `${code}: ${await res.clone().text()}`);
      assert.equal((await problem(res)).code, code);
    }
  });

  it('answers 409 chain_index_conflict with the next free index', async () => {
    const device = new Device();
    const first = v1Body(device);
    assert.equal((await anchorV1(first)).status, 201);
    const again = v1Body(device); // index 0 again, another photo
    const res = await anchorV1(again);
    assert.equal(res.status, 409);
    const p = await problem(res);
    assert.equal(p.code, 'chain_index_conflict');
    assert.equal(p.next_index, 1);
  });

  it('refuses a Free key with 403 tier_insufficient and a missing key with 401', async () => {
    const free = await createAccount('free');
    const res = await anchorV1(v1Body(new Device()), free.apiKey);
    assert.equal(res.status, 403);
    assert.equal((await problem(res)).code, 'tier_insufficient');
    const anonymous = await v1.anchor.request('/api/v1/chain/anchor', json(v1Body(new Device())));
    assert.equal(anonymous.status, 401);
  });

  it('counts a successful anchor toward the monthly quota and a refused one not', async () => {
    const account = await createAccount('pro');
    const used = async () => {
      const res = await v2.usage.request('/api/v2/account/usage', { headers: { authorization: `Bearer ${account.token}` } });
      return ((await res.json()) as { used: number }).used;
    };
    assert.equal((await anchorV1(v1Body(new Device()), account.apiKey)).status, 201);
    assert.equal((await anchorV1({ ...v1Body(new Device()), chain_hash: randomHash() }, account.apiKey)).status, 400);
    assert.equal(await used(), 1);
  });
});

describe('one store and one 409 rule across v1 and v2', () => {
  it('refuses with 409 hash_already_anchored a hash anchored through v2 and then v1', async () => {
    const hash = randomHash();
    const v2Res = await anchorV2(new Device().next(hash));
    assert.equal(v2Res.status, 200, await v2Res.clone().text());
    const res = await anchorV1(v1Body(new Device(), hash));
    assert.equal(res.status, 409);
    assert.equal((await problem(res)).code, 'hash_already_anchored');
  });

  it('refuses with 409 hash_already_anchored a hash anchored through v1 and then v2', async () => {
    const hash = randomHash();
    assert.equal((await anchorV1(v1Body(new Device(), hash))).status, 201);
    const res = await anchorV2(new Device().next(hash));
    assert.equal(res.status, 409);
    assert.equal((await problem(res)).code, 'hash_already_anchored');
  });

  it('lets exactly one of concurrent v1 and v2 anchors of one hash win', async () => {
    const hash = randomHash();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? anchorV1(v1Body(new Device(), hash)) : anchorV2(new Device().next(hash)))),
    );
    const statuses = results.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 200 || s === 201).length, 1, JSON.stringify(statuses));
    assert.equal(statuses.filter((s) => s === 409).length, 9, JSON.stringify(statuses));
  });

  it('verifies through v2 a hash anchored through v1', async () => {
    const body = v1Body(new Device());
    const anchored = (await (await anchorV1(body)).json()) as { tx_hash: string };
    const res = await v2.verify.request(`/api/v2/evidence/verify/${body.image_hash}`);
    assert.equal(res.status, 200);
    const v = (await res.json()) as { verified: boolean; ledger_tx: string; chain_index: number };
    assert.equal(v.verified, true);
    assert.equal(v.ledger_tx, anchored.tx_hash);
    assert.equal(v.chain_index, 0);
  });

  it('verifies through v1 a hash anchored through v2', async () => {
    const body = new Device().next();
    const anchored = (await (await anchorV2(body)).json()) as { tx_hash: string };
    const res = await v1.verify.request(`/api/v1/chain/verify/${body.sha256_hash}`);
    assert.equal(res.status, 200);
    const v = (await res.json()) as { found: boolean; pq_verified: boolean; verified: boolean; tx_hash: string; public_key_hex: string };
    assert.equal(v.found, true);
    assert.equal(v.pq_verified, true);
    assert.equal(v.verified, true);
    assert.equal(v.tx_hash, anchored.tx_hash);
    assert.equal(v.public_key_hex, body.public_key_hex);
  });
});
