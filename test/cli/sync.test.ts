/**
 * `evidence sync <folder>` (lib/cli/sync.ts) through bin/evidence.mjs against the service over
 * HTTP: the folder's photos without a receipt become the next links of the device chain, and a
 * sync killed (SIGKILL) at any point and run again completes the folder with no fork, no
 * duplicate and no double charge.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { getConfig } from '../../lib/deps/core.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { getKeyAuthDeps } from '../../lib/deps/key-auth.js';
import { isAnchored } from '../../lib/evidence/records.js';
import { createAccount, Device, json, randomHash } from '../support/client.js';
import { type HttpService, startHttpService } from '../support/http-server.js';
import { useStack } from '../support/stack.js';
import { waitFor } from '../support/wait.js';

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'evidence.mjs');

let service: HttpService;
let pro: Awaited<ReturnType<typeof createAccount>>;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI as a user runs it, in `dir`, with nothing but the URL, the API key and the files. */
function evidence(dir: string, args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(BIN, args, { cwd: dir, env: { ...process.env, EVIDENCE_API_KEY: pro.apiKey, ...extraEnv }, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

/** A work directory with a device key and a folder of `n` photos (distinct random contents). */
async function workDir(n: number): Promise<{ dir: string; photos: string[] }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'evidence-sync-'));
  const keygen = await evidence(dir, ['keygen', '--out', 'device-key.json']);
  assert.equal(keygen.code, 0, keygen.stderr);
  mkdirSync(path.join(dir, 'photos'));
  const photos = Array.from({ length: n }, (_, i) => {
    const file = path.join(dir, 'photos', `IMG_${String(i).padStart(4, '0')}.jpg`);
    writeFileSync(file, `a photo ${i} ${randomHash()}`);
    return file;
  });
  return { dir, photos };
}

const used = async () => (await getKeyAuthDeps().limits.usage(pro.accountId, 'pro')).used;

/** Every photo has a receipt, and the receipts are links 0…n-1 of one device chain, each anchored once, in file order. */
async function assertOneChain(photos: string[], publicKeyHex: string): Promise<void> {
  const indexes: number[] = [];
  for (const photo of photos) {
    const receipt = JSON.parse(await readFile(`${photo}.receipt.json`, 'utf8')) as { image_hash: string; device: { chain_index: number; public_key_hex: string } };
    assert.equal(receipt.image_hash, sha256Hex(await readFile(photo)), `${photo}: the receipt is the photo's`);
    const item = await getEvidenceRepo().get(receipt.image_hash);
    assert.ok(isAnchored(item), `${photo} is anchored`);
    assert.equal(item.public_key_hex, publicKeyHex);
    indexes.push(item.chain_index as number);
  }
  assert.deepEqual(indexes, photos.map((_, i) => i), 'links 0…n-1 in file order: no fork, no hole, no duplicate');
}

async function publicKeyOf(dir: string): Promise<string> {
  return (JSON.parse(await readFile(path.join(dir, 'device-key.json'), 'utf8')) as { public_key_hex: string }).public_key_hex;
}

before(async () => {
  // Batch mode, as a user's `npm start` runs (the test stack's default is direct mode).
  process.env.LEDGER_BATCH_WINDOW_MS = '250';
  await useStack();
  process.env.LEDGER_BATCH_WINDOW_MS = '250';
  assert.equal(getConfig().ledger.batchWindowMs, 250);
  service = await startHttpService();
  pro = await createAccount('pro');
});

after(async () => {
  await service?.close();
});

describe('evidence sync <folder>', () => {
  it('anchors the photos that have no receipt as the next links, saves each receipt beside its photo; run again, it has nothing to do', async () => {
    const { dir, photos } = await workDir(6);
    // One photo anchored alone first: it has its receipt, and the chain is at link 1.
    const single = await evidence(dir, ['anchor', photos[0] as string, '--url', service.url]);
    assert.equal(single.code, 0, single.stderr);
    const before = await used();
    const sync = await evidence(dir, ['sync', 'photos', '--url', service.url], { EVIDENCE_SYNC_CHUNK: '2' });
    assert.equal(sync.code, 0, sync.stderr);
    assert.match(sync.stdout, /^synced 5 photos of 5 without a receipt; 5 receipts saved/m);
    assert.match(sync.stderr, /synced 2\/5\n[^]*synced 4\/5\n[^]*synced 5\/5/, 'progress, done/total');
    assert.equal((await used()) - before, 5, 'one quota unit per photo');
    await assertOneChain(photos, await publicKeyOf(dir));

    const again = await evidence(dir, ['sync', 'photos', '--url', service.url]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^synced 0 photos of 0/m);
    assert.equal((await used()) - before, 5);

    // The chain goes on: a new photo, anchored alone, is link 6.
    const next = path.join(dir, 'photos', 'IMG_9999.jpg');
    writeFileSync(next, `the next photo ${randomHash()}`);
    const anchored = await evidence(dir, ['anchor', next, '--url', service.url]);
    assert.equal(anchored.code, 0, anchored.stderr);
    assert.match(anchored.stdout, /chain index\s+6/);
  });

  it('killed (SIGKILL) right after it planned and again mid-way, then run again: the folder completes with no fork, no duplicate and no double charge', async () => {
    const { dir, photos } = await workDir(9);
    const stateFile = path.join(dir, 'device-key.chain.json');
    const state = async () => JSON.parse(await readFile(stateFile, 'utf8').catch(() => '{}')) as { next_index?: number; pending?: unknown[] };
    const before = await used();
    const run = (): ChildProcess =>
      spawn(BIN, ['sync', 'photos', '--url', service.url], { cwd: dir, env: { ...process.env, EVIDENCE_API_KEY: pro.apiKey, EVIDENCE_SYNC_CHUNK: '2' }, stdio: 'ignore' });
    const kill = async (child: ChildProcess) => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    };
    // 1. Killed once its plan is written (requests may be in flight).
    const first = run();
    await waitFor('the sync plan to be written', 60_000, async () => ((await state()).pending?.length ?? 0) > 0 || undefined);
    await kill(first);
    // 2. Killed once it moved the chain on at least once.
    const second = run();
    await waitFor('the chain to move on', 60_000, async () => ((await state()).next_index ?? 0) >= 2 || undefined);
    await kill(second);
    // 3. Run to the end (the killed run's lock names a dead process: taken over).
    const last = await evidence(dir, ['sync', 'photos', '--url', service.url], { EVIDENCE_SYNC_CHUNK: '2' });
    assert.equal(last.code, 0, last.stderr);
    assert.match(last.stderr, /Resuming the sync/);
    await assertOneChain(photos, await publicKeyOf(dir));
    assert.deepEqual((await state()).pending ?? [], [], 'nothing left planned');
    assert.equal((await state()).next_index, 9);
    assert.equal((await used()) - before, 9, 'each photo charged once, whatever was sent twice');
    assert.deepEqual(readdirSync(path.join(dir, 'photos')).filter((f) => f.endsWith('.tmp')), [], 'no half-written file');
  });

  it('refuses while a live process holds the device chain, and names it', async () => {
    const { dir } = await workDir(1);
    writeFileSync(path.join(dir, 'device-key.chain.json.lock'), String(process.pid));
    const refused = await evidence(dir, ['sync', 'photos', '--url', service.url]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, new RegExp(`device-key\\.chain\\.json\\.lock exists, held by process ${process.pid}`));
  });

  it('a photo anchored elsewhere already gets that receipt; the links planned after it are planned again from its position', async () => {
    const { dir, photos } = await workDir(3);
    // The middle photo was anchored by another device first.
    const other = new Device();
    const anchorApp = (await import('../../functions/v2/evidence-anchor.js')).app;
    const res = await anchorApp.request('/api/v2/evidence/anchor', json(other.next(sha256Hex(await readFile(photos[1] as string))), { 'x-api-key': pro.apiKey }));
    assert.equal(res.status, 200, await res.clone().text());
    const sync = await evidence(dir, ['sync', 'photos', '--url', service.url]);
    assert.equal(sync.code, 0, sync.stderr);
    assert.match(sync.stdout, /IMG_0001\.jpg was anchored before this sync; its receipt is saved beside it/);
    assert.ok(existsSync(`${photos[1]}.receipt.json`));
    const key = await publicKeyOf(dir);
    const [a, c] = [photos[0], photos[2]];
    const itemOf = async (p: string) => getEvidenceRepo().get(sha256Hex(await readFile(p)));
    assert.ok(a && c);
    assert.equal((await itemOf(a))?.chain_index, 0);
    assert.equal((await itemOf(c))?.chain_index, 1, 'the photo after it took its position');
    assert.equal((await itemOf(c))?.public_key_hex, key);
    assert.notEqual((await itemOf(photos[1] ?? ''))?.public_key_hex, key);
  });
});
