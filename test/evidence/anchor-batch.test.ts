import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { counterKeys, monthWindow } from '../../lib/accounts/limits.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { getKeyAuthDeps } from '../../lib/deps/key-auth.js';
import { isAnchored } from '../../lib/evidence/records.js';
import { createAccount, Device, json, randomHash } from '../support/client.js';
import { useStack } from '../support/stack.js';

type AnchorBody = ReturnType<Device['next']>;
type Result = { status: number; anchor?: Record<string, unknown> & { tx_hash: string; server_hash: string; image_hash: string }; problem?: Record<string, unknown> & { code: string } };

let app: typeof import('../../functions/v2/evidence-anchor-batch.js').app;
let single: typeof import('../../functions/v2/evidence-anchor.js').app;
let pro: Awaited<ReturnType<typeof createAccount>>;

before(async () => {
  // Batch mode, as `npm start` and a deployment run by default (the test stack's default is direct mode).
  process.env.LEDGER_BATCH_WINDOW_MS = '250';
  await useStack();
  process.env.LEDGER_BATCH_WINDOW_MS = '250';
  assert.equal(getConfig().ledger.batchWindowMs, 250);
  app = (await import('../../functions/v2/evidence-anchor-batch.js')).app;
  single = (await import('../../functions/v2/evidence-anchor.js')).app;
  pro = await createAccount('pro');
});

const send = (body: unknown, key = pro.apiKey) => app.request('/api/v2/evidence/anchor/batch', json(body, { 'x-api-key': key }));
const used = async (accountId = pro.accountId) => (await getKeyAuthDeps().limits.usage(accountId, 'pro')).used;

async function results(res: Response): Promise<Result[]> {
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { results: Result[] }).results;
}

/** `n` entries of one device chain, in chain order. */
function chain(device: Device, n: number): AnchorBody[] {
  return Array.from({ length: n }, () => {
    const body = device.next();
    device.advance(body);
    return body;
  });
}

describe('POST /api/v2/evidence/anchor/batch', () => {
  it('anchors a device queue in one request: every entry anchored once, in chain order, charged once each, one or two batch transactions', async () => {
    const device = new Device();
    const bodies = chain(device, 12);
    const before = await used();
    let out = await results(await send({ anchors: bodies }));
    // A database call that missed its deadline on a loaded machine: 503 in that slot (and 409
    // previous_entry_failed after it); the identical request completes them, charging nothing twice.
    const firstComplete = out.every((r) => r.status === 200);
    for (let tries = 1; tries < 6 && out.some((r) => r.status === 503 || r.problem?.code === 'previous_entry_failed'); tries++) out = await results(await send({ anchors: bodies }));
    assert.equal(out.length, 12);
    for (const [i, r] of out.entries()) {
      assert.equal(r.status, 200, JSON.stringify(r.problem));
      assert.equal(r.anchor?.image_hash, bodies[i]?.sha256_hash);
      assert.deepEqual(Object.keys(r.anchor ?? {}).sort(), [
        'anchored_at', 'blockchain_anchored', 'has_timestamp', 'image_hash', 'ledgerscan_url', 'pq_algorithm', 'pq_signed', 'server_hash', 'status', 'tx_hash',
      ]);
      const item = await getEvidenceRepo().get(bodies[i]?.sha256_hash ?? '');
      assert.ok(isAnchored(item));
      assert.equal(item.chain_index, i);
      assert.equal(item.tx_hash, r.anchor?.tx_hash);
    }
    const txs = new Set(out.map((r) => r.anchor?.tx_hash));
    if (firstComplete) assert.ok(txs.size <= 2, `one or two transactions for the request, got ${txs.size}`);
    assert.equal((await used()) - before, 12, 'one quota unit per anchored entry');

    // The next photo, alone, continues the chain the batch built.
    const next = device.next();
    const res = await single.request('/api/v2/evidence/anchor', json(next, { 'x-api-key': pro.apiKey }));
    assert.equal(res.status, 200, await res.clone().text());
  });

  it('fails only what builds on a failed entry, naming it; the other device goes on; the identical request again anchors and charges nothing twice', async () => {
    const a = new Device();
    const b = new Device();
    const aBodies = chain(a, 4);
    const bBodies = chain(b, 3);
    // a's entry 1 carries a signature of another hash: 400 in its slot; a's 2 and 3 build on it.
    const bad = { ...aBodies[1], signature_hex: new Device().next(aBodies[1]?.sha256_hash).signature_hex };
    // Interleaved: a0 b0 a1(bad) b1 a2 b2 a3
    const anchors = [aBodies[0], bBodies[0], bad, bBodies[1], aBodies[2], bBodies[2], aBodies[3]];
    const before = await used();
    const first = await results(await send({ anchors }));
    assert.deepEqual(first.map((r) => r.status), [200, 200, 400, 200, 409, 200, 409]);
    assert.equal(first[2]?.problem?.code, 'invalid_signature');
    assert.equal(first[4]?.problem?.code, 'previous_entry_failed');
    assert.equal(first[4]?.problem?.failed_entry, 2);
    assert.equal(first[6]?.problem?.code, 'previous_entry_failed');
    assert.equal(first[6]?.problem?.failed_entry, 4, 'the broken link is the entry it builds on');
    assert.equal(first[4]?.problem?.instance, '/api/v2/evidence/anchor/batch');
    for (const i of [2, 4, 6]) assert.equal(await getEvidenceRepo().get((anchors[i] as AnchorBody).sha256_hash), undefined, `nothing of entry ${i} was written`);
    assert.equal((await used()) - before, 4, 'only the anchored entries are charged');

    // The phone lost the answer and sends the very same request: the same answer, nothing twice.
    const again = await results(await send({ anchors }));
    assert.deepEqual(again.map((r) => r.status), first.map((r) => r.status));
    for (const i of [0, 1, 3, 5]) {
      assert.equal(again[i]?.anchor?.tx_hash, first[i]?.anchor?.tx_hash);
      assert.equal(again[i]?.anchor?.server_hash, first[i]?.anchor?.server_hash);
    }
    assert.equal((await used()) - before, 4, 'the identical request charges nothing');

    // The fixed queue: a1 signed right, then a2, a3.
    const fixed = await results(await send({ anchors: aBodies.slice(1) }));
    assert.deepEqual(fixed.map((r) => r.status), [200, 200, 200]);
    assert.equal((await used()) - before, 7);
  });

  it('answers in its slot what the single endpoint answers: a schema error, a hash anchored already, a chain index out of order', async () => {
    const device = new Device();
    const [e0, e1] = chain(device, 2);
    const other = new Device();
    const taken = other.next((e0 as AnchorBody).sha256_hash); // the same photo on another device
    const out = await results(
      await send({ anchors: [e0, { ...e1, sha256_hash: 'xyz' }, taken, e0, 42] }),
    );
    assert.equal(out[0]?.status, 200);
    assert.equal(out[1]?.status, 400);
    assert.equal(out[1]?.problem?.code, 'invalid_request');
    assert.match(String(out[1]?.problem?.detail), /^sha256_hash: /, 'fields are named as the single endpoint names them');
    assert.equal(out[2]?.status, 409);
    assert.equal(out[2]?.problem?.code, 'hash_already_anchored');
    assert.equal(out[3]?.status, 400, 'index 0 again after index 0 and 1 of the same device');
    assert.equal(out[3]?.problem?.code, 'chain_order');
    assert.equal(out[4]?.status, 400);
    assert.equal(out[4]?.problem?.code, 'invalid_request');
  });

  it('gives back the link and the unit an entry took ahead when the entry it builds on is refused at its publish; the fixed queue then anchors', async () => {
    const device = new Device();
    const [e0, e1] = chain(device, 2) as [AnchorBody, AnchorBody];
    // e0's photo is anchored already, by another device: e0 passes its checks, takes its link,
    // its unit and its proofs, and is refused only by its publish (409) while e1's link is
    // claimed beside it.
    const other = new Device();
    assert.equal((await single.request('/api/v2/evidence/anchor', json(other.next(e0.sha256_hash), { 'x-api-key': pro.apiKey }))).status, 200);
    const before = await used();
    const out = await results(await send({ anchors: [e0, e1] }));
    assert.deepEqual(out.map((r) => r.status), [409, 409]);
    assert.equal(out[0]?.problem?.code, 'hash_already_anchored');
    assert.equal(out[1]?.problem?.code, 'previous_entry_failed');
    assert.equal(await used(), before, 'both units given back');
    const repo = getEvidenceRepo();
    for (const index of [0, 1]) {
      const link = await repo.getLink(device.publicKeyHex, index);
      assert.ok(link === undefined || link.state === 'released', `link ${index} given back (${link?.state})`);
    }
    // The phone's fixed queue (another photo at index 0, and e1 re-linked on it) takes both indexes at once.
    device.index = 0;
    device.previous = null;
    const retry = chain(device, 2);
    assert.deepEqual((await results(await send({ anchors: retry }))).map((r) => r.status), [200, 200]);
    assert.equal((await used()) - before, 2);
  });

  it('answers 429 in the slots past the monthly quota, with retry_after, and charges exactly the quota', async () => {
    const account = await createAccount('pro');
    const month = monthWindow(new Date());
    const quota = getConfig().tiers.pro.monthly_quota;
    // Three units left this month.
    await getDb().send(
      new UpdateCommand({
        TableName: getConfig().tables.counters,
        Key: { pk: counterKeys.meter(account.accountId, month) },
        UpdateExpression: 'SET used = :u',
        ExpressionAttributeValues: { ':u': quota - 3 },
      }),
    );
    const devices = Array.from({ length: 5 }, () => new Device());
    const out = await results(await send({ anchors: devices.map((d) => d.next()) }, account.apiKey));
    assert.equal(out.filter((r) => r.status === 200).length, 3);
    const refused = out.filter((r) => r.status === 429);
    assert.equal(refused.length, 2);
    for (const r of refused) {
      assert.equal(r.problem?.code, 'quota_exceeded');
      assert.ok(Number(r.problem?.retry_after) > 0);
    }
    assert.equal(await used(account.accountId), quota);
  });

  it('refuses the whole request, anchoring and charging nothing, when it is not a list of 1 to 100 entries', async () => {
    const device = new Device();
    const one = device.next();
    const before = await used();
    const cases: [string, unknown][] = [
      ['no entries', { anchors: [] }],
      ['101 entries', { anchors: Array.from({ length: 101 }, () => one) }],
      ['anchors not a list', { anchors: one }],
      ['a list as the body', [one]],
      ['another member', { anchors: [one], extra: 1 }],
      ['no anchors', {}],
    ];
    for (const [what, body] of cases) {
      const res = await send(body);
      assert.equal(res.status, 400, what);
      assert.equal(res.headers.get('content-type'), 'application/problem+json', what);
    }
    const big = await app.request('/api/v2/evidence/anchor/batch', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': pro.apiKey },
      body: JSON.stringify({ anchors: [one], pad: 'x'.repeat(300 * 1024) }),
    });
    assert.equal(big.status, 413);
    const malformed = await app.request('/api/v2/evidence/anchor/batch', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': pro.apiKey },
      body: '{"anchors": [',
    });
    assert.equal(malformed.status, 400);
    assert.equal(await getEvidenceRepo().get(one.sha256_hash), undefined);
    assert.equal(await used(), before);
  });

  it('takes 100 entries of one device (the body limit holds them pretty-printed); a slot answered 503 is completed by the identical request, as a phone does', async () => {
    const device = new Device();
    const bodies = chain(device, 100);
    const body = JSON.stringify({ anchors: bodies }, null, 2);
    const sendIt = async () =>
      results(await app.request('/api/v2/evidence/anchor/batch', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': pro.apiKey }, body }));
    let out = await sendIt();
    // On a loaded machine a database call can miss its deadline: that entry (and what builds on it)
    // answers 503 or 409 previous_entry_failed in its slot, and the identical request resumes it.
    const firstComplete = out.every((r) => r.status === 200);
    for (let tries = 1; tries < 6 && out.some((r) => r.status === 503 || r.problem?.code === 'previous_entry_failed'); tries++) out = await sendIt();
    assert.deepEqual([...new Set(out.map((r) => r.status))], [200], JSON.stringify(out.find((r) => r.status !== 200)));
    for (const [i, r] of out.entries()) assert.equal(r.anchor?.image_hash, bodies[i]?.sha256_hash);
    // One request that went through at once is one batch, or two when another waiter sealed its window first.
    if (firstComplete) assert.ok(new Set(out.map((r) => r.anchor?.tx_hash)).size <= 2);
  });

  it('is for the Pro and Enterprise tiers, as /evidence/anchor', async () => {
    const starter = await createAccount('starter');
    const res = await send({ anchors: [new Device().next(randomHash())] }, starter.apiKey);
    assert.equal(res.status, 403);
  });
});
