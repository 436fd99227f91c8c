/**
 * dynalite, the embedded DynamoDB of the local stack, with its on-disk items in SQLite
 * (./sqlite-level.mjs explains why not the LevelDB dynalite ships with). Used by the dynalite
 * child of `npm start` (dynamo-child.mjs) and by startEmbeddedDynamo (dynamo-server.ts); in memory
 * (no directory) dynalite keeps its own memory-level, which has no such bug.
 *
 * dynalite 4 builds its store with `new (require('level').Level)(path)` when its module loads, and
 * takes no store of its own: the `level` module it resolves gets SqliteLevel as its `Level` before
 * dynalite is first imported. Nothing else of dynalite changes.
 *
 * A data directory written by an earlier version (LevelDB files) is migrated once, at start:
 * every entry is read through a LevelDB iterator (which returns the newest version of each key,
 * even where LevelDB's Get would not) into SQLite, then the LevelDB files are set aside as
 * `<dir>.leveldb-<time>` (kept: nothing is deleted).
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { SqliteLevel, SQLITE_FILE } from './sqlite-level.mjs';

const require = createRequire(import.meta.url);
const level = require(require.resolve('level', { paths: [path.dirname(require.resolve('dynalite'))] }));
const LevelDb = level.Level;
level.Level = SqliteLevel;
const { default: dynalite } = await import('dynalite');

/**
 * A dynalite server (not listening yet): with `dir`, on disk in SQLite there (migrated from
 * LevelDB first if the directory holds an earlier store); without, in memory.
 * @param {{ dir?: string }} options
 */
export async function createDynalite(options) {
  if (options.dir) await migrateFromLevelDb(options.dir);
  return dynalite({ ...(options.dir ? { path: options.dir } : {}), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
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
