/**
 * Issue 27: the ledger wallet rotated locally with one command, as a user of `npm start` does it.
 * `npm run admin -- rotate-key ledger-wallet` (stack stopped) makes the new key; the next
 * `npm start` drains the old wallet, funds the new one from it (a value transfer through the old
 * wallet's own nonce slot, so the chain's replay rebuilds it), retires the old one in the key
 * registry and sends from the new one (lib/local/wallet-rotation.ts). The anchor sent by the old
 * wallet and the one sent by the new wallet verify side by side, online and offline, now and
 * after restarts that rebuild the chain (with its block journal, and without it).
 *
 * A kill at the k-th DynamoDB or ledger call of the start-up half (the fault hook armed for the
 * rotation) is followed by a normal start: the rotation finishes, with exactly one funding
 * transaction on the chain. A sample of the crash points runs here; WALLET_ROTATION_CRASH_POINTS=all
 * runs every one (docs/decisions.md "Key validity windows").
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { main as evidenceCli } from '../../lib/cli/evidence.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { readKeyRegistry } from '../../lib/crypto/key-windows.js';
import { finishWalletRotation } from '../../lib/local/wallet-rotation.js';
import { Service, setUpAccount } from '../support/crash-harness.js';
import { Device } from '../support/client.js';

const exec = promisify(execFile);

let dir: string;
let service: Service;
let apiKey = '';
const device = new Device();
const photos: Record<'old' | 'new', { file: string; hash: string; txHash: string }> = {} as never;
let prepared: { from: string; to: string; resumed: boolean };
let preparedAgain: { from: string; to: string; resumed: boolean };
/** A copy of the data directory with the rotation prepared and not finished (for the crash points). */
let pendingCopy = '';
/** A trust file pinned before the rotation. */
let staleTrust = '';

/** `evidence …` with the given trust file. */
async function cliWith(trustFile: string, ...argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await evidenceCli(argv, { out: (l) => lines.push(l), err: (l) => lines.push(l) }, { ...process.env, EVIDENCE_TRUST_FILE: trustFile });
  return { code, out: lines.join('\n') };
}

async function rpc(method: string, params: unknown[], url = service.rpcUrl): Promise<unknown> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(body.error.message);
  return body.result;
}

async function anchorPhoto(label: 'old' | 'new'): Promise<void> {
  const bytes = Buffer.from(`photo taken ${label} ${Math.random()}`);
  const hash = sha256Hex(bytes);
  const file = path.join(dir, `${label}.jpg`);
  await writeFile(file, bytes);
  const body = device.next(hash);
  const res = await fetch(`${service.base}/api/v2/evidence/anchor`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });
  const answer = (await res.json()) as { tx_hash: string };
  assert.equal(res.status, 200, JSON.stringify(answer));
  device.advance(body);
  photos[label] = { file, hash, txHash: answer.tx_hash };
}

async function verifyV2(hash: string): Promise<{ status: string; summary: string; proofs: Record<string, { state: string; reason: string }> }> {
  const res = await fetch(`${service.base}/api/v2/evidence/verify/${hash}`);
  assert.equal(res.status, 200);
  return (await res.json()) as never;
}

async function walletEntries(dataDir: string) {
  return (await readKeyRegistry(path.join(dataDir, 'keys', 'key-registry.json'))).keys.filter((k) => k.kind === 'ledger-wallet');
}

async function txOf(hash: string): Promise<{ from: string; to: string; value: string; nonce: string }> {
  return (await rpc('eth_getTransactionByHash', [hash])) as never;
}

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'wallet-rotation-'));
  const dataDir = path.join(dir, 'data');
  service = await Service.create({ dataDir, logFile: path.join(dir, 'stack.log') });
  await service.start();
  apiKey = (await setUpAccount(service)).apiKey;
  await anchorPhoto('old');
  // A relying party pins the service before the rotation and keeps that trust file (issue 34, F6).
  staleTrust = path.join(dir, 'trust-before-rotation.json');
  const pinned = await cliWith(staleTrust, 'trust', 'add', service.base);
  assert.equal(pinned.code, 0, pinned.out);
  await service.kill();

  const first = await service.admin('rotate-key', 'ledger-wallet');
  assert.equal(first.code, 0, `${first.out}${first.err}`);
  prepared = JSON.parse(first.out) as typeof prepared;
  const again = await service.admin('rotate-key', 'ledger-wallet');
  assert.equal(again.code, 0, `${again.out}${again.err}`);
  preparedAgain = JSON.parse(again.out) as typeof prepared;
  pendingCopy = path.join(dir, 'pending');
  await cp(dataDir, pendingCopy, { recursive: true });

  const logFrom = (await readFile(path.join(dir, 'stack.log'), 'utf8')).length;
  await service.start();
  assert.match(service.logSince(logFrom), /^wallet {5}rotated 0x\w+ → 0x\w+ \(funded in 0x[0-9a-f]{64}\); 0x\w+ retired$/m);
  await anchorPhoto('new');
});
after(async () => {
  await service?.kill();
  await rm(dir, { recursive: true, force: true });
});

describe('rotate-key ledger-wallet (local)', () => {
  it('makes the new key once (0600) and keeps the key of the wallet the genesis funds; a rerun takes the same key', async () => {
    assert.notEqual(prepared.to, prepared.from);
    assert.equal(prepared.resumed, false);
    assert.deepEqual(preparedAgain, { ...prepared, resumed: true });
    const keys = path.join(service.options.dataDir, 'keys');
    const { stdout } = await exec('stat', ['-c', '%a %n', path.join(keys, 'ledger-wallet.key'), path.join(keys, 'ledger-wallet.genesis.key')]);
    assert.match(stdout, /^600 .*ledger-wallet\.key\n600 .*ledger-wallet\.genesis\.key\n$/);
  });

  it('the next start funds the new wallet from the old one (one value transfer), retires the old one at that instant and sends from the new one', async () => {
    const [oldTx, newTx] = [await txOf(photos.old.txHash), await txOf(photos.new.txHash)];
    assert.equal(oldTx.from.toLowerCase(), prepared.from.toLowerCase());
    assert.equal(newTx.from.toLowerCase(), prepared.to.toLowerCase());
    // The old wallet sent: the PQ key registration, the first anchor, the funding; nothing after.
    const oldCount = Number(BigInt((await rpc('eth_getTransactionCount', [prepared.from, 'latest'])) as string));
    const funding = await txOf(await findFunding(prepared.from, oldCount));
    assert.equal(funding.to.toLowerCase(), prepared.to.toLowerCase());
    assert.ok(BigInt(funding.value) > 10n ** 23n, `funded with ${BigInt(funding.value)} wei`);
    const entries = await walletEntries(service.options.dataDir);
    const old = entries.find((e) => e.kid.toLowerCase() === prepared.from.toLowerCase());
    const fresh = entries.find((e) => e.kid.toLowerCase() === prepared.to.toLowerCase());
    assert.ok(old?.retired_at && fresh, JSON.stringify(entries));
    assert.equal(fresh.not_before, old.retired_at);
    assert.equal(fresh.retired_at, null);
  });

  it('both anchors verify online: v2 verify (the old wallet valid as of its genTime, retired since) and the trust-anchor document lists both wallets with their windows', async () => {
    for (const label of ['old', 'new'] as const) {
      const v = await verifyV2(photos[label].hash);
      assert.equal(v.status, 'verified', `${label}: ${v.summary} ${JSON.stringify(v.proofs.ledger)}`);
    }
    assert.match((await verifyV2(photos.old.hash)).proofs.ledger?.reason ?? '', /retired since/);
    const anchors = (await (await fetch(`${service.base}/.well-known/evidence-trust-anchors.json`)).json()) as { ledger: { wallet_address: string; wallets: { address: string; status: string; retired_at: string | null }[] } };
    assert.equal(anchors.ledger.wallet_address.toLowerCase(), prepared.to.toLowerCase());
    const statuses = Object.fromEntries(anchors.ledger.wallets.map((w) => [w.address.toLowerCase(), w.status]));
    assert.equal(statuses[prepared.from.toLowerCase()], 'retired');
    assert.equal(statuses[prepared.to.toLowerCase()], 'active');
  });

  it('both anchors verify offline: evidence verify with a trust file fetched after the rotation', async () => {
    const trust = path.join(dir, 'trust.json');
    await writeFile(trust, JSON.stringify({ version: 1, services: [] }));
    const cli = async (...argv: string[]) => {
      const lines: string[] = [];
      const code = await evidenceCli(argv, { out: (l) => lines.push(l), err: (l) => lines.push(l) }, { ...process.env, EVIDENCE_TRUST_FILE: trust });
      return { code, out: lines.join('\n') };
    };
    const added = await cli('trust', 'add', service.base);
    assert.equal(added.code, 0, added.out);
    for (const label of ['old', 'new'] as const) {
      await writeFile(`${photos[label].file}.receipt.json`, await (await fetch(`${service.base}/api/v2/evidence/receipt/${photos[label].hash}`)).text());
      const r = await cli('verify', photos[label].file, '--rpc', service.rpcUrl);
      assert.equal(r.code, 0, `${label}: ${r.out}`);
      assert.match(r.out, /^VERIFIED/m);
    }
  });

  it('with a trust file pinned before the rotation: the new wallet\'s anchor is not established (exit 3), naming the refresh, and the old one verifies', async () => {
    for (const label of ['old', 'new'] as const) {
      await writeFile(`${photos[label].file}.receipt.json`, await (await fetch(`${service.base}/api/v2/evidence/receipt/${photos[label].hash}`)).text());
    }
    const fresh = await cliWith(staleTrust, 'verify', photos.new.file, '--rpc', service.rpcUrl);
    assert.equal(fresh.code, 3, fresh.out);
    const ledger = fresh.out.split('\n').find((l) => /^\s+\w+\s+ledger transaction/.test(l)) ?? '';
    assert.match(ledger, new RegExp(`^\\s*unchecked\\s+ledger transaction\\s+the transaction's sender ${prepared.to} is not among the service wallets the trust file pinned .*; it signed after that, as of \\S+ \\(RFC 3161 genTime\\)`, 'i'), fresh.out);
    assert.match(ledger, /Refresh the trust file: evidence trust add http/);
    assert.doesNotMatch(fresh.out, /\bfails\b|NOT VERIFIED/);
    const old = await cliWith(staleTrust, 'verify', photos.old.file, '--rpc', service.rpcUrl);
    assert.equal(old.code, 0, old.out);
  });

  it('a restart rebuilds the chain with the same hashes; with the block journal lost, both wallets\' transactions are sent again and both anchors still verify', async () => {
    await service.kill();
    let from = (await readFile(path.join(dir, 'stack.log'), 'utf8')).length;
    await service.start();
    assert.match(service.logSince(from), /rebuilt \d+ blocks with \d+ transactions in \d+ ms, same hashes/);
    await service.kill();
    await rename(path.join(service.options.dataDir, 'chain-blocks.jsonl'), path.join(dir, 'journal.lost'));
    from = (await readFile(path.join(dir, 'stack.log'), 'utf8')).length;
    await service.start();
    const replayed = /replayed (\d+) transactions/.exec(service.logSince(from));
    // The old wallet's 3 (PQ key, anchor, funding) and the new wallet's anchor (at least).
    assert.ok(Number(replayed?.[1]) >= 4, service.logSince(from));
    for (const label of ['old', 'new'] as const) {
      // On the rebuilt chain itself (verify may answer a final record from what it stored).
      const tx = (await rpc('eth_getTransactionByHash', [photos[label].txHash])) as { blockNumber: string | null } | null;
      assert.ok(tx?.blockNumber, `${label}: ${photos[label].txHash} is not on the rebuilt chain`);
      const v = await verifyV2(photos[label].hash);
      assert.equal(v.status, 'verified', `${label}: ${v.summary}`);
    }
  });
});

/** The hash of the old wallet's funding transaction: its last one (nonce count − 1), found in the blocks. */
async function findFunding(from: string, count: number): Promise<string> {
  const latest = Number(BigInt((await rpc('eth_blockNumber', [])) as string));
  for (let n = 0; n <= latest; n++) {
    const block = (await rpc('eth_getBlockByNumber', [`0x${n.toString(16)}`, true])) as { transactions: { hash: string; from: string; nonce: string }[] };
    const tx = block.transactions.find((t) => t.from.toLowerCase() === from.toLowerCase() && Number(BigInt(t.nonce)) === count - 1);
    if (tx) return tx.hash;
  }
  throw new Error(`no transaction of ${from} with nonce ${count - 1}`);
}

describe('a kill at any call of the start-up half of the rotation', () => {
  it('leaves a rotation the next start finishes, with exactly one funding transaction', async () => {
    // The path's length: one start with the hook armed and no kill.
    const probeDir = path.join(dir, 'probe');
    await cp(pendingCopy, probeDir, { recursive: true });
    const probe = await Service.create({ dataDir: probeDir, logFile: path.join(dir, 'probe.log') });
    await probe.start({ EVIDENCE_FAULT_KILL_AT: '1000000' });
    const calls = Number(/fault-hook: wallet rotation made (\d+) calls/.exec(probe.logSince(0))?.[1]);
    await probe.kill();
    assert.ok(calls > 5, `the rotation made ${calls} calls`);
    const all = process.env.WALLET_ROTATION_CRASH_POINTS === 'all';
    const sample: Record<'before' | 'after', number[]> = { before: [1, Math.ceil(calls / 2), calls], after: [Math.ceil(calls / 3)] };
    for (const when of ['before', 'after'] as const) {
      for (const k of all ? Array.from({ length: calls }, (_, i) => i + 1) : sample[when]) {
        const d = path.join(dir, `crash-${when}-${k}`);
        await cp(pendingCopy, d, { recursive: true });
        const s = await Service.create({ dataDir: d, logFile: path.join(dir, `crash-${when}-${k}.log`) });
        await s.start({ EVIDENCE_FAULT_KILL_AT: String(k), EVIDENCE_FAULT_KILL_WHEN: when }).catch(() => undefined);
        await s.kill();
        await s.start();
        const label = `kill ${when} call ${k} of ${calls}`;
        assert.match(s.logSince(0), /^wallet {5}rotated /m, `${label}: ${s.logTail()}`);
        // The old wallet sent the PQ registration, the anchor and exactly one funding (fillers of gaps a kill left are empty self-transactions).
        const sent = await oldWalletTransactions(s.rpcUrl, prepared.from);
        assert.equal(sent.filter((t) => t.to?.toLowerCase() === prepared.to.toLowerCase()).length, 1, `${label}: ${JSON.stringify(sent)}`);
        const entries = await walletEntries(d);
        assert.equal(entries.filter((e) => e.retired_at === null).length, 1, label);
        assert.equal(entries.find((e) => e.retired_at === null)?.kid.toLowerCase(), prepared.to.toLowerCase(), label);
        await s.kill();
        await rm(d, { recursive: true, force: true });
      }
    }
  });
});

async function oldWalletTransactions(url: string, from: string): Promise<{ to: string | null; value: string }[]> {
  const latest = Number(BigInt((await rpc('eth_blockNumber', [], url)) as string));
  const out: { to: string | null; value: string }[] = [];
  for (let n = 0; n <= latest; n++) {
    const block = (await rpc('eth_getBlockByNumber', [`0x${n.toString(16)}`, true], url)) as { transactions: { from: string; to: string | null; value: string }[] };
    for (const t of block.transactions) if (t.from.toLowerCase() === from.toLowerCase()) out.push({ to: t.to, value: t.value });
  }
  return out;
}

describe('finishWalletRotation while the old wallet is not drained', () => {
  it('funds nothing, retires nothing and switches nothing: the old wallet keeps sending and the next start tries again', async () => {
    const d = await mkdtemp(path.join(os.tmpdir(), 'wallet-undrained-'));
    try {
      await cp(pendingCopy, d, { recursive: true });
      const live = path.join(d, 'keys', 'ledger-wallet.key');
      const [liveBefore, registryBefore] = await Promise.all([readFile(live, 'utf8'), readFile(path.join(d, 'keys', 'key-registry.json'), 'utf8')]);
      let submitted = 0;
      // The old wallet's sender as the ledger would answer after its replay: one anchor still `sent`.
      const sender = {
        replay: async () => undefined,
        listSlots: async () => [{ sk: 2, nonce: 2, kind: 'anchor', ref: 'x', status: 'sent', tx_hash: `0x${'ab'.repeat(32)}` }],
        submit: async () => {
          submitted++;
          throw new Error('nothing may be sent');
        },
      };
      const outcome = await finishWalletRotation({
        walletKeyFile: live,
        keyRegistryFile: path.join(d, 'keys', 'key-registry.json'),
        senderFor: () => sender as never,
        balanceOf: async () => 10n ** 24n,
        maxFeePerGasWei: 1n,
      });
      assert.equal(outcome?.state, 'waiting');
      assert.match(outcome?.state === 'waiting' ? outcome.reason : '', /1 transaction\(s\) of the old wallet are not final yet/);
      assert.equal(submitted, 0);
      assert.equal(await readFile(live, 'utf8'), liveBefore);
      assert.equal(await readFile(path.join(d, 'keys', 'key-registry.json'), 'utf8'), registryBefore);
      assert.ok((await readFile(`${live}.next`, 'utf8')).length > 0, 'the new key stays for the next start');
    } finally {
      await rm(d, { recursive: true, force: true });
    }
  });
});

describe('finishWalletRotation after a kill between the registry write and the switch', () => {
  it('only renames: nothing is signed with the retired wallet', async () => {
    const d = await mkdtemp(path.join(os.tmpdir(), 'wallet-switch-'));
    try {
      await cp(path.join(service.options.dataDir, 'keys'), path.join(d, 'keys'), { recursive: true });
      // The state a kill leaves there: the registry says the old wallet is retired, the files are not switched.
      const live = path.join(d, 'keys', 'ledger-wallet.key');
      await writeFile(`${live}.next`, await readFile(live, 'utf8'), { mode: 0o600 });
      await writeFile(live, await readFile(path.join(d, 'keys', 'ledger-wallet.genesis.key'), 'utf8'), { mode: 0o600 });
      const outcome = await finishWalletRotation({
        walletKeyFile: live,
        keyRegistryFile: path.join(d, 'keys', 'key-registry.json'),
        senderFor: () => assert.fail('a sender for the retired wallet was asked for'),
        balanceOf: () => assert.fail('nothing to fund'),
        maxFeePerGasWei: 1n,
      });
      assert.equal(outcome?.state, 'done');
      assert.equal(outcome?.state === 'done' ? outcome.fundingTxHash : 'x', null);
      assert.equal((await readFile(live, 'utf8')).trim().length, 66);
      await assert.rejects(readFile(`${live}.next`), { code: 'ENOENT' });
    } finally {
      await rm(d, { recursive: true, force: true });
    }
  });
});
