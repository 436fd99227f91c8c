/**
 * `npm start` keeps DATA_DIR owner-only (issue 34, F3; decisions.md "Running it"): the data
 * directory holds e-mail addresses, scrypt hashes, API key hashes and every private key, so
 * whatever the user's umask and however the directory was made, once the stack is ready DATA_DIR
 * and every directory in it are 0700 and every file 0600 (SQLite's -wal and -shm files included).
 * A data directory this user cannot tighten (another user's) is refused, naming the path, before
 * anything is written. What the user keeps in DATA_DIR besides is left as it is (the 0700 of
 * DATA_DIR covers it). Real starts: `npm start`, then its entry lib/local/start.ts in a process of
 * its own, as test/local/start-ports.test.ts runs it.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { freePort } from '../../lib/local/net.js';

const root = path.resolve(import.meta.dirname, '..', '..');
const DEADLINE_MS = 90_000;

const cleanups: (() => void)[] = [];
after(() => {
  for (const cleanup of cleanups.reverse()) cleanup();
});

async function userEnv(dataDir: string): Promise<Record<string, string>> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? os.homedir(),
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    DYNAMODB_PORT: String(await freePort()),
    LEDGER_RPC_PORT: String(await freePort()),
    LOG_LEVEL: 'warn',
  };
}

/**
 * `npm start` (or, `viaNpm` false, its entry without npm) under a permissive umask (022: files
 * 0644, directories 0755 by default), until it says ready; resolves to a stop function and what it printed.
 */
async function startReady(env: Record<string, string>, viaNpm: boolean): Promise<{ output: () => string; stop: () => Promise<void> }> {
  const command = viaNpm ? 'npm start' : `"${process.execPath}" --import tsx lib/local/start.ts`;
  // Its own process group: npm runs the stack as a grandchild, and a stop must wait for all of it
  // (npm exits on SIGTERM before the stack below it has closed its ports).
  const child = spawn('sh', ['-c', `umask 022; exec ${command}`], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const group = child.pid as number;
  const groupAlive = () => {
    try {
      process.kill(-group, 0);
      return true;
    } catch {
      return false;
    }
  };
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  cleanups.push(() => {
    if (groupAlive()) process.kill(-group, 'SIGKILL');
  });
  const deadline = Date.now() + DEADLINE_MS;
  while (!/^ready in \d+ ms/m.test(output)) {
    if (child.exitCode !== null) assert.fail(`npm start exited ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) assert.fail(`npm start was not ready within ${DEADLINE_MS} ms:\n${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    output: () => output,
    stop: async () => {
      process.kill(-group, 'SIGTERM');
      await exited;
      const deadline = Date.now() + DEADLINE_MS;
      while (groupAlive()) {
        if (Date.now() > deadline) assert.fail(`the stack's processes outlived SIGTERM by ${DEADLINE_MS} ms`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

/** Every entry under `dir` (itself included, `except` not) whose mode is not owner-only: 0700 for directories, 0600 for files. */
function looseModes(dir: string, except: string[] = []): string[] {
  const loose: string[] = [];
  const visit = (p: string) => {
    if (except.includes(path.relative(dir, p))) return;
    const s = lstatSync(p);
    const mode = s.mode & 0o777;
    if (s.isDirectory()) {
      if (mode !== 0o700) loose.push(`${path.relative(dir, p) || '.'}/ ${mode.toString(8)}`);
      for (const e of readdirSync(p)) visit(path.join(p, e));
    } else if (s.isFile() && mode !== 0o600) loose.push(`${path.relative(dir, p)} ${mode.toString(8)}`);
  };
  visit(dir);
  return loose;
}

/** Opens everything up again, as `chmod -R go+rX` would. */
function loosen(dir: string): void {
  const visit = (p: string) => {
    const s = lstatSync(p);
    if (s.isDirectory()) {
      chmodSync(p, 0o755);
      for (const e of readdirSync(p)) visit(path.join(p, e));
    } else if (s.isFile()) chmodSync(p, 0o644);
  };
  visit(dir);
}

describe('npm start keeps DATA_DIR owner-only', () => {
  it('tightens a DATA_DIR made 0755 under umask 022: every directory 0700, every file 0600, SQLite -wal/-shm included; and again after a chmod -R go+rX', async () => {
    const parent = await mkdtemp(path.join(os.tmpdir(), 'evidence-modes-'));
    cleanups.push(() => rmSync(parent, { recursive: true, force: true }));
    const dataDir = path.join(parent, 'd');
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    const env = await userEnv(dataDir);

    const first = await startReady(env, true);
    const sqlite = path.join(dataDir, 'dynamodb');
    try {
      // The database is open: its WAL and shared-memory files exist now.
      assert.deepEqual(
        readdirSync(sqlite).filter((f) => f.startsWith('items.sqlite')).sort(),
        ['items.sqlite', 'items.sqlite-shm', 'items.sqlite-wal'],
      );
      assert.deepEqual(looseModes(dataDir), [], first.output());
    } finally {
      await first.stop();
    }

    // A copy, a backup restore or a careless chmod opened it up; the next start closes it again.
    loosen(dataDir);
    assert.notDeepEqual(looseModes(dataDir), []);
    // A file of the user's own in DATA_DIR keeps its mode: not the stack's to change.
    writeFileSync(path.join(dataDir, 'notes.sh'), '#!/bin/sh\n', { mode: 0o755 });
    chmodSync(path.join(dataDir, 'notes.sh'), 0o755);
    const second = await startReady(env, false);
    try {
      assert.ok(existsSync(path.join(sqlite, 'items.sqlite-wal')));
      assert.deepEqual(looseModes(dataDir, ['notes.sh']), [], second.output());
      assert.equal(statSync(path.join(dataDir, 'notes.sh')).mode & 0o777, 0o755);
    } finally {
      await second.stop();
    }
  });

  it('refuses a DATA_DIR it cannot make owner-only (another user\'s), naming the path, before writing anything', async (t) => {
    // Run as `nobody`: a directory root made 0755 cannot be tightened by it.
    const nobody = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'true']);
    if (process.getuid?.() !== 0 || nobody.status !== 0) {
      t.skip('needs root and setpriv to run npm start as another user');
      return;
    }
    const parent = await mkdtemp(path.join(os.tmpdir(), 'evidence-modes-other-'));
    cleanups.push(() => rmSync(parent, { recursive: true, force: true }));
    chmodSync(parent, 0o755);
    const dataDir = path.join(parent, 'theirs');
    mkdirSync(dataDir, { mode: 0o777 });
    chmodSync(dataDir, 0o777); // writable by nobody, but not nobody's: chmod is the owner's alone
    const home = path.join(parent, 'home');
    mkdirSync(home, { mode: 0o777 });
    chmodSync(home, 0o777);
    const env = { ...(await userEnv(dataDir)), HOME: home };
    const result = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '--import', 'tsx', 'lib/local/start.ts'], {
      cwd: root,
      env,
      encoding: 'utf8',
      timeout: DEADLINE_MS,
    });
    assert.equal(result.status, 1, `${result.stdout}${result.stderr}`);
    const lines = result.stderr.split('\n').filter(Boolean);
    assert.equal(lines.length, 1, result.stderr);
    assert.match(lines[0] ?? '', new RegExp(`^DATA_DIR ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} cannot be made owner-only \\(0700\\)`));
    assert.equal(result.stdout, '');
    assert.deepEqual(readdirSync(dataDir), [], 'nothing may be written into it');
    assert.equal(statSync(dataDir).mode & 0o777, 0o777);
  });
});
