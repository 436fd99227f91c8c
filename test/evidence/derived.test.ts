/**
 * Derived data (lib/evidence/derived.ts) through the embedded dynalite's change feed
 * (lib/local/dynalite-store.mjs, lib/local/change-feed.ts), on a dynalite of its own so that no
 * other test's consumer reads this feed: statistics exact, links marked, nothing counted twice
 * when a consumer dies between applying and trimming.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { loadConfig } from '../../lib/config.js';
import { applyChanges } from '../../lib/evidence/derived.js';
import { itemChangeOf, type StreamRecord } from '../../lib/deps/derived.js';
import { LOCAL_SHARD, LocalChangeFeed } from '../../lib/local/change-feed.js';
import { type EmbeddedDynamo, startEmbeddedDynamo } from '../../lib/local/dynamo-server.js';
import { ChainTable } from '../../lib/store/chain-table.js';
import { createDocumentClient } from '../../lib/store/dynamo.js';
import { EvidenceTable } from '../../lib/store/evidence-table.js';
import { StatsRecorder } from '../../lib/store/stats-counters.js';
import { ensureTables } from '../../lib/store/tables.js';

let dynamo: EmbeddedDynamo;
let db: ReturnType<typeof createDocumentClient>;
let tables: ReturnType<typeof loadConfig>['tables'];
let stats: StatsRecorder;
let chains: ChainTable;
const stores = () => ({ applyStats: stats.applyStats.bind(stats), putAnchoredLinks: chains.putAnchoredLinks.bind(chains) });
const hex = () => randomBytes(32).toString('hex');

before(async () => {
  dynamo = await startEmbeddedDynamo();
  tables = loadConfig({ TABLE_PREFIX: `derived-${randomBytes(3).toString('hex')}-` }).tables;
  db = createDocumentClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  await ensureTables(db, tables);
  stats = new StatsRecorder(db, tables.counters);
  chains = new ChainTable(db, tables.chains);
});

after(async () => {
  db.destroy();
  await dynamo.stop();
});

/** An anchor's item as the state machine leaves it: publishing, then anchored (two writes, as the anchor makes them). */
async function anchorItem(chainIndex: number, merkle?: { leaf_index: number }) {
  const imageHash = hex();
  const publicKeyHex = hex();
  const item = { image_hash: imageHash, anchor_state: 'publishing', anchor_v: 1, public_key_hex: publicKeyHex, chain_index: chainIndex, chain_hash: hex(), previous_hash: null, signature_hex: 'ab'.repeat(64), claim_id: 'c1', anchored_at: new Date().toISOString(), tx_hash: `0x${hex()}`, account_id: 'acc_x' };
  await db.send(new PutCommand({ TableName: tables.evidence, Item: item }));
  await db.send(
    new UpdateCommand({
      TableName: tables.evidence,
      Key: { image_hash: imageHash },
      UpdateExpression: `SET anchor_state = :a, anchor_v = :v, tx_status = :p${merkle ? ', merkle = :m' : ''}`,
      ExpressionAttributeValues: { ':a': 'anchored', ':v': 2, ':p': 'pending', ...(merkle ? { ':m': merkle } : {}) },
    }),
  );
  return { imageHash, publicKeyHex, chainIndex, txHash: item.tx_hash };
}

const feedRead = async (after = 0) =>
  (await (
    await fetch(dynamo.endpoint, { method: 'POST', headers: { 'x-amz-target': 'LocalChangeFeed.ReadChanges' }, body: JSON.stringify({ TableName: tables.evidence, After: after, Limit: 1000 }) })
  ).json()) as { Records: StreamRecord[]; Last: number };

describe('derived data from the evidence table’s change feed', () => {
  it('counts registrations, anchors, devices and transactions exactly, and marks the anchored links', async () => {
    const evidence = new EvidenceTable(db, tables.evidence);
    const hash = hex();
    // Two accounts register one hash; one account registers it twice: two registrations.
    await evidence.register(hash, 'acc_a', new Date().toISOString(), `g:1:${hash}`);
    await evidence.register(hash, 'acc_b', new Date().toISOString(), `g:2:${hash}`);
    await evidence.register(hash, 'acc_a', new Date().toISOString(), `g:3:${hash}`);
    const direct = await anchorItem(0); // a new device, its own transaction
    const leaf0 = await anchorItem(5, { leaf_index: 0 }); // a batch's first leaf: the batch's transaction
    const leaf1 = await anchorItem(6, { leaf_index: 1 });
    // The evidence item written again after it was anchored (a receipt): nothing more to count.
    await db.send(new UpdateCommand({ TableName: tables.evidence, Key: { image_hash: direct.imageHash }, UpdateExpression: 'SET tx_status = :c', ExpressionAttributeValues: { ':c': 'confirmed' } }));

    const feed = new LocalChangeFeed(dynamo.endpoint, tables.evidence, stores());
    assert.ok((await feed.drain()) >= 9);
    assert.deepEqual((await stats.read()).totals, { registered: 2, anchored: 3, devices: 1, transactions: 2 });
    assert.equal((await feed.drain()) , 0, 'the feed is trimmed once applied');
    for (const a of [direct, leaf0, leaf1]) {
      const link = (await db.send(new GetCommand({ TableName: tables.chains, Key: { public_key_hex: a.publicKeyHex, chain_index: a.chainIndex }, ConsistentRead: true }))).Item;
      assert.equal(link?.state, 'anchored');
      assert.equal(link?.image_hash, a.imageHash);
      assert.equal(link?.tx_hash, a.txHash);
    }
  });

  it('counts nothing twice when a consumer dies after applying and before trimming', async () => {
    const before = (await stats.read()).totals;
    await anchorItem(0);
    await anchorItem(0);
    // A consumer applies the changes and dies before it trims them…
    const page = await feedRead();
    assert.ok(page.Records.length >= 4);
    await applyChanges(stores(), LOCAL_SHARD, page.Records.map(itemChangeOf));
    // …and the next one reads them again.
    assert.equal(await new LocalChangeFeed(dynamo.endpoint, tables.evidence, stores()).drain(), page.Records.length);
    const totals = (await stats.read()).totals;
    assert.equal(totals.anchored, before.anchored + 2);
    assert.equal(totals.devices, before.devices + 2);
    assert.equal(totals.transactions, before.transactions + 2);
  });

  it('holds a change only for a write that happened: a refused conditional write leaves no record', async () => {
    const hash = hex();
    await db.send(new PutCommand({ TableName: tables.evidence, Item: { image_hash: hash, anchor_state: 'publishing', anchor_v: 1 } }));
    const before = (await feedRead()).Records.length;
    await assert.rejects(db.send(new PutCommand({ TableName: tables.evidence, Item: { image_hash: hash, anchor_state: 'anchored' }, ConditionExpression: 'attribute_not_exists(image_hash)' })));
    assert.equal((await feedRead()).Records.length, before);
    await new LocalChangeFeed(dynamo.endpoint, tables.evidence, stores()).drain();
  });
});
