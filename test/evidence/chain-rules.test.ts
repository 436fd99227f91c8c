import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { getLedgerSender } from '../../lib/deps/anchoring.js';
import { getRpcReader } from '../../lib/deps/evidence.js';
import { decodeAnchorData } from '../../lib/ledger/anchor-data.js';
import { createAccount, Device, json, randomHash } from '../support/client.js';
import { useStack } from '../support/stack.js';

let anchorApp: typeof import('../../functions/v2/evidence-anchor.js').app;
let apiKey: string;

before(async () => {
  await useStack();
  anchorApp = (await import('../../functions/v2/evidence-anchor.js')).app;
  apiKey = (await createAccount('enterprise')).apiKey;
});

async function anchor(body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await anchorApp.request('/api/v2/evidence/anchor', json(body, { 'x-api-key': apiKey }));
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function anchorInOrder(device: Device, n: number) {
  for (let i = 0; i < n; i++) {
    const body = device.next();
    const r = await anchor(body);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    device.advance(body);
  }
}

describe('device chain rules', () => {
  it('accepts a genesis entry with previous_hash null, and with 64 zeros', async () => {
    assert.equal((await anchor(new Device().next())).status, 200);
    const zeros = { ...new Device().next(), previous_hash: '0'.repeat(64) };
    assert.equal((await anchor(zeros)).status, 200);
  });

  it('accepts the next index whose previous_hash is the last chain_hash', async () => {
    await anchorInOrder(new Device(), 3);
  });

  it('refuses a previous_hash at index 0 and a missing one later with 400', async () => {
    const d = new Device();
    const genesis = { ...d.next(), previous_hash: randomHash() };
    const r = await anchor(genesis);
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'invalid_previous_hash');

    await anchorInOrder(d, 1);
    const missing = { ...d.next(), previous_hash: null };
    const r2 = await anchor(missing);
    assert.equal(r2.status, 400);
    assert.equal(r2.body.code, 'invalid_previous_hash');
  });

  it('refuses a wrong previous_hash with 400 previous_hash_mismatch', async () => {
    const d = new Device();
    await anchorInOrder(d, 1);
    // A self-consistent link (chain_hash matches its previous_hash) that does not follow entry 0.
    d.previous = randomHash();
    const r = await anchor(d.next());
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'previous_hash_mismatch');
  });

  it('refuses a wrong chain_hash with 400 invalid_chain_hash and says what it expected', async () => {
    const body = { ...new Device().next(), chain_hash: randomHash() };
    const r = await anchor(body);
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'invalid_chain_hash');
    assert.match(String(r.body.expected_chain_hash), /^[0-9a-f]{64}$/);
  });

  it('refuses a bad device signature with 400 invalid_signature', async () => {
    const body = new Device().next();
    const flipped = { ...body, signature_hex: (body.signature_hex[0] === '0' ? '1' : '0') + body.signature_hex.slice(1) };
    const r = await anchor(flipped);
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'invalid_signature');
  });

  it('refuses an index already used with 409 chain_index_conflict naming the next free index', async () => {
    const d = new Device();
    const first = d.next();
    assert.equal((await anchor(first)).status, 200);
    d.advance(first);
    await anchorInOrder(d, 1);
    // A fork: another photo at index 1, correctly linked to entry 0.
    d.index = 1;
    d.previous = first.chain_hash;
    const r = await anchor(d.next());
    assert.equal(r.status, 409);
    assert.equal(r.body.code, 'chain_index_conflict');
    assert.equal(r.body.next_index, 2);
  });

  it('refuses an index that skips ahead with 409 chain_index_conflict', async () => {
    const d = new Device();
    await anchorInOrder(d, 1);
    d.index = 5;
    const r = await anchor(d.next());
    assert.equal(r.status, 409);
    assert.equal(r.body.code, 'chain_index_conflict');
    assert.equal(r.body.next_index, 1);
  });

  it('keeps two devices anchoring in parallel apart', async () => {
    const a = new Device();
    const b = new Device();
    await Promise.all([anchorInOrder(a, 4), anchorInOrder(b, 4)]);
    assert.equal(a.index, 4);
    assert.equal(b.index, 4);
  });
});

describe('concurrency on the ledger', () => {
  it('sends exactly one transaction when 50 requests anchor one hash at once', async () => {
    const imageHash = randomHash();
    const results = await Promise.all(Array.from({ length: 50 }, () => anchor(new Device().next(imageHash))));
    assert.equal(results.filter((r) => r.status === 200).length, 1);
    assert.equal(results.filter((r) => r.status === 409 && r.body.code === 'hash_already_anchored').length, 49);
    const slots = (await (await getLedgerSender()).listSlots()).filter((s) => s.kind === 'anchor' && s.ref === imageHash);
    assert.equal(slots.length, 1, 'one transaction for the hash');
  });

  it('sends 200 transactions with contiguous nonces for 200 different hashes anchored at once', async () => {
    const sender = await getLedgerSender();
    const bodies = Array.from({ length: 200 }, () => new Device().next());
    // 200 at once are more than one process takes in hand (16, the bulkhead: the others wait their
    // turn up to 20 s, then 503 server_busy), and on a loaded machine they can outrun the
    // database's 3.5 s deadline (503 database_unavailable). Every such answer says "Retry the
    // identical request", and a client does so (each resumes its own claim, or starts afresh when
    // nothing was recorded). The outcome asserted is the same: 200 answered 200, one transaction
    // each, contiguous nonces.
    const anchorRetrying = async (b: unknown) => {
      for (let attempt = 1; ; attempt++) {
        const r = await anchor(b);
        if (r.status !== 503 || !['database_unavailable', 'server_busy'].includes(String(r.body.code)) || attempt === 8) return r;
        await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
      }
    };
    const results = await Promise.all(bodies.map((b) => anchorRetrying(b)));
    assert.deepEqual(
      results.filter((r) => r.status !== 200).map((r) => r.body),
      [],
    );
    const wanted = new Set(bodies.map((b) => b.sha256_hash));
    const slots = (await sender.listSlots()).filter((s) => s.kind === 'anchor' && wanted.has(s.ref));
    assert.equal(slots.length, 200);
    const nonces = slots.map((s) => s.nonce).sort((x, y) => x - y);
    const first = nonces[0] ?? -1;
    assert.deepEqual(nonces, Array.from({ length: 200 }, (_, i) => first + i), 'contiguous nonces');
    // Every one is on the chain, carrying its own hash.
    const rpc = getRpcReader();
    const sample = slots.slice(0, 20);
    for (const s of sample) {
      const tx = await rpc.getTransaction(s.tx_hash);
      assert.ok(tx?.blockNumber !== null && tx !== null);
      assert.equal(decodeAnchorData(tx.input).imageHash, s.ref);
    }
  });
});
