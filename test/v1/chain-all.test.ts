import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { useStack } from '../support/stack.js';
import { createAccount, Device, json, randomHash } from '../support/client.js';
import { computeChainHash } from '../../lib/crypto/hash.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { v1Body } from './support.js';

type Page = {
  public_key_hex: string;
  chain_length: number;
  entries: { chain_index: number; image_hash: string; chain_hash: string; previous_hash: string | null; device_id?: string; state: string; tx_hash?: string }[];
  next_cursor: string | null;
  integrity: {
    scope: string;
    verdict: string;
    complete: boolean;
    gaps: { from_index: number; to_index: number }[];
    broken_links: { chain_index: number; problem: string; expected: string | null }[];
  };
};

let anchorApp: typeof import('../../functions/v1/chain-anchor.js').app;
let app: typeof import('../../functions/v1/chain-all.js').app;
let pro: Awaited<ReturnType<typeof createAccount>>;

before(async () => {
  await useStack();
  anchorApp = (await import('../../functions/v1/chain-anchor.js')).app;
  app = (await import('../../functions/v1/chain-all.js')).app;
  pro = await createAccount('pro');
});

/** Anchors `n` links of a new device through the API. */
async function anchoredChain(n: number): Promise<{ device: Device; hashes: string[]; chainHashes: string[] }> {
  const device = new Device();
  const hashes: string[] = [];
  const chainHashes: string[] = [];
  for (let i = 0; i < n; i++) {
    const body = v1Body(device, randomHash(), { device_id: 'cam-1' });
    const res = await anchorApp.request('/api/v1/chain/anchor', json(body, { 'x-api-key': pro.apiKey }));
    assert.equal(res.status, 201, await res.text());
    hashes.push(body.image_hash);
    chainHashes.push(body.chain_hash);
    device.advance(body);
  }
  return { device, hashes, chainHashes };
}

/** Writes a chain entry straight into the chains table, as a tampered or damaged store would hold it. */
async function writeLink(publicKeyHex: string, index: number, previousHash: string | null, chainHash?: string) {
  const imageHash = randomHash();
  await getDb().send(
    new PutCommand({
      TableName: getConfig().tables.chains,
      Item: {
        public_key_hex: publicKeyHex,
        chain_index: index,
        image_hash: imageHash,
        chain_hash: chainHash ?? computeChainHash(previousHash, imageHash),
        previous_hash: previousHash,
        signature_hex: '00'.repeat(64),
        state: 'anchored',
        claim_id: 'test',
        anchored_at: new Date().toISOString(),
      },
    }),
  );
}

const getPage = async (publicKeyHex: string, query = '') => {
  const res = await app.request(`/api/v1/chain/all/${publicKeyHex}${query}`);
  return { res, page: res.status === 200 ? ((await res.json()) as Page) : undefined };
};

describe('GET /api/v1/chain/all/{public_key_hex}', () => {
  it('lists a complete chain in index order with a complete verdict over the whole chain', async () => {
    const { device, hashes, chainHashes } = await anchoredChain(3);
    const { res, page } = await getPage(device.publicKeyHex.toUpperCase());
    assert.equal(res.status, 200);
    assert.ok(page);
    assert.deepEqual(page.entries.map((e) => e.chain_index), [0, 1, 2]);
    assert.deepEqual(page.entries.map((e) => e.image_hash), hashes);
    assert.deepEqual(page.entries.map((e) => e.chain_hash), chainHashes);
    assert.equal(page.entries[1]?.previous_hash, chainHashes[0]);
    assert.equal(page.entries[0]?.device_id, 'cam-1');
    assert.ok(page.entries.every((e) => e.state === 'anchored' && /^0x[0-9a-f]{64}$/.test(e.tx_hash ?? '')));
    assert.equal(page.chain_length, 3);
    assert.equal(page.next_cursor, null);
    assert.deepEqual(page.integrity, { ...page.integrity, scope: 'chain', verdict: 'complete', complete: true, gaps: [], broken_links: [] });
  });

  it('pages a chain with limit and cursor, checking the link into each page', async () => {
    const { device } = await anchoredChain(5);
    const first = await getPage(device.publicKeyHex, '?limit=2');
    assert.deepEqual(first.page?.entries.map((e) => e.chain_index), [0, 1]);
    assert.equal(first.page?.integrity.scope, 'page');
    const indexes = [...(first.page?.entries ?? [])].map((e) => e.chain_index);
    let cursor = first.page?.next_cursor ?? null;
    while (cursor !== null) {
      const next = await getPage(device.publicKeyHex, `?limit=2&cursor=${cursor}`);
      assert.equal(next.res.status, 200);
      assert.equal(next.page?.integrity.complete, true);
      indexes.push(...(next.page?.entries ?? []).map((e) => e.chain_index));
      cursor = next.page?.next_cursor ?? null;
    }
    assert.deepEqual(indexes, [0, 1, 2, 3, 4]);
  });

  it('reports the missing indexes of a chain with a gap as incomplete', async () => {
    const { device, chainHashes } = await anchoredChain(2);
    // Index 2 and 3 missing; index 4 written directly with some previous hash.
    await writeLink(device.publicKeyHex, 4, chainHashes[1] ?? null);
    const { page } = await getPage(device.publicKeyHex);
    assert.equal(page?.integrity.verdict, 'incomplete');
    assert.equal(page?.integrity.complete, false);
    assert.deepEqual(page?.integrity.gaps, [{ from_index: 2, to_index: 3 }]);
    assert.deepEqual(page?.integrity.broken_links, []);
    assert.equal(page?.chain_length, 5);
  });

  it('reports a link whose previous_hash is not the chain_hash before it as broken', async () => {
    const { device } = await anchoredChain(2);
    await writeLink(device.publicKeyHex, 2, randomHash());
    const { page } = await getPage(device.publicKeyHex);
    assert.equal(page?.integrity.verdict, 'broken');
    assert.deepEqual(page?.integrity.broken_links.map((b) => [b.chain_index, b.problem]), [[2, 'previous_hash_mismatch']]);
  });

  it('reports a chain_hash that does not recompute from previous_hash and image_hash as broken', async () => {
    const { device, chainHashes } = await anchoredChain(1);
    await writeLink(device.publicKeyHex, 1, chainHashes[0] ?? null, randomHash());
    const { page } = await getPage(device.publicKeyHex);
    assert.equal(page?.integrity.verdict, 'broken');
    assert.deepEqual(page?.integrity.broken_links.map((b) => [b.chain_index, b.problem]), [[1, 'chain_hash_mismatch']]);
  });

  it('answers 404 device_not_found for an unknown device key', async () => {
    const { res } = await getPage(randomHash());
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { code: string }).code, 'device_not_found');
  });

  it('answers 400 for a malformed key, limit or cursor', async () => {
    for (const url of ['/api/v1/chain/all/not-a-key', `/api/v1/chain/all/${randomHash()}?limit=0`, `/api/v1/chain/all/${randomHash()}?limit=5000`, `/api/v1/chain/all/${randomHash()}?cursor=abc`]) {
      const res = await app.request(url);
      assert.equal(res.status, 400, url);
    }
  });
});

describe('a link whose state lags its anchored evidence (the crash between the two writes)', () => {
  /** Puts the stored link back to 'claimed' with an expired claim, as a crash after the evidence write leaves it. */
  async function lagLink(publicKeyHex: string, index: number) {
    const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
    const key = { public_key_hex: publicKeyHex, chain_index: index };
    const stored = (await getDb().send(new GetCommand({ TableName: getConfig().tables.chains, Key: key }))).Item ?? {};
    const { anchored_at: _a, tx_hash: _t, ...rest } = stored;
    await getDb().send(new PutCommand({ TableName: getConfig().tables.chains, Item: { ...rest, state: 'claimed', claim_expires_at: Date.now() - 60_000 } }));
  }

  it('lists the link as anchored, with its time and transaction, and the chain stays whole and as long', async () => {
    const { device, hashes } = await anchoredChain(2);
    const before = (await (await app.request(`/api/v1/chain/all/${device.publicKeyHex}`)).json()) as Page;
    await lagLink(device.publicKeyHex, 1);
    const res = await app.request(`/api/v1/chain/all/${device.publicKeyHex}`);
    assert.equal(res.status, 200);
    const page = (await res.json()) as Page;
    assert.deepEqual(page, before, 'the lagging link changes nothing a reader can observe');
    assert.equal(page.entries[1]?.state, 'anchored');
    assert.equal(page.entries[1]?.image_hash, hashes[1]);
    assert.equal(page.chain_length, 2);
    assert.equal(page.integrity.verdict, 'complete');
    // A page starting after the lagging link checks the link into it as well.
    const next = (await (await app.request(`/api/v1/chain/all/${device.publicKeyHex}?cursor=2`)).json()) as Page;
    assert.deepEqual(next.integrity.gaps, []);
  });

  it('keeps a claim whose evidence was released (an orphan a crash left behind) out of the chain', async () => {
    const { device, chainHashes } = await anchoredChain(1);
    const imageHash = randomHash();
    await getDb().send(
      new PutCommand({
        TableName: getConfig().tables.chains,
        Item: {
          public_key_hex: device.publicKeyHex,
          chain_index: 1,
          image_hash: imageHash,
          chain_hash: computeChainHash(chainHashes[0] ?? null, imageHash),
          previous_hash: chainHashes[0],
          signature_hex: '00'.repeat(64),
          state: 'claimed',
          claim_id: 'dead-request', // no evidence item holds it
        },
      }),
    );
    const page = (await (await app.request(`/api/v1/chain/all/${device.publicKeyHex}`)).json()) as Page;
    assert.equal(page.chain_length, 1);
    assert.deepEqual(page.entries.map((e) => e.chain_index), [0]);
  });
});
