/**
 * The reconciler's reads cost what the work left costs, not what the tables hold
 * (docs/decisions.md "Cost"): open quota holds come from the sparse index open_holds,
 * unfinished anchors from pending_tx, and the local safety net reads a fixed number of items per
 * pass. Each test counts the DynamoDB requests a read sends, on a private dynalite.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { CreateTableCommand, DeleteTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, GetCommand, PutCommand, ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CounterTable } from '../../lib/store/counter-table.js';
import { TABLE_DEFINITIONS, TABLE_KEYS, type TableKey } from '../../lib/store/dynamo.js';
import { EvidenceTable } from '../../lib/store/evidence-table.js';
import { ensureTables } from '../../lib/store/tables.js';
import { startStore, type Store } from '../ledger/helpers.js';

let store: Store;
before(async () => {
  store = await startStore();
});
after(async () => {
  await store?.stop();
});

/** A client that counts the commands it sends, by name; `before` runs ahead of each one. */
function countingDb(before?: (command: { input: Record<string, unknown> }) => Promise<void>) {
  const sent: string[] = [];
  const db = {
    async send(command: { constructor: { name: string }; input: Record<string, unknown> }) {
      sent.push(command.constructor.name.replace(/Command$/, ''));
      await before?.(command);
      return store.db.send(command as never);
    },
  } as unknown as DynamoDBDocumentClient;
  return { db, sent, reset: () => (sent.length = 0) };
}

/** `n` quota counters without holds, written behind the repository's back (25 per request). */
async function addCounters(table: string, n: number, prefix = 'quota#'): Promise<void> {
  for (let done = 0; done < n; done += 25) {
    const items = Array.from({ length: Math.min(25, n - done) }, () => ({
      PutRequest: { Item: { pk: `${prefix}acc_${randomBytes(6).toString('hex')}#2026-10`, count: 3, expires_at: 2_000_000_000 } },
    }));
    await store.db.send(new BatchWriteCommand({ RequestItems: { [table]: items } }));
  }
}

/** A private counters table (the index's single partition then holds only this test's counters). */
async function privateTables(): Promise<Record<TableKey, string>> {
  const prefix = `bg${randomBytes(4).toString('hex')}-`;
  const tables = Object.fromEntries(TABLE_KEYS.map((k) => [k, `${prefix}${k}`])) as Record<TableKey, string>;
  await ensureTables(store.db, tables);
  return tables;
}

describe('open quota holds are read from the counters that have them', () => {
  it('the same requests, and no Scan, whether the table holds 10 or 1,010 other counters', async () => {
    const { counters: table } = await privateTables();
    const count = countingDb();
    const counters = new CounterTable(count.db, table);
    await addCounters(table, 10);
    const held = `quota#acc_${randomBytes(4).toString('hex')}#2026-11`;
    await counters.increment(held, 100, 2_000_000_000, 'a:1:hold-1');

    count.reset();
    assert.deepEqual((await counters.listHolds('quota#')).holds, [{ pk: held, holds: ['a:1:hold-1'] }]);
    const small = [...count.sent];

    await addCounters(table, 1000);
    count.reset();
    assert.deepEqual((await counters.listHolds('quota#')).holds, [{ pk: held, holds: ['a:1:hold-1'] }]);
    assert.deepEqual(count.sent, small, 'a thousand more counters without holds cost nothing');
    assert.deepEqual(small, ['Query', 'BatchGet']);
  });

  it('reads the counters with holds 100 to a request: 150 of them cost one Query and two BatchGets', async () => {
    const { counters: table } = await privateTables();
    const count = countingDb();
    const counters = new CounterTable(count.db, table);
    const direct = new CounterTable(store.db, table);
    const pks = Array.from({ length: 150 }, (_, i) => `quota#acc_${i}_${randomBytes(4).toString('hex')}#2026-11`);
    for (const pk of pks) await direct.increment(pk, 100, 2_000_000_000, `a:1:${pk}`);
    const found = (await counters.listHolds('quota#')).holds;
    assert.deepEqual(found.map((h) => h.pk), [...pks].sort());
    assert.deepEqual(count.sent, ['Query', 'BatchGet', 'BatchGet']);
  });

  it('a counter whose holds all ended leaves the index, in one conditional write, and then costs nothing', async () => {
    const { counters: table } = await privateTables();
    const count = countingDb();
    const counters = new CounterTable(count.db, table);
    const pk = `quota#acc_${randomBytes(4).toString('hex')}#2026-11`;
    await counters.increment(pk, 100, 2_000_000_000, 'a:1:h');
    assert.equal(await counters.endHold(pk, 'a:1:h', false), true);

    count.reset();
    assert.deepEqual((await counters.listHolds('quota#')).holds, []);
    assert.deepEqual(count.sent, ['Query', 'BatchGet', 'Update'], 'read, found without a hold, taken off');
    const item = (await store.db.send(new GetCommand({ TableName: table, Key: { pk }, ConsistentRead: true }))).Item;
    assert.equal(item?.hold_shard, undefined);
    assert.equal(item?.count, 1, 'the settled unit stays counted');

    count.reset();
    assert.deepEqual((await counters.listHolds('quota#')).holds, []);
    assert.deepEqual(count.sent, ['Query']);
  });

  it('a hold added while the counter is being taken off the index keeps it on the index', async () => {
    const { counters: table } = await privateTables();
    const pk = `quota#acc_${randomBytes(4).toString('hex')}#2026-11`;
    const direct = new CounterTable(store.db, table);
    await direct.increment(pk, 100, 2_000_000_000, 'a:1:first');
    await direct.endHold(pk, 'a:1:first', true);
    // Between the reconciler's read (no hold) and its removal from the index, a request reserves.
    let raced = false;
    const count = countingDb(async (command) => {
      if (!raced && command.input.UpdateExpression === 'REMOVE hold_shard') {
        raced = true;
        await direct.increment(pk, 100, 2_000_000_000, 'a:2:second');
      }
    });
    const counters = new CounterTable(count.db, table);
    assert.deepEqual((await counters.listHolds('quota#')).holds, []);
    assert.ok(raced, 'the removal was attempted');
    assert.deepEqual((await counters.listHolds('quota#')).holds, [{ pk, holds: ['a:2:second'] }], 'the new hold is found on the next pass');
  });

  it('the safety scan finds a hold whose index entry was lost, reading a fixed number of items per pass', async () => {
    const { counters: table } = await privateTables();
    await addCounters(table, 40);
    // An item with a hold and no index entry: what dynalite can leave when it is killed.
    const pk = `quota#acc_${randomBytes(4).toString('hex')}#2026-11`;
    await store.db.send(new PutCommand({ TableName: table, Item: { pk, count: 1, inflight: new Set(['a:1:lost']), expires_at: 2_000_000_000 } }));
    const count = countingDb();
    const counters = new CounterTable(count.db, table);
    assert.deepEqual((await counters.listHolds('quota#')).holds, [], 'the index alone does not know it');

    let found = 0;
    const scanned: number[] = [];
    for (let pass = 0; pass < 5 && !found; pass++) {
      count.reset();
      found = (await counters.listHolds('quota#', { items: 10, restart: pass === 0 })).holds.length;
      scanned.push(count.sent.filter((c) => c === 'Scan').length);
    }
    assert.equal(found, 1, 'found within ⌈41 ÷ 10⌉ passes');
    assert.ok(scanned.every((n) => n >= 1 && n <= 2), `each pass reads one segment: ${scanned.join(', ')} Scan requests`);
  });
});

describe('unfinished anchors: the bounded safety scan of the evidence table', () => {
  it('covers the whole table in ⌈items ÷ budget⌉ passes, each reading at most its budget', async () => {
    const { evidence: table } = await privateTables();
    const count = countingDb();
    const evidence = new EvidenceTable(count.db, table);
    for (let done = 0; done < 50; done += 25) {
      const items = Array.from({ length: 25 }, () => ({ PutRequest: { Item: { image_hash: randomBytes(32).toString('hex'), registered_at: '2026-11-26T00:00:00.000Z' } } }));
      await store.db.send(new BatchWriteCommand({ RequestItems: { [table]: items } }));
    }
    // Unfinished, and not on the index (no pending_shard): only the items themselves tell.
    const lost = randomBytes(32).toString('hex');
    await store.db.send(new PutCommand({ TableName: table, Item: { image_hash: lost, anchor_state: 'publishing', anchor_v: 3 } }));
    assert.deepEqual(await evidence.listUnfinished(100), []);

    const seen: string[] = [];
    let passes = 0;
    let complete = false;
    while (!complete && passes < 10) {
      const step = await evidence.scanUnfinishedSegment({ items: 12, restart: passes === 0 });
      passes++;
      seen.push(...step.hashes);
      complete = step.complete;
      const scans = count.sent.filter((c) => c === 'Scan').length;
      assert.ok(scans <= 2, `one segment per step: ${scans} Scan requests`);
      count.reset();
    }
    assert.deepEqual(seen, [lost], 'the sweep found it, once');
    assert.equal(passes, Math.ceil(51 / 12), 'a sweep of 51 items in steps of 12');
    const again = await evidence.scanUnfinishedSegment({ items: 100, restart: true });
    assert.deepEqual(again, { hashes: [lost], complete: true }, 'a restarted sweep reads from the beginning');
    const full = (await store.db.send(new ScanCommand({ TableName: table, Select: 'COUNT' }))).Count;
    assert.equal(full, 51);
  });
});

describe('a local table from an earlier version gains the index it lacks', () => {
  const oldCounters = async (name: string) => {
    const def = TABLE_DEFINITIONS.counters;
    await store.db.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: def.AttributeDefinitions.filter((a) => a.AttributeName === 'pk'),
        KeySchema: def.KeySchema,
      }),
    );
  };
  const indexes = async (name: string) =>
    ((await store.db.send(new DescribeTableCommand({ TableName: name }))).Table?.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName);
  const items = async (name: string) =>
    ((await store.db.send(new ScanCommand({ TableName: name, ConsistentRead: true }))).Items ?? []).sort((a, b) => (String(a.pk) < String(b.pk) ? -1 : 1));

  it('rebuilt with every item, sets included', async () => {
    const prefix = `mg${randomBytes(4).toString('hex')}-`;
    const tables = Object.fromEntries(TABLE_KEYS.map((k) => [k, `${prefix}${k}`])) as Record<TableKey, string>;
    await oldCounters(tables.counters);
    await addCounters(tables.counters, 30);
    await store.db.send(new PutCommand({ TableName: tables.counters, Item: { pk: 'quota#acc_x#2026-11', count: 2, inflight: new Set(['a:1:x']), expires_at: 2_000_000_000 } }));
    const before = await items(tables.counters);
    assert.deepEqual(await indexes(tables.counters), []);

    await ensureTables(store.db, tables);
    assert.deepEqual(await indexes(tables.counters), ['open_holds']);
    assert.deepEqual(await items(tables.counters), before);
    await assert.rejects(store.db.send(new DescribeTableCommand({ TableName: `${tables.counters}-migrating` })), /not found/i);
  });

  it('an interrupted rebuild is finished at the next start', async () => {
    const prefix = `mg${randomBytes(4).toString('hex')}-`;
    const tables = Object.fromEntries(TABLE_KEYS.map((k) => [k, `${prefix}${k}`])) as Record<TableKey, string>;
    await ensureTables(store.db, tables);
    // Interrupted after the old table was deleted: the items are only in `<name>-migrating`.
    const moving = `${tables.counters}-migrating`;
    await ensureTables(store.db, { ...tables, counters: moving });
    await addCounters(moving, 30);
    const before = await items(moving);
    await store.db.send(new DeleteTableCommand({ TableName: tables.counters }));

    await ensureTables(store.db, tables);
    assert.deepEqual(await items(tables.counters), before);
    assert.deepEqual(await indexes(tables.counters), ['open_holds']);
    await assert.rejects(store.db.send(new DescribeTableCommand({ TableName: moving })), /not found/i);
  });
});
