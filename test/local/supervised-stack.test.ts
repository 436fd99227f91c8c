/**
 * `npm start` as a user runs it (lib/local/start.ts in a process of its own, temp DATA_DIR, free
 * ports), with real faults: its dynalite and Hardhat children are SIGKILLed and must come back on
 * their own, health naming the part that is down meanwhile; then `npm start` itself is SIGKILLed
 * and no child may survive it. Every wait polls a condition against a deadline.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { freePort } from '../../lib/local/net.js';
import { processAlive } from '../support/processes.js';
import { slowLoris } from '../support/slow-loris.js';

const root = path.resolve(import.meta.dirname, '..', '..');
const DEADLINE_MS = 60_000;

let stack: ChildProcess;
let output = '';
let dataDir = '';
let api = '';
let env: Record<string, string> = {};
let rpc = '';

interface Health {
  status: string;
  detail?: string;
  parts: Record<string, { status: string; reason?: string }>;
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = DEADLINE_MS): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`waited ${ms} ms for ${what}; npm start said:\n${output}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The first match of `re` in what the stack printed after `from` characters. */
function line(re: RegExp, from = 0): RegExpExecArray | undefined {
  return re.exec(output.slice(from)) ?? undefined;
}

async function health(): Promise<{ status: number; body: Health; text: string } | undefined> {
  try {
    const res = await fetch(`${api}/api/v1/health`, { signal: AbortSignal.timeout(5000) });
    const text = await res.text();
    return { status: res.status, body: JSON.parse(text) as Health, text };
  } catch {
    return undefined;
  }
}

/** A down part says why in the fixed vocabulary; nothing else of the failure reaches the answer. */
function assertNamesOnly(h: { body: Health; text: string }, part: string): void {
  assert.equal(h.body.status, 'degraded');
  assert.equal(h.body.parts[part]?.status, 'down', h.text);
  assert.match(h.body.parts[part]?.reason ?? '', /^(restarting|unreachable)$/, h.text);
  assert.deepEqual(Object.keys(h.body.parts[part] ?? {}).sort(), ['reason', 'status']);
  assert.match(h.body.detail ?? '', new RegExp(`(^|; )${part}: (restarting|unreachable)($|;)`), h.text);
  assert.doesNotMatch(h.text, /127\.0\.0\.1|localhost|ECONN|fetch failed|\bat [\w.]+ \(/, h.text);
}

/** Sees the part go down (503 naming it), then the whole service healthy again; returns the ms between. */
async function downThenUp(part: string): Promise<number> {
  const down = await until(`health 503 naming ${part}`, async () => {
    const h = await health();
    return h?.status === 503 && h.body.parts[part]?.status === 'down' ? h : undefined;
  });
  assertNamesOnly(down, part);
  const t0 = Date.now();
  await until('health 200 again', async () => ((await health())?.status === 200 ? true : undefined));
  return Date.now() - t0;
}

const gone = (pid: number) => !processAlive(pid);

async function rpcCall(method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(rpc, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return ((await res.json()) as { result?: unknown }).result;
}

/** The environment of a user's shell: not the test stack's variables (npm test sets them). */
async function userEnv(dir: string): Promise<Record<string, string>> {
  const [port, rpcPort, dynamoPort] = [await freePort(), await freePort(), await freePort()];
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? os.homedir(),
    DATA_DIR: dir,
    PORT: String(port),
    LEDGER_RPC_PORT: String(rpcPort),
    DYNAMODB_PORT: String(dynamoPort),
    LOG_LEVEL: 'warn',
    // A client's headers must be in within 2 s (the default is 10 s): the slow-loris test below.
    HEADERS_TIMEOUT_MS: '2000',
  };
}

before(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'evidence-supervised-'));
  env = await userEnv(dataDir);
  api = `http://127.0.0.1:${env.PORT}`;
  rpc = `http://127.0.0.1:${env.LEDGER_RPC_PORT}`;
  // What `npm start` runs (package.json), without npm in between: the last test adds npm.
  stack = spawn(process.execPath, ['--import', 'tsx', 'lib/local/start.ts'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  stack.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  stack.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  await until('npm start to be ready', () => (line(/^ready in \d+ ms/m) ? true : stack.exitCode !== null ? assert.fail(output) : undefined));
});

const cleanups: (() => void)[] = [];
after(() => {
  if (stack.exitCode === null && stack.signalCode === null) stack.kill('SIGKILL');
  for (const cleanup of cleanups) cleanup();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The parent pid of `pid` (Linux /proc). */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

describe('npm start supervises its parts', () => {
  it('is healthy once it says ready, and names the pid of each child', async () => {
    const h = await health();
    assert.equal(h?.status, 200, h?.text);
    assert.ok(line(/\(dynalite, pid (\d+),/));
    assert.ok(line(/\(hardhat, pid (\d+),/));
  });

  it('closes a connection whose headers never end (a slow-loris client), after HEADERS_TIMEOUT_MS: 408 problem+json', async () => {
    const { answer } = await slowLoris(api, 'GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n', 'X-Slow: 1\r\n');
    assert.match(answer, /^HTTP\/1\.1 408 Request Timeout\r\n/, answer);
    assert.equal((JSON.parse(answer.split('\r\n\r\n')[1] ?? '') as { code: string }).code, 'request_timeout');
    assert.equal((await health())?.status, 200, 'the server serves the next client');
  });

  it('is reached by `npm run admin` given the variables it was started with (its ports are not the defaults)', async () => {
    const email = `admin-${Date.now()}@example.com`;
    const register = await fetch(`${api}/api/v2/account/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'a long enough password' }),
    });
    assert.equal(register.status, 200, await register.text());
    const admin = spawnSync('npm', ['run', '--silent', 'admin', '--', 'set-tier', email, 'starter'], { cwd: root, env, encoding: 'utf8' });
    assert.equal(admin.status, 0, `${admin.stdout}${admin.stderr}`);
    assert.equal((JSON.parse(admin.stdout) as { tier: string; email: string }).tier, 'starter');
  });

  it('restarts a SIGKILLed ledger node, replays the transactions into it and is healthy again', async () => {
    const pqTx = line(/^pq key .* in (0x[0-9a-f]{64})/m)?.[1];
    assert.ok(pqTx, output);
    const mined = (await rpcCall('eth_getTransactionReceipt', [pqTx])) as { blockNumber: string; blockHash: string };
    assert.ok(mined);
    const block = (await rpcCall('eth_getBlockByNumber', [mined.blockNumber, false])) as { timestamp: string; hash: string };
    const pid = Number(line(/\(hardhat, pid (\d+),/)?.[1]);
    const mark = output.length;
    process.kill(pid, 'SIGKILL');
    await downThenUp('ledger');
    const restarted = await until('the restart line', () => line(/^restarted {2}ledger node .*pid \d+ exited \(signal SIGKILL\); healthy again in \d+ ms \(pid (\d+)/m, mark));
    assert.notEqual(Number(restarted[1]), pid);
    // The fresh node holds the transaction sent before the kill: replayed, same bytes, same hash.
    const receipt = (await rpcCall('eth_getTransactionReceipt', [pqTx])) as { status?: string; blockNumber?: string; blockHash?: string } | null;
    assert.equal(receipt?.status, '0x1', output);
    // Rebuilt from the node's block journal: the same block, with its original time (not the restart's).
    assert.match(line(/^restarted {2}ledger node .*$/m, mark)?.[0] ?? '', /rebuilt \d+ blocks? with \d+ transactions? in \d+ ms, same hashes/);
    assert.equal(receipt?.blockNumber, mined.blockNumber);
    assert.equal(receipt?.blockHash, mined.blockHash);
    const again = (await rpcCall('eth_getBlockByNumber', [mined.blockNumber, false])) as { timestamp: string; hash: string };
    assert.equal(again.timestamp, block.timestamp);
    assert.equal(again.hash, block.hash);
  });

  it('restarts a SIGKILLed dynalite on the same data: health 503 naming the database, then 200, data kept', async () => {
    const email = `kept-${Date.now()}@example.com`;
    const credentials = JSON.stringify({ email, password: 'a long enough password' });
    const headers = { 'content-type': 'application/json' };
    const register = await fetch(`${api}/api/v2/account/register`, { method: 'POST', headers, body: credentials });
    assert.equal(register.status, 200, await register.text());
    // What a killed dynalite can leave: items whose index entries are missing. An anchor left
    // publishing in a batch long past, not on the pending_tx index (its request died after its
    // publish), and a quota hold of a request that never answered, not on the open_holds index:
    // the reconciler's passes read the indexes alone and cannot see them; the sweep after the
    // database's restart must (decisions.md "Cost").
    const db = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: `http://127.0.0.1:${env.DYNAMODB_PORT}`, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }));
    cleanups.push(() => db.destroy());
    const lostAnchor = randomBytes(32).toString('hex');
    const wallet = (line(/wallet (0x[0-9a-fA-F]{40})/)?.[1] ?? '').toLowerCase();
    assert.match(wallet, /^0x[0-9a-f]{40}$/, output);
    const longAgo = Date.now() - 3_600_000;
    await db.send(
      new PutCommand({
        TableName: 'evidence-local-evidence',
        Item: {
          image_hash: lostAnchor,
          anchor_state: 'publishing',
          anchor_v: 1,
          claim_id: 'lost',
          fingerprint: 'f'.repeat(64),
          account_id: 'acc_lost',
          public_key_hex: randomBytes(32).toString('hex'),
          signature_hex: randomBytes(64).toString('hex'),
          chain_index: 0,
          chain_hash: randomBytes(32).toString('hex'),
          previous_hash: null,
          anchored_at: new Date(longAgo).toISOString(),
          server_hash: randomBytes(32).toString('hex'),
          batch_pk: `31337#${wallet}#250#${Math.floor(longAgo / 250) * 250}`,
          ledger_address: wallet,
          ledger_chain_id: 31337,
        },
      }),
    );
    const meter = `meter#acc_${randomBytes(6).toString('hex')}#2026-11`;
    await db.send(new PutCommand({ TableName: 'evidence-local-counters', Item: { pk: meter, used: 3, [`h#r:${longAgo}:lost`]: longAgo, expires_at: 2_000_000_000 } }));
    const pid = Number(line(/\(dynalite, pid (\d+),/)?.[1]);
    const mark = output.length;
    process.kill(pid, 'SIGKILL');
    await downThenUp('database');
    await until('the restart line', () => line(/^restarted {2}dynamodb \(dynalite\): pid \d+ exited \(signal SIGKILL\); healthy again in \d+ ms \(pid \d+/m, mark));
    const login = await fetch(`${api}/api/v2/account/login`, { method: 'POST', headers, body: credentials });
    assert.equal(login.status, 200, await login.text());
    await until('the sweep to finish the anchor the index lost', async () => {
      const item = (await db.send(new GetCommand({ TableName: 'evidence-local-evidence', Key: { image_hash: lostAnchor }, ConsistentRead: true }))).Item;
      return item?.anchor_state === 'anchored' ? item : undefined;
    });
    const refunded = await until('the sweep to refund the hold the index lost', async () => {
      const item = (await db.send(new GetCommand({ TableName: 'evidence-local-counters', Key: { pk: meter }, ConsistentRead: true }))).Item;
      return item && item[`h#r:${longAgo}:lost`] === undefined ? item : undefined;
    });
    assert.equal(refunded.used, 2, 'the unit of the request that never answered is given back, once');
  });

  it('leaves no child behind when npm start itself is SIGKILLed', async () => {
    // The children now running: the latest pid printed for each part.
    const pids = [/(?:\(dynalite, pid |restarted {2}dynamodb .*\(pid )(\d+)/g, /(?:\(hardhat, pid |restarted {2}ledger node .*\(pid )(\d+)/g].map((re) => {
      const all = [...output.matchAll(re)];
      return Number(all.at(-1)?.[1]);
    });
    for (const pid of pids) assert.ok(pid > 0 && !gone(pid), `child ${pid} should be running:\n${output}`);
    const exited = new Promise((resolve) => stack.once('exit', resolve));
    stack.kill('SIGKILL');
    await exited;
    await until('every child of npm start to exit', () => (pids.every(gone) ? true : undefined), 15_000);
  });

  it('leaves nothing behind when the npm process of `npm start` is SIGKILLed (its shell and node included)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'evidence-supervised-npm-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    let said = '';
    // Its own process group, as in a terminal; npm from PATH, as a user types it.
    const npm = spawn('npm', ['start'], { cwd: root, env: await userEnv(dir), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    cleanups.push(() => {
      try {
        process.kill(-(npm.pid ?? 0), 'SIGKILL');
      } catch {
        // already gone
      }
    });
    npm.stdout?.on('data', (chunk: Buffer) => (said += chunk.toString('utf8')));
    npm.stderr?.on('data', (chunk: Buffer) => (said += chunk.toString('utf8')));
    await until('npm start to be ready', () => (/^ready in \d+ ms/m.test(said) ? true : npm.exitCode !== null ? assert.fail(said) : undefined));
    const children = [/\(dynalite, pid (\d+),/, /\(hardhat, pid (\d+),/].map((re) => Number(re.exec(said)?.[1]));
    const start = parentOf(children[0] ?? 0);
    const shell = parentOf(start);
    // npm → sh → node → children (a shell that exec's its command leaves no sh in between).
    const pids = [...children, start, shell].filter((pid) => pid !== npm.pid);
    assert.ok(pids.length >= 3 && pids.every((pid) => pid > 1), `${pids.join(' ')}:\n${said}`);
    const exited = new Promise((resolve) => npm.once('exit', resolve));
    npm.kill('SIGKILL');
    await exited;
    await until('npm start and every child to exit', () => (pids.every(gone) ? true : undefined), 15_000);
  });
});
