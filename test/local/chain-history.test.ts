/**
 * Restart fidelity of the local chain (issue 18, item 5): the node journals its blocks and, on the
 * next start, rebuilds them from the journal with the raw transactions of the ledger records, so
 * block numbers, timestamps and hashes are the originals; new blocks then get the wall clock again.
 * Against the real parts: a Hardhat node in its child process, dynalite, the real LedgerSender.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonRpcProvider } from 'ethers';
import { encodeAnchorData } from '../../lib/ledger/anchor-data.js';
import { createLedgerProvider, type LedgerSender } from '../../lib/ledger/sender.js';
import { startLocalChain, type LocalChain, type LocalChainOptions } from '../../lib/local/chain.js';
import { ledgerRaws } from '../../lib/local/chain-raws.js';
import { CHAIN_ID, FUNDS, freePort, makeSender, newWallet, randomHash, startStore, type Store } from '../ledger/helpers.js';

interface Block {
  number: string;
  timestamp: string;
  hash: string;
  transactions: string[];
}

const wallet = newWallet();
const address = wallet.address.toLowerCase();
const dir = mkdtempSync(path.join(os.tmpdir(), 'chain-history-'));
let store: Store;
let chain: LocalChain;
let provider: JsonRpcProvider;
let sender: LedgerSender;

const options = (port: number, blockTimeMs: number, file = path.join(dir, 'blocks.jsonl')): LocalChainOptions => ({
  port,
  blockTimeMs,
  chainId: CHAIN_ID,
  accounts: [{ privateKey: wallet.privateKey, balanceWei: FUNDS }],
  logFile: path.join(dir, 'chain.log'),
  history: { file, raws: () => ledgerRaws(store.db, store.tables.ledger, address) },
});

let id = 0;
async function rpc<T>(method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(chain.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }) });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

async function blocks(): Promise<Block[]> {
  const head = Number(await rpc<string>('eth_blockNumber'));
  const out: Block[] = [];
  for (let n = 0; n <= head; n++) {
    const b = await rpc<Block>('eth_getBlockByNumber', [`0x${n.toString(16)}`, false]);
    out.push({ number: b.number, timestamp: b.timestamp, hash: b.hash, transactions: b.transactions });
  }
  return out;
}

async function restart(blockTimeMs: number): Promise<LocalChain> {
  const port = chain.port;
  provider.destroy();
  await chain.stop();
  chain = await startLocalChain(options(port, blockTimeMs));
  provider = createLedgerProvider({ rpcUrl: chain.url, chainId: CHAIN_ID, pollingIntervalMs: 50 });
  sender = makeSender(store, provider, wallet);
  return chain;
}

async function anchor(): Promise<string> {
  const r = await sender.submit(encodeAnchorData(randomHash(), randomHash()), { kind: 'anchor', ref: randomHash() });
  assert.equal((await sender.waitForReceipt(r.txHash, 20_000))?.status, 'confirmed');
  return r.txHash;
}

before(async () => {
  store = await startStore();
  chain = await startLocalChain(options(await freePort(), 0));
  provider = createLedgerProvider({ rpcUrl: chain.url, chainId: CHAIN_ID, pollingIntervalMs: 50 });
  sender = makeSender(store, provider, wallet);
});

after(async () => {
  provider?.destroy();
  await chain?.stop();
  await store?.stop();
});

describe('restart of the local chain from its block journal', () => {
  it('starts a journal on a fresh data directory', () => {
    assert.deepEqual(chain.history && { journaled: chain.history.journaled, blocks: chain.history.blocks }, { journaled: 0, blocks: 0 });
  });

  it('rebuilds the same block numbers, timestamps, hashes and transactions, and new blocks follow on', async () => {
    const sent: string[] = [];
    for (let i = 0; i < 6; i++) sent.push(await anchor());
    // Distinctive times: the chain's clock jumps an hour ahead, as if the stack had been idle.
    await rpc('evm_increaseTime', [3600]);
    for (let i = 0; i < 6; i++) sent.push(await anchor());
    const before = await blocks();
    assert.equal(before.length, 13);
    assert.ok(Number(before[12]?.timestamp) - Number(before[6]?.timestamp) >= 3600);

    await restart(0);
    assert.equal(chain.history?.blocks, 12);
    assert.equal(chain.history?.transactions, 12);
    assert.equal(chain.history?.hashesMatch, true);
    assert.equal(chain.history?.stoppedAt, null);
    assert.deepEqual(await blocks(), before, 'every block: number, timestamp, hash and transactions');
    // The ledger's own re-send finds nothing left to send.
    const report = await sender.replay();
    assert.equal(report.resent + report.slots, 0);

    // A new transaction: the next block, at the chain's clock as it was (an hour ahead, as its
    // parent: never earlier than it, never stuck at a replayed past time).
    const now = Math.floor(Date.now() / 1000);
    const next = await anchor();
    const receipt = await provider.getTransactionReceipt(next);
    assert.equal(receipt?.blockNumber, 13);
    const block = await provider.getBlock(13);
    const parent = Number(before[12]?.timestamp);
    assert.ok(block && block.timestamp >= parent && block.timestamp <= Math.max(parent, now + 3600) + 5, `block time ${block?.timestamp} after ${parent}`);

    // And once more: the block mined after the first restart is journaled too.
    const again = await blocks();
    await restart(0);
    assert.equal(chain.history?.blocks, 13);
    assert.deepEqual(await blocks(), again);
  });

  it('keeps interval-mined chains too, runs of empty blocks and a block of several transactions included', async () => {
    const port = chain.port;
    provider.destroy();
    await chain.stop();
    // Interval mining: empty blocks between ours; the journal lists them too.
    chain = await startLocalChain(options(port, 1000));
    provider = createLedgerProvider({ rpcUrl: chain.url, chainId: CHAIN_ID, pollingIntervalMs: 50 });
    sender = makeSender(store, provider, wallet);
    const startBlock = Number(await rpc<string>('eth_blockNumber'));
    await sender.replay();
    await anchor();
    // A block of three transactions (interval mining paused so that none slips into the next block).
    await rpc('evm_setIntervalMining', [0]);
    const three = await Promise.all([0, 1, 2].map(() => sender.submit(encodeAnchorData(randomHash(), randomHash()), { kind: 'anchor', ref: randomHash() })));
    await rpc('evm_mine');
    await rpc('evm_setIntervalMining', [1000]);
    for (const r of three) assert.equal((await sender.waitForReceipt(r.txHash, 20_000))?.status, 'confirmed');
    // Wait (by polling the chain, not the clock) until interval mining has added empty blocks.
    for (let head = 0; head < startBlock + 6; ) {
      head = Number(await rpc<string>('eth_blockNumber'));
      await new Promise((r) => setTimeout(r, 200));
    }
    const before = await blocks();
    const empty = before.filter((b) => b.transactions.length === 0).length;
    assert.ok(empty >= 3, `${empty} empty blocks`);
    assert.ok(before.some((b) => b.transactions.length >= 2), `a block of several transactions: ${JSON.stringify(before.map((b) => b.transactions.length))}`);

    await restart(1000);
    assert.equal(chain.history?.stoppedAt, null);
    const after = (await blocks()).slice(0, before.length);
    assert.deepEqual(after, before, 'numbers, timestamps, hashes and transactions of every block');
    assert.equal(chain.history?.hashesMatch, true);
  });

  it('stops at a transaction the records do not hold, cuts the journal there, and the ledger re-sends the rest', async () => {
    const port = chain.port;
    provider.destroy();
    await chain.stop();
    chain = await startLocalChain(options(port, 0));
    provider = createLedgerProvider({ rpcUrl: chain.url, chainId: CHAIN_ID, pollingIntervalMs: 50 });
    sender = makeSender(store, provider, wallet);
    await sender.replay();
    const last = await anchor();
    const lastBlock = Number((await provider.getTransactionReceipt(last))?.blockNumber);
    // The journal names a transaction hash nobody has the bytes of (e.g. records restored from an older backup).
    const file = path.join(dir, 'blocks.jsonl');
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    const i = lines.findIndex((l) => (JSON.parse(l) as { n: number }).n === lastBlock);
    const forged = { ...(JSON.parse(lines[i] as string) as object), tx: [`0x${randomHash()}`] };
    writeFileSync(file, `${[...lines.slice(0, i), JSON.stringify(forged), ...lines.slice(i + 1)].join('\n')}\n`);

    await restart(0);
    assert.equal(chain.history?.stoppedAt, lastBlock);
    assert.equal(chain.history?.blocks, lastBlock - 1);
    const cut = readFileSync(file, 'utf8').trim().split('\n');
    assert.equal(cut.length, lastBlock, 'blocks 0 … stoppedAt-1');
    const report = await sender.replay();
    assert.equal(report.resent, 1);
    assert.equal(report.confirmed, 1);
    assert.equal((await provider.getTransactionReceipt(last))?.status, 1, 'the transaction is on the chain again');
  });

  it('ignores a line torn by a crash and appends new blocks after the last whole one', async () => {
    const file = path.join(dir, 'blocks.jsonl');
    const whole = readFileSync(file, 'utf8').trim().split('\n').length;
    const head = Number(await rpc<string>('eth_blockNumber'));
    assert.equal(whole, head + 1, 'the journal holds every block');
    writeFileSync(file, `${readFileSync(file, 'utf8')}{"n":${head + 1},"t":`);
    await restart(0);
    assert.equal(chain.history?.blocks, head);
    assert.equal(chain.history?.hashesMatch, true);
    await anchor();
    // The node journals the new block right after mining it: poll the file (with a deadline).
    let lines: string[] = [];
    for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
      lines = readFileSync(file, 'utf8').trim().split('\n');
      if (lines.length >= head + 2) break;
    }
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as { n: number }).n),
      Array.from({ length: head + 2 }, (_, n) => n),
      'blocks 0 … head+1, each once, every line whole',
    );
  });

  it('sets aside the journal of another chain', async () => {
    const port = chain.port;
    provider.destroy();
    await chain.stop();
    const other = path.join(dir, 'other.jsonl');
    writeFileSync(other, `${JSON.stringify({ n: 0, t: 1_700_000_000, h: `0x${'00'.repeat(32)}` })}\n`);
    chain = await startLocalChain(options(port, 0, other));
    assert.equal(chain.history?.reason, 'journal of another chain (set aside)');
    assert.ok(existsSync(`${other}.stale`));
    const fresh = JSON.parse(readFileSync(other, 'utf8').split('\n')[0] ?? '') as { n: number; h: string };
    const genesis = (await blocks())[0];
    assert.equal(fresh.h, genesis?.hash);
    // Its genesis date (2023, from the stale journal's first line) did not leave the clock in the past.
    assert.equal(Number(genesis?.timestamp), 1_700_000_000);
    const now = Math.floor(Date.now() / 1000);
    await rpc('evm_mine');
    const mined = (await blocks())[1];
    assert.ok(Math.abs(Number(mined?.timestamp) - now) <= 5, `block 1 at ${mined?.timestamp}, the wall clock is ${now}`);
  });
});
