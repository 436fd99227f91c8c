/**
 * The local DynamoDB's on-disk store (lib/local/sqlite-level.mjs): abstract-level over node:sqlite.
 * Differential against memory-level (dynalite's own in-memory store): the same random puts,
 * deletes and batches, then the same range reads; a read always returns the last write, also
 * while iterators run; data survives a reopen; and an older LevelDB data directory is migrated
 * once, with the newest version of every key, its files kept aside.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { startEmbeddedDynamo } from '../../lib/local/dynamo-server.js';
import { SqliteLevel } from '../../lib/local/sqlite-level.mjs';
import { createDocumentClient } from '../../lib/store/dynamo.js';

const require = createRequire(import.meta.url);
const fromDynalite = (name: string) => require(require.resolve(name, { paths: [path.dirname(require.resolve('dynalite'))] }));
const { MemoryLevel } = fromDynalite('memory-level') as { MemoryLevel: new (options: object) => Db };

interface Db {
  open(): Promise<void>;
  close(): Promise<void>;
  put(key: string, value: unknown): Promise<void>;
  get(key: string): Promise<unknown>;
  del(key: string): Promise<void>;
  batch(ops: { type: 'put' | 'del'; key: string; value?: unknown }[]): Promise<void>;
  iterator(options?: object): AsyncIterable<[string, unknown]> & { next(): Promise<[string, unknown] | undefined>; close(): Promise<void> };
}

const tmp = () => mkdtempSync(path.join(os.tmpdir(), 'sqlite-level-'));
const KEYS = ['a', 'a~', 'a~1', 'a~2', 'a~\xFF', 'b', 'item-x~00/01/', 'item-x~ff/00/', 'index-global~t~i~0a/', 'z', 'é', '\u{1F600}'];
const randomKey = () => (Math.random() < 0.5 ? (KEYS[Math.floor(Math.random() * KEYS.length)] as string) : `k${Math.floor(Math.random() * 300)}`);

async function all(db: Db, options: object): Promise<[string, unknown][]> {
  const out: [string, unknown][] = [];
  for await (const entry of db.iterator(options)) out.push(entry);
  return out;
}

describe('SqliteLevel, the on-disk store under dynalite', () => {
  it('answers every read and range exactly as memory-level does, after the same random writes', async () => {
    const sqlite = new SqliteLevel(tmp(), { valueEncoding: 'json' }) as unknown as Db;
    const memory = new MemoryLevel({ valueEncoding: 'json', storeEncoding: 'utf8' });
    await Promise.all([sqlite.open(), memory.open()]);
    for (let i = 0; i < 2000; i++) {
      const r = Math.random();
      if (r < 0.6) {
        const k = randomKey();
        const v = { i, pad: randomBytes(Math.floor(Math.random() * 50)).toString('hex') };
        await Promise.all([sqlite.put(k, v), memory.put(k, v)]);
      } else if (r < 0.8) {
        const k = randomKey();
        await Promise.all([sqlite.del(k), memory.del(k)]);
      } else {
        const ops = Array.from({ length: 5 }, () => (Math.random() < 0.7 ? { type: 'put' as const, key: randomKey(), value: { i } } : { type: 'del' as const, key: randomKey() }));
        await Promise.all([sqlite.batch(ops), memory.batch(ops)]);
      }
    }
    for (const k of [...KEYS, ...Array.from({ length: 300 }, (_, i) => `k${i}`)]) assert.deepEqual(await sqlite.get(k), await memory.get(k), `get ${k}`);
    const ranges: object[] = [{}, { reverse: true }, { gte: 'a~', lt: 'a~\xFF' }, { gt: 'a', lte: 'k5' }, { gte: 'k1', limit: 7 }, { lt: 'k2', reverse: true, limit: 300 }, { gte: 'item-', lt: 'item-\xFF' }];
    for (const range of ranges) assert.deepEqual(await all(sqlite, range), await all(memory, range), JSON.stringify(range));
    await Promise.all([sqlite.close(), memory.close()]);
  });

  it('reads the last write of every key while iterators run over the same keys, and after a reopen', async () => {
    const dir = tmp();
    const db = new SqliteLevel(dir, { valueEncoding: 'json' }) as unknown as Db;
    await db.open();
    const last = new Map<string, number>();
    const writes = Array.from({ length: 400 }, (_, i) => `key-${i % 80}`);
    const scanner = (async () => {
      for (let round = 0; round < 5; round++) {
        const it = db.iterator();
        for (let e = await it.next(); e; e = await it.next()) await new Promise((r) => setImmediate(r));
        await it.close();
      }
    })();
    for (const [v, k] of writes.entries()) {
      await db.put(k, { v, pad: 'x'.repeat(v * 30) });
      last.set(k, v);
      assert.equal(((await db.get(k)) as { v: number }).v, v);
    }
    await scanner;
    await db.close();
    const reopened = new SqliteLevel(dir, { valueEncoding: 'json' }) as unknown as Db;
    await reopened.open();
    for (const [k, v] of last) assert.equal(((await reopened.get(k)) as { v: number }).v, v, k);
    assert.deepEqual((await all(reopened, {})).map(([k]) => k), [...last.keys()].sort());
    await reopened.close();
  });

  it('migrates a LevelDB data directory of an earlier version once, with the newest version of every item, and keeps its files', async () => {
    const parent = tmp();
    const dir = path.join(parent, 'dynamodb');
    // An earlier version's store: dynalite on classic-level (LevelDB), written through the SDK.
    const before = await startEmbeddedDynamoOnLevelDb(dir);
    const items = Array.from({ length: 50 }, (_, i) => ({ pk: `item-${i}`, v: 1 }));
    for (const item of items) await before.db.send(new PutCommand({ TableName: 'items', Item: item }));
    for (const item of items.slice(0, 10)) await before.db.send(new PutCommand({ TableName: 'items', Item: { ...item, v: 2 } }));
    await before.stop();

    const after = await startEmbeddedDynamo({ dir });
    const db = createDocumentClient({ region: 'local', endpoint: after.endpoint });
    try {
      const scanned = (await db.send(new ScanCommand({ TableName: 'items' }))).Items ?? [];
      assert.equal(scanned.length, 50);
      assert.equal((await db.send(new GetCommand({ TableName: 'items', Key: { pk: 'item-3' } }))).Item?.v, 2);
      assert.equal((await db.send(new GetCommand({ TableName: 'items', Key: { pk: 'item-30' } }))).Item?.v, 1);
    } finally {
      db.destroy();
      await after.stop();
    }
    const entries = readdirSync(parent);
    assert.ok(entries.some((e) => e.startsWith('dynamodb.leveldb-')), `the LevelDB files are kept: ${entries.join(', ')}`);
    assert.ok(existsSync(path.join(dir, 'items.sqlite')));
    assert.ok(!existsSync(path.join(dir, 'CURRENT')), 'the store is SQLite now');
  });
});

describe('dynalite on SqliteLevel: an item and its index entries in one transaction', () => {
  it('writes no index entry apart from its item, and the index answers each item as last written', async () => {
    // Every write that reaches the store outside an item's transaction, by key.
    const apart: string[] = [];
    const proto = SqliteLevel.prototype as unknown as Record<'_put' | '_del' | '_batch', (...args: unknown[]) => Promise<void>>;
    const original = { put: proto._put, del: proto._del, batch: proto._batch };
    proto._put = function (this: unknown, key: unknown, ...rest: unknown[]) {
      apart.push(String(key));
      return original.put.call(this, key, ...rest);
    };
    proto._del = function (this: unknown, key: unknown, ...rest: unknown[]) {
      apart.push(String(key));
      return original.del.call(this, key, ...rest);
    };
    proto._batch = function (this: unknown, ops: unknown, ...rest: unknown[]) {
      for (const op of ops as { key: string }[]) apart.push(op.key);
      return original.batch.call(this, ops, ...rest);
    };
    const dynamo = await startEmbeddedDynamo({ dir: tmp() });
    const db = createDocumentClient({ region: 'local', endpoint: dynamo.endpoint });
    try {
      const { CreateTableCommand, QueryCommand } = await import('@aws-sdk/client-dynamodb');
      await db.send(
        new CreateTableCommand({
          TableName: 'jobs',
          AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }, { AttributeName: 'shard', AttributeType: 'S' }, { AttributeName: 'due', AttributeType: 'S' }],
          KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
          GlobalSecondaryIndexes: [{ IndexName: 'due', KeySchema: [{ AttributeName: 'shard', KeyType: 'HASH' }, { AttributeName: 'due', KeyType: 'RANGE' }], Projection: { ProjectionType: 'ALL' } }],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
      // Each job moved along the index several times (a claim), some leave it (done), a few are deleted.
      const last = new Map<string, { due?: string; v: number } | null>();
      for (let round = 1; round <= 4; round++) {
        await Promise.all(
          Array.from({ length: 20 }, async (_, i) => {
            const pk = `job${i}`;
            if (round === 4 && i % 5 === 0) {
              await db.send(new (await import('@aws-sdk/lib-dynamodb')).DeleteCommand({ TableName: 'jobs', Key: { pk } }));
              last.set(pk, null);
              return;
            }
            const done = round === 3 && i % 2 === 0;
            const item = { pk, v: round, ...(done ? {} : { shard: 's', due: `2026-11-29T00:0${round}:${String(i).padStart(2, '0')}Z` }) };
            await db.send(new PutCommand({ TableName: 'jobs', Item: item }));
            last.set(pk, done ? { v: round } : { due: item.due, v: round });
          }),
        );
      }
      const indexed = await db.send(new QueryCommand({ TableName: 'jobs', IndexName: 'due', KeyConditionExpression: '#shard = :s', ExpressionAttributeNames: { '#shard': 'shard' }, ExpressionAttributeValues: { ':s': { S: 's' } } }));
      const seen = new Map((indexed.Items ?? []).map((it) => [String(it.pk?.S), { due: it.due?.S, v: Number(it.v?.N) }]));
      const expected = new Map([...last].filter((e): e is [string, { due: string; v: number }] => e[1] !== null && e[1].due !== undefined));
      assert.deepEqual(new Map([...seen].sort()), new Map([...expected].sort()), 'the index holds exactly the items that are due, as last written');
      // The items' own writes come through _put and _del; their index entries go with them, never on their own.
      assert.ok(apart.some((k) => k.startsWith('item-jobs~')), 'the interception saw the item writes');
      assert.deepEqual(apart.filter((k) => k.startsWith('index-')), [], 'no index entry was written apart from its item');
    } finally {
      db.destroy();
      await dynamo.stop();
      Object.assign(proto, { _put: original.put, _del: original.del, _batch: original.batch });
    }
  });
});

/**
 * dynalite as an earlier version ran it (items in LevelDB), in a child process: this process's
 * dynalite module already has SQLite as its store.
 */
async function startEmbeddedDynamoOnLevelDb(dir: string): Promise<{ db: ReturnType<typeof createDocumentClient>; stop: () => Promise<void> }> {
  const { spawn } = await import('node:child_process');
  const script = `
    const dynalite = require(${JSON.stringify(require.resolve('dynalite'))});
    const server = dynalite({ path: ${JSON.stringify(dir)}, createTableMs: 0 });
    server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
    process.on('SIGTERM', () => server.close(() => process.exit(0)));`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', (code) => reject(new Error(`dynalite (LevelDB) exited ${code}`)));
  });
  const db = createDocumentClient({ region: 'local', endpoint: `http://127.0.0.1:${port}` });
  const { CreateTableCommand } = await import('@aws-sdk/client-dynamodb');
  await db.send(new CreateTableCommand({ TableName: 'items', AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }], BillingMode: 'PAY_PER_REQUEST' }));
  return {
    db,
    stop: async () => {
      db.destroy();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
