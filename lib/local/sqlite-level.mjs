/**
 * The storage under the embedded DynamoDB (dynalite) on disk: an abstract-level database kept in
 * SQLite through Node's own `node:sqlite`, in place of the LevelDB that dynalite ships with.
 *
 * Why our own adapter (the one module of the local stack written for storage):
 * - Measured: dynalite 4 stores items in classic-level 3.0.0, which bundles LevelDB 1.20. Under the
 *   service's load its compactions leave an older version of a key in a shallower level than the
 *   newer ones (google/leveldb#320, fixed upstream in 1.22 by "AddBoundaryInputs"; classic-level
 *   never took the fix). LevelDB's Get then returns the OLD item while iterators return the newest:
 *   an anchored evidence item read back as `accepting` (a lost 200), and dynalite's conditional
 *   writes evaluated against that stale item. Reproduced twice in 90 s of writes with classic-level
 *   alone, and once in a 70 s chaos run of the service (1 key of 12,414). No classic-level option
 *   avoids it (a larger maxFileSize only makes it rarer; above ~204 MiB LevelDB's int arithmetic
 *   overflows). docs/state-machines.md, "The local store", has the measurements.
 * - The kept alternatives cannot serve here: `sqlite-level` needs better-sqlite3, whose install
 *   downloads a prebuilt binary (no internet beyond the npm registry) or compiles it for the Node
 *   running npm (20 on this kind of machine), not the Node 24 the scripts run on.
 * - SQLite is a B-tree with transactions: a read always returns the last committed write, so the
 *   class of bug cannot exist, and WAL mode with synchronous=NORMAL keeps every committed write
 *   across a SIGKILL of the process (only an OS crash may lose the last ones).
 *
 * abstract-level 3 (the `level` API dynalite 4 uses): utf8 keys and values (dynalite's keys are
 * strings; its JSON values are encoded to strings by abstract-level), ordered by SQLite's BINARY
 * collation, which compares the UTF-8 bytes as LevelDB's bytewise comparator does. Iterators read
 * in pages (no snapshots: dynalite's scans and queries are not snapshot-consistent in DynamoDB
 * either). Every operation is synchronous inside one event-loop turn, so a batch is atomic.
 */
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
// The abstract-level that dynalite's `level` is built on (dynalite calls the API it defines).
const { AbstractLevel, AbstractIterator } = require(require.resolve('abstract-level', { paths: [path.dirname(require.resolve('dynalite'))] }));

/** The file inside the database directory. */
export const SQLITE_FILE = 'items.sqlite';
const PAGE = 256;

/**
 * @typedef {{ type: 'put' | 'del', ops: { type: 'put' | 'del', key: string, value?: string }[], change?: { table: string, record: string } }} StagedWrite
 */

/** The location of a database kept in memory (dynalite without a directory: tests, benchmarks). */
export const IN_MEMORY = ':memory:';

export class SqliteLevel extends AbstractLevel {
  /** @type {string} */ #location;
  /** @type {import('node:sqlite').DatabaseSync | undefined} */ #db;
  /** @type {Record<string, import('node:sqlite').StatementSync>} */ #stmt = {};
  /**
   * What is staged for the next write of an item's key (stageWrite): its index entries' writes
   * and, on a table with a stream, its change; both go into the same SQLite transaction as the
   * item, so that a SIGKILL leaves the item, its index entries and the change feed all written or
   * none (dynalite itself writes the index entries first, each on its own).
   * @type {Map<string, StagedWrite>}
   */
  #staged = new Map();

  /** @param {string} location a directory, or IN_MEMORY @param {object} [options] */
  constructor(location, options) {
    super(
      {
        seek: false,
        permanence: true,
        createIfMissing: true,
        errorIfExists: false,
        encodings: { utf8: true },
        implicitSnapshots: false,
        explicitSnapshots: false,
        signals: { iterators: false },
      },
      options,
    );
    this.#location = location;
  }

  get location() {
    return this.#location;
  }

  async _open() {
    const memory = this.#location === IN_MEMORY;
    // Owner-only whoever opens it (docs/configuration.md, DATA_DIR): the file is made 0600 before
    // SQLite opens it (SQLite would make it 0644 less the umask), and SQLite gives its -wal and
    // -shm files the database file's mode.
    const file = path.join(this.#location, SQLITE_FILE);
    if (!memory) {
      mkdirSync(this.#location, { recursive: true, mode: 0o700 });
      closeSync(openSync(file, 'a', 0o600));
    }
    // Loaded here, not at the top (Node 22 prints an ExperimentalWarning when it is loaded; Node 24.21 does not).
    const { DatabaseSync } = await import('node:sqlite');
    const db = new DatabaseSync(memory ? IN_MEMORY : file);
    if (!memory) {
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = NORMAL');
    }
    db.exec('CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID');
    // The change feed of the tables that have a stream (dynalite-store.mjs): one row per item
    // change, in the order they happened.
    db.exec('CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, rec TEXT NOT NULL)');
    this.#db = db;
    this.#stmt = {
      get: db.prepare('SELECT v FROM kv WHERE k = ?'),
      put: db.prepare('INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v'),
      del: db.prepare('DELETE FROM kv WHERE k = ?'),
      change: db.prepare('INSERT INTO changes (tbl, rec) VALUES (?, ?)'),
      read: db.prepare('SELECT seq, rec FROM changes WHERE tbl = ? AND seq > ? ORDER BY seq LIMIT ?'),
      trim: db.prepare('DELETE FROM changes WHERE tbl = ? AND seq <= ?'),
    };
  }

  /**
   * Stages the writes that go with the next write of an item's key (`type`: a put or a delete):
   * that write stores the item, `ops` (its index entries, raw keys and encoded values) and
   * `change` (its change record) in one transaction. A staged write whose item write never comes
   * (it failed before the store) is replaced by the next one of the key.
   * @param {string} key @param {StagedWrite} staged
   */
  stageWrite(key, staged) {
    this.#staged.set(key, staged);
  }

  /**
   * The changes of `table` after `after`, oldest first, at most `limit`.
   * @param {string} table @param {number} after @param {number} limit
   * @returns {{ seq: number, rec: string }[]}
   */
  readChanges(table, after, limit) {
    return /** @type {{ seq: number, rec: string }[]} */ (this.#stmt.read?.all(table, after, limit));
  }

  /** Forgets the changes of `table` up to `upTo` (their consumer applied them). @param {string} table @param {number} upTo */
  trimChanges(table, upTo) {
    this.#stmt.trim?.run(table, upTo);
  }

  /** Runs `write` with what is staged for `key` (if its type matches), in one transaction. @param {string} key @param {'put' | 'del'} type @param {() => void} write */
  #withChange(key, type, write) {
    const staged = this.#staged.get(key);
    if (!staged || staged.type !== type) return write();
    this.#staged.delete(key);
    const db = /** @type {import('node:sqlite').DatabaseSync} */ (this.#db);
    db.exec('BEGIN IMMEDIATE');
    try {
      for (const op of staged.ops) {
        if (op.type === 'put') this.#stmt.put?.run(op.key, /** @type {string} */ (op.value));
        else this.#stmt.del?.run(op.key);
      }
      write();
      if (staged.change) this.#stmt.change?.run(staged.change.table, staged.change.record);
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
  }

  async _close() {
    this.#db?.close();
    this.#db = undefined;
  }

  /** @param {string} key */
  async _get(key) {
    const row = /** @type {{ v: string } | undefined} */ (this.#stmt.get?.get(key));
    return row?.v;
  }

  /** @param {string[]} keys */
  async _getMany(keys) {
    return keys.map((k) => /** @type {{ v: string } | undefined} */ (this.#stmt.get?.get(k))?.v);
  }

  /** @param {string} key @param {string} value */
  async _put(key, value) {
    this.#withChange(key, 'put', () => this.#stmt.put?.run(key, value));
  }

  /** @param {string} key */
  async _del(key) {
    this.#withChange(key, 'del', () => this.#stmt.del?.run(key));
  }

  /** @param {{ type: 'put' | 'del', key: string, value?: string }[]} operations */
  async _batch(operations) {
    const db = /** @type {import('node:sqlite').DatabaseSync} */ (this.#db);
    db.exec('BEGIN IMMEDIATE');
    try {
      for (const op of operations) {
        if (op.type === 'put') this.#stmt.put?.run(op.key, /** @type {string} */ (op.value));
        else this.#stmt.del?.run(op.key);
      }
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
  }

  /** @param {object} options */
  async _clear(options) {
    const { where, params } = rangeClause(options);
    /** @type {import('node:sqlite').DatabaseSync} */ (this.#db).prepare(`DELETE FROM kv${where}`).run(...params);
  }

  /** @param {object} options */
  _iterator(options) {
    return new SqliteIterator(this, /** @type {import('node:sqlite').DatabaseSync} */ (this.#db), options);
  }

  /** Every entry in key order (the migration from an older data directory). */
  *entries() {
    yield* /** @type {import('node:sqlite').DatabaseSync} */ (this.#db).prepare('SELECT k, v FROM kv ORDER BY k').iterate();
  }
}

/**
 * The WHERE clause of a range (gt/gte/lt/lte, as abstract-level passes them, already encoded).
 * @param {{ gt?: string, gte?: string, lt?: string, lte?: string }} options
 * @param {string} [after] continue after this key (paging)
 * @param {boolean} [reverse]
 */
function rangeClause(options, after, reverse = false) {
  /** @type {[string, string | undefined][]} */
  const bounds = [
    ['k > ?', options.gt],
    ['k >= ?', options.gte],
    ['k < ?', options.lt],
    ['k <= ?', options.lte],
    [reverse ? 'k < ?' : 'k > ?', after],
  ];
  const set = bounds.filter(([, value]) => value !== undefined);
  const parts = set.map(([clause]) => clause);
  const params = set.map(([, value]) => /** @type {string} */ (value));
  return { where: parts.length ? ` WHERE ${parts.join(' AND ')}` : '', params };
}

class SqliteIterator extends AbstractIterator {
  /** @type {import('node:sqlite').DatabaseSync} */ #db;
  #options;
  /** @type {[string, string][]} */ #page = [];
  /** @type {string | undefined} */ #last;
  #done = false;

  /** @param {SqliteLevel} level @param {import('node:sqlite').DatabaseSync} db @param {any} options */
  constructor(level, db, options) {
    super(level, options);
    this.#db = db;
    this.#options = options;
  }

  #fill() {
    if (this.#page.length > 0 || this.#done) return;
    const reverse = Boolean(this.#options.reverse);
    const { where, params } = rangeClause(this.#options, this.#last, reverse);
    const rows = /** @type {{ k: string, v: string }[]} */ (
      this.#db.prepare(`SELECT k, v FROM kv${where} ORDER BY k ${reverse ? 'DESC' : 'ASC'} LIMIT ${PAGE}`).all(...params)
    );
    if (rows.length < PAGE) this.#done = true;
    this.#page = rows.map((r) => [r.k, r.v]);
    const tail = rows.at(-1);
    if (tail) this.#last = tail.k;
  }

  async _next() {
    this.#fill();
    return this.#page.shift();
  }

  /** @param {number} size */
  async _nextv(size) {
    const out = [];
    while (out.length < size) {
      this.#fill();
      const entry = this.#page.shift();
      if (!entry) break;
      out.push(entry);
    }
    return out;
  }
}
