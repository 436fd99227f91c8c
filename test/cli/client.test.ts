import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { useStack } from '../support/stack.js';
import { createAccount, randomHash } from '../support/client.js';
import { computeChainHash, sha256Hex } from '../../lib/crypto/hash.js';
import { type HttpService, startHttpService } from '../support/http-server.js';

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'evidence.mjs');

let service: HttpService;
let dir: string;
let pro: Awaited<ReturnType<typeof createAccount>>;
let env: Record<string, string>;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the installed entry point (bin/evidence.mjs) as a user would, in the work directory. */
function evidence(args: string[], extraEnv: Record<string, string | undefined> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(BIN, args, { cwd: dir, env: { ...process.env, ...env, ...extraEnv }, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

before(async () => {
  const stackEnv = await useStack();
  service = await startHttpService();
  pro = await createAccount('pro');
  dir = mkdtempSync(path.join(os.tmpdir(), 'evidence-cli-'));
  // The child gets no stack variables: the CLI must need nothing but the URL, the key and the files.
  // Its own trust file (none yet): nothing from the machine's ~/.config is pinned.
  env = { EVIDENCE_API_KEY: pro.apiKey, LEDGER_RPC_URL: '', DATA_DIR: '', EVIDENCE_TRUST_FILE: path.join(dir, 'trust.json') };
  env.TSA_ROOT = path.join(stackEnv.DATA_DIR ?? '', 'tsa', 'root.pem');
  env.RPC = stackEnv.LEDGER_RPC_URL ?? '';
});

after(async () => {
  await service?.close();
});

describe('evidence CLI (bin/evidence.mjs) against the service over HTTP', () => {
  it('keygen → anchor → verify: the receipt next to the photo verifies offline, pinned root and ledger included', async () => {
    const keygen = await evidence(['keygen', '--out', 'device-key.json']);
    assert.equal(keygen.code, 0, keygen.stderr);
    assert.equal(statSync(path.join(dir, 'device-key.json')).mode & 0o777, 0o600);

    const photo = Buffer.from(`photo ${randomHash()}`);
    writeFileSync(path.join(dir, 'photo.jpg'), photo);
    const anchored = await evidence(['anchor', 'photo.jpg', '--url', service.url, '--key', 'device-key.json']);
    assert.equal(anchored.code, 0, anchored.stderr);
    assert.match(anchored.stderr, /Hashing photo\.jpg/);
    assert.match(anchored.stderr, /Anchoring at/);
    assert.match(anchored.stdout, new RegExp(`anchored ${sha256Hex(photo)}`));
    const receipt = JSON.parse(await readFile(path.join(dir, 'photo.jpg.receipt.json'), 'utf8')) as { image_hash: string };
    assert.equal(receipt.image_hash, sha256Hex(photo));

    // Nothing pinned and no node: consistent with itself, not verified ("not established", exit 3).
    const offline = await evidence(['verify', 'photo.jpg']);
    assert.equal(offline.code, 3, offline.stdout + offline.stderr);
    assert.match(offline.stdout, /root: from receipt \(not pinned\)/);
    assert.match(offline.stdout, /unchecked\s+ledger transaction\s+not read: no --rpc given/);
    assert.match(offline.stdout, /unchecked\s+ML-DSA-65 key published by the service/);
    assert.match(offline.stdout, /^NOT ESTABLISHED: /m);
    assert.doesNotMatch(offline.stdout, /\bfails\b/);

    // The README's way: pin the service's anchors once, then verify with a node of the chain.
    const trust = await evidence(['trust', 'add', service.url]);
    assert.equal(trust.code, 0, trust.stdout + trust.stderr);
    const pinned = await evidence(['verify', 'photo.jpg', '--rpc', env.RPC ?? '']);
    assert.equal(pinned.code, 0, pinned.stdout + pinned.stderr);
    assert.match(pinned.stdout, /root: pinned/);
    assert.match(pinned.stdout, /holds\s+ledger transaction\s+mined in block \d+, \d+ confirmations?, from 0x[0-9a-f]{40}; input data = image_hash \|\| server_hash/);
    assert.match(pinned.stdout, /ledger: 0x[0-9a-f]{64} on chain \d+, \d+ confirmations? as of \d{4}-/);
    assert.match(pinned.stdout, /^VERIFIED: every proof was checked and holds, as of \S+ \(RFC 3161 genTime\)\.$/m);
  });

  it('continues the device chain across anchors from the state file', async () => {
    await evidence(['keygen', '--out', 'chain-key.json']);
    const hashes: string[] = [];
    for (const name of ['a.jpg', 'b.jpg']) {
      const bytes = Buffer.from(`${name} ${randomHash()}`);
      hashes.push(sha256Hex(bytes));
      writeFileSync(path.join(dir, name), bytes);
      const run = await evidence(['anchor', name, '--url', service.url, '--key', 'chain-key.json']);
      assert.equal(run.code, 0, run.stderr);
    }
    const state = JSON.parse(await readFile(path.join(dir, 'chain-key.chain.json'), 'utf8')) as { next_index: number; last_chain_hash: string };
    assert.equal(state.next_index, 2);
    assert.equal(state.last_chain_hash, computeChainHash(computeChainHash(null, hashes[0] ?? ''), hashes[1] ?? ''));
    const second = JSON.parse(await readFile(path.join(dir, 'b.jpg.receipt.json'), 'utf8')) as { device: { chain_index: number } };
    assert.equal(second.device.chain_index, 1);
    assert.equal((await evidence(['verify', 'b.jpg', '--rpc', env.RPC ?? ''])).code, 0);
  });

  it('fails verify with exit 1 and a one-line reason for a changed photo', async () => {
    await evidence(['keygen', '--out', 'k2.json']);
    writeFileSync(path.join(dir, 'c.jpg'), `c ${randomHash()}`);
    assert.equal((await evidence(['anchor', 'c.jpg', '--url', service.url, '--key', 'k2.json'])).code, 0);
    writeFileSync(path.join(dir, 'c.jpg'), 'edited');
    const run = await evidence(['verify', 'c.jpg']);
    assert.equal(run.code, 1);
    assert.match(run.stdout, /fails\s+file: SHA-256 = image_hash\s+SHA-256 of c\.jpg is [0-9a-f]{64}, the receipt is for [0-9a-f]{64}: not the same file/);
    assert.match(run.stdout, /^NOT VERIFIED: SHA-256 of c\.jpg is/m);
  });

  it('explains 409: the photo is already anchored, run verify', async () => {
    await evidence(['keygen', '--out', 'k3.json']);
    writeFileSync(path.join(dir, 'd.jpg'), `d ${randomHash()}`);
    assert.equal((await evidence(['anchor', 'd.jpg', '--url', service.url, '--key', 'k3.json'])).code, 0);
    const again = await evidence(['anchor', 'd.jpg', '--url', service.url, '--key', 'k3.json']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already anchored \(409 hash_already_anchored\): run "evidence verify d\.jpg"/);
    const state = JSON.parse(await readFile(path.join(dir, 'k3.chain.json'), 'utf8')) as { next_index: number };
    assert.equal(state.next_index, 1, 'a refused anchor does not move the chain on');
  });

  it('explains 401 (check the key), 403 (upgrade the tier) and a missing API key', async () => {
    await evidence(['keygen', '--out', 'k4.json']);
    writeFileSync(path.join(dir, 'e.jpg'), `e ${randomHash()}`);
    const unauthorized = await evidence(['anchor', 'e.jpg', '--url', service.url, '--key', 'k4.json'], { EVIDENCE_API_KEY: 'nope_invalid' });
    assert.equal(unauthorized.code, 1);
    assert.match(unauthorized.stderr, /API key was refused \(401\)\. Check EVIDENCE_API_KEY/);

    const free = await createAccount('free');
    const forbidden = await evidence(['anchor', 'e.jpg', '--url', service.url, '--key', 'k4.json'], { EVIDENCE_API_KEY: free.apiKey });
    assert.equal(forbidden.code, 1);
    assert.match(forbidden.stderr, /tier does not include anchoring \(403\).*upgrade/);

    const missing = await evidence(['anchor', 'e.jpg', '--url', service.url, '--key', 'k4.json'], { EVIDENCE_API_KEY: '' });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /Set EVIDENCE_API_KEY/);
  });

  it('says what to do when the key file or the receipt is missing, and answers usage errors with exit 2', async () => {
    writeFileSync(path.join(dir, 'f.jpg'), 'f');
    const noKey = await evidence(['anchor', 'f.jpg', '--url', service.url, '--key', 'absent.json']);
    assert.equal(noKey.code, 1);
    assert.match(noKey.stderr, /No device key at absent\.json: create one with "evidence keygen --out absent\.json"/);
    const noReceipt = await evidence(['verify', 'f.jpg']);
    assert.equal(noReceipt.code, 1);
    assert.match(noReceipt.stderr, /No receipt at f\.jpg\.receipt\.json/);
    assert.equal((await evidence(['verify', randomHash()])).code, 2);
    assert.equal((await evidence(['frobnicate'])).code, 2);
  });
});
