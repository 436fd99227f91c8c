/**
 * dynalite, the embedded DynamoDB of the local stack, with its on-disk items in SQLite
 * (./sqlite-level.mjs explains why not the LevelDB dynalite ships with). Used by the dynalite
 * child of `npm start` (dynamo-child.mjs) and by startEmbeddedDynamo (dynamo-server.ts); in memory
 * (no directory) dynalite keeps its own memory-level, which has no such bug.
 *
 * dynalite 4 builds its store with `new (require('level').Level)(path)` when its module loads, and
 * takes no store of its own: the `level` module it resolves gets SqliteLevel as its `Level` before
 * dynalite is first imported. Its expression parsers are cached (./dynalite-expressions.mjs).
 *
 * A data directory written by an earlier version (LevelDB files) is migrated once, at start:
 * every entry is read through a LevelDB iterator (which returns the newest version of each key,
 * even where LevelDB's Get would not) into SQLite, then the LevelDB files are set aside as
 * `<dir>.leveldb-<time>` (kept: nothing is deleted).
 *
 * In memory, the same store runs on an in-memory SQLite database (not dynalite's memory-level),
 * so that both have the change feed below.
 *
 * The change feed (DynamoDB Streams' local stand-in; docs/decisions.md "Derived data"): a table
 * created with `StreamSpecification: { StreamEnabled: true }` (infra/tables.json: the evidence
 * table) gets one record per item change, with its keys and its old and new image, in the shape
 * of a Lambda DynamoDB stream event record, stored in the SAME SQLite transaction as the item
 * write: the feed holds a change if and only if the item changed, across a SIGKILL too. dynalite
 * calls `db.updateIndexes(store, table, old, new)` under the item's lock just before it writes the
 * item; the change is staged there, with the item's index entries, and written with the item
 * (sqlite-level.mjs). The server
 * answers two operations of its own on the same endpoint, `X-Amz-Target:
 * LocalChangeFeed.ReadChanges` `{TableName, After, Limit}` → `{Records, Last}` and
 * `LocalChangeFeed.TrimChanges` `{TableName, UpTo}`: the consumer (lib/local/change-feed.ts) reads
 * in order and trims what it applied. Besides when index entries are written (with their item:
 * updateIndexes below), nothing else of dynalite changes.
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { installExpressionCache } from './dynalite-expressions.mjs';
import { IN_MEMORY, SqliteLevel, SQLITE_FILE } from './sqlite-level.mjs';

const require = createRequire(import.meta.url);
const dynaliteDir = path.dirname(require.resolve('dynalite'));
const level = require(require.resolve('level', { paths: [dynaliteDir] }));
const LevelDb = level.Level;
level.Level = SqliteLevel;
const memoryLevel = require(require.resolve('memory-level', { paths: [dynaliteDir] }));
memoryLevel.MemoryLevel = class MemorySqliteLevel extends SqliteLevel {
  /** @param {object} [options] */
  constructor(options) {
    super(IN_MEMORY, options);
  }
};

// CreateTable keeps StreamSpecification (dynalite's validation drops what it does not know).
require(path.join(dynaliteDir, 'validations', 'createTable.js')).types.StreamSpecification = {
  type: 'FieldStruct<StreamSpecification>',
  children: { StreamEnabled: { type: 'Boolean', notNull: true }, StreamViewType: { type: 'String', enum: ['NEW_IMAGE', 'OLD_IMAGE', 'NEW_AND_OLD_IMAGES', 'KEYS_ONLY'] } },
};

const dynaliteDb = require(path.join(dynaliteDir, 'db', 'index.js'));
/** The store of the dynalite created last (createDynalite takes it right after). */
let lastStore;
const create = dynaliteDb.create;
dynaliteDb.create = (/** @type {object} */ options) => (lastStore = create(options));
/**
 * dynalite's updateIndexes, staged: the index entries' deletes and puts dynalite would write one
 * by one before the item (db/index.js updateIndexes, from its own getIndexActions) are staged with
 * the item's key instead, with its change record on a table with a stream, and written in the
 * item's transaction (sqlite-level.mjs stageWrite). Without this a SIGKILL of the database between
 * an index write and the item write left them apart for good: `npm run chaos` killed it during a
 * webhook delivery's claim, whose old `due` entry was deleted and new one never written, so the
 * delivery was pending and never due again. As in DynamoDB, an index answers the item as written.
 */
dynaliteDb.updateIndexes = function (/** @type {any} */ store, /** @type {any} */ table, /** @type {any} */ oldItem, /** @type {any} */ newItem, /** @type {Function} */ cb) {
  if (!oldItem && !newItem) return cb();
  const item = newItem ?? oldItem;
  /** @type {{ type: 'put' | 'del', key: string, value?: string }[]} */
  const ops = [];
  for (const indexType of ['Local', 'Global']) {
    const actions = dynaliteDb.getIndexActions(table[`${indexType}SecondaryIndexes`] || [], oldItem, newItem, table);
    const prefix = (/** @type {string} */ index) => `index-${indexType.toLowerCase()}~${table.TableName}~${index}~`;
    for (const d of actions.deletes) ops.push({ type: 'del', key: prefix(d.index) + d.key });
    for (const p of actions.puts) ops.push({ type: 'put', key: prefix(p.index) + p.key, value: JSON.stringify(p.item) });
  }
  let change;
  if (table.StreamSpecification?.StreamEnabled) {
    const keys = Object.fromEntries(table.KeySchema.map((/** @type {any} */ k) => [k.AttributeName, item[k.AttributeName]]));
    const record = {
      eventName: !oldItem ? 'INSERT' : newItem ? 'MODIFY' : 'REMOVE',
      dynamodb: {
        ApproximateCreationDateTime: Math.floor(Date.now() / 1000),
        Keys: keys,
        ...(newItem ? { NewImage: newItem } : {}),
        ...(oldItem ? { OldImage: oldItem } : {}),
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    };
    change = { table: table.TableName, record: JSON.stringify(record) };
  }
  // A table with neither indexes nor a stream has nothing to go with its items: they are written as they are,
  // outside a transaction. (Decided per table, so that a stale staged write of a key is always replaced.)
  const hasIndexes = (table.LocalSecondaryIndexes?.length ?? 0) + (table.GlobalSecondaryIndexes?.length ?? 0) > 0;
  if (hasIndexes || change) store.db.stageWrite(`item-${table.TableName}~${dynaliteDb.createKey(item, table)}`, { type: newItem ? 'put' : 'del', ops, ...(change ? { change } : {}) });
  return cb();
};

// Its expressions parsed once per shape (dynalite-expressions.mjs: a quarter of its CPU otherwise).
installExpressionCache();
const { default: dynalite } = await import('dynalite');

const FEED_TARGET = 'LocalChangeFeed.';

/**
 * A dynalite server (not listening yet): with `dir`, on disk in SQLite there (migrated from
 * LevelDB first if the directory holds an earlier store); without, in memory.
 * @param {{ dir?: string }} options
 */
export async function createDynalite(options) {
  if (options.dir) await migrateFromLevelDb(options.dir);
  const server = dynalite({ ...(options.dir ? { path: options.dir } : {}), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  const store = lastStore;
  const handlers = server.listeners('request');
  server.removeAllListeners('request');
  server.on('request', (req, res) => {
    const target = String(req.headers['x-amz-target'] ?? '');
    if (target.startsWith(FEED_TARGET)) return feed(store.db, target.slice(FEED_TARGET.length), req, res);
    for (const handler of handlers) handler.call(server, req, res);
  });
  return server;
}

/**
 * The change feed's two operations (see the module comment).
 * @param {SqliteLevel} db @param {string} operation @param {import('node:http').IncomingMessage} req @param {import('node:http').ServerResponse} res
 */
async function feed(db, operation, req, res) {
  const send = (/** @type {number} */ status, /** @type {object} */ body) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  try {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    const table = String(input.TableName ?? '');
    if (!table) return send(400, { __type: 'ValidationException', message: 'TableName is required' });
    if (operation === 'ReadChanges') {
      const rows = db.readChanges(table, Number(input.After ?? 0), Math.min(1000, Math.max(1, Number(input.Limit ?? 100))));
      const Records = rows.map(({ seq, rec }) => {
        const record = JSON.parse(rec);
        record.eventID = String(seq);
        record.eventVersion = '1.1';
        record.eventSource = 'aws:dynamodb';
        record.awsRegion = 'local';
        record.eventSourceARN = `arn:aws:dynamodb:local:000000000000:table/${table}/stream/local`;
        record.dynamodb.SequenceNumber = String(seq).padStart(21, '0');
        record.dynamodb.SizeBytes = rec.length;
        return record;
      });
      return send(200, { Records, Last: rows.at(-1)?.seq ?? Number(input.After ?? 0) });
    }
    if (operation === 'TrimChanges') {
      db.trimChanges(table, Number(input.UpTo ?? 0));
      return send(200, {});
    }
    return send(400, { __type: 'UnknownOperationException', message: operation });
  } catch (error) {
    return send(500, { __type: 'InternalFailure', message: String(/** @type {Error} */ (error).message) });
  }
}

/** @param {string} dir */
async function migrateFromLevelDb(dir) {
  const staging = `${dir}.migrating`;
  if (existsSync(staging)) rmSync(staging, { recursive: true, force: true }); // a migration that died: start it again
  if (!existsSync(path.join(dir, 'CURRENT')) || existsSync(path.join(dir, SQLITE_FILE))) return;
  const from = new LevelDb(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  const to = new SqliteLevel(staging, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  await Promise.all([from.open(), to.open()]);
  let batch = [];
  let entries = 0;
  for await (const [key, value] of from.iterator()) {
    batch.push({ type: 'put', key, value });
    entries += 1;
    if (batch.length >= 1000) {
      await to.batch(batch);
      batch = [];
    }
  }
  if (batch.length) await to.batch(batch);
  await Promise.all([from.close(), to.close()]);
  const aside = `${dir}.leveldb-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  renameSync(dir, aside);
  renameSync(staging, dir);
  process.stderr.write(`dynamodb: migrated ${entries} entries from LevelDB to SQLite; the LevelDB files are kept in ${aside}\n`);
}
