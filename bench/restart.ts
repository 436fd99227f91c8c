/**
 * `npx tsx bench/restart.ts`: what a restart of the local chain costs with N transactions of
 * history (issue 18, item 5), through the parts `npm start` uses: dynalite in its own process with
 * the ledger records on disk, the Hardhat node in its child process rebuilding its journal
 * (lib/local/chain-history.cjs), then LedgerSender.replay for what is left.
 *
 * Set-up (not measured): N signed transactions of one wallet, mined BLOCK_TXS per block (1: as
 * automine mines them, the worst case; more: interval mining or batches), their slots written as
 * the sender writes them (confirmed, with raw bytes), the journal written by the node itself.
 * Measured: the node stopped, then started again until it answers with every block rebuilt,
 * split into the node's own start, reading the raw transactions from DynamoDB, and the rebuild;
 * then LedgerSender.replay (finds nothing left). Prints one JSON line.
 *
 *   RESTART_N=10000  RESTART_BLOCK_TXS=1  RESTART_DIR=/tmp/…  (kept between runs with the same N: set-up once)
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { Wallet } from 'ethers';
import { createLedgerProvider, LedgerSender } from '../lib/ledger/sender.js';
import { startLocalChain, type LocalChainOptions } from '../lib/local/chain.js';
import { ledgerRaws } from '../lib/local/chain-raws.js';
import { startDynamoProcess } from '../lib/local/dynamo-process.js';
import { freePort } from '../lib/local/net.js';
import { createDocumentClient, TABLE_KEYS, type TableKey } from '../lib/store/dynamo.js';
import { ensureTables } from '../lib/store/tables.js';
import { encodeAnchorData } from '../lib/ledger/anchor-data.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const N = Number(process.env.RESTART_N ?? 10_000);
const PER_BLOCK = Number(process.env.RESTART_BLOCK_TXS ?? 1);
const CHAIN_ID = 31337;
const dir = process.env.RESTART_DIR ?? path.join(os.tmpdir(), `bench-restart-${N}-${PER_BLOCK}`);
mkdirSync(dir, { recursive: true });
const keyFile = path.join(dir, 'wallet.key');
if (!existsSync(keyFile)) writeFileSync(keyFile, Wallet.createRandom().privateKey);
const wallet = new Wallet(readFileSync(keyFile, 'utf8').trim());
const address = wallet.address.toLowerCase();
const tables = Object.fromEntries(TABLE_KEYS.map((k) => [k, `bench-${k}`])) as Record<TableKey, string>;

const dynamo = await startDynamoProcess({ port: await freePort(), dir: path.join(dir, 'dynamodb'), logFile: path.join(dir, 'dynamodb.log') });
const db = createDocumentClient({ region: 'local', endpoint: `http://127.0.0.1:${dynamo.port}` });
await ensureTables(db, tables);
const port = await freePort();
const options: LocalChainOptions = {
  port,
  blockTimeMs: 0,
  chainId: CHAIN_ID,
  accounts: [{ privateKey: wallet.privateKey, balanceWei: 10n ** 24n }],
  logFile: path.join(dir, 'chain.log'),
  history: { file: path.join(dir, 'blocks.jsonl'), raws: () => ledgerRaws(db, tables.ledger, address) },
};

let id = 0;
async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }) });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

const doneFile = path.join(dir, 'set-up.done');
if (!existsSync(doneFile)) {
  const chain = await startLocalChain(options);
  const t0 = performance.now();
  if (PER_BLOCK > 1) await rpc(chain.url, 'evm_setAutomine', [false]);
  const now = new Date().toISOString();
  let slots: Record<string, unknown>[] = [];
  const flush = async () => {
    for (let i = 0; i < slots.length; i += 25) {
      await db.send(new BatchWriteCommand({ RequestItems: { [tables.ledger]: slots.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) } }));
    }
    slots = [];
  };
  for (let nonce = 0; nonce < N; nonce++) {
    const raw = await wallet.signTransaction({
      type: 2,
      chainId: CHAIN_ID,
      nonce,
      to: wallet.address,
      value: 0,
      data: encodeAnchorData(randomBytes(32).toString('hex'), randomBytes(32).toString('hex')),
      gasLimit: 30_000,
      maxFeePerGas: 10n ** 10n,
      maxPriorityFeePerGas: 10n ** 9n,
    });
    const txHash = (await rpc(chain.url, 'eth_sendRawTransaction', [raw])) as string;
    if (PER_BLOCK > 1 && (nonce + 1) % PER_BLOCK === 0) await rpc(chain.url, 'evm_mine');
    slots.push({ pk: `tx#${address}`, sk: nonce, nonce, tx_hash: txHash, raw, kind: 'anchor', ref: `r${nonce}`, status: 'confirmed', chain_id: CHAIN_ID, created_at: now, updated_at: now });
    if (slots.length >= 500) await flush();
  }
  if (PER_BLOCK > 1) await rpc(chain.url, 'evm_mine');
  await flush();
  await db.send(
    new BatchWriteCommand({ RequestItems: { [tables.ledger]: [{ PutRequest: { Item: { pk: `wallet#${address}`, sk: 0, address, next_nonce: N, created_at: now, updated_at: now } } }] } }),
  );
  // Let the journal catch up with the last block before the node stops.
  const head = Number(await rpc(chain.url, 'eth_blockNumber'));
  for (let lines = 0; lines <= head; ) {
    lines = readFileSync(options.history!.file, 'utf8').trim().split('\n').length;
    if (lines <= head) await new Promise((r) => setTimeout(r, 100));
  }
  await chain.stop();
  writeFileSync(doneFile, String(head));
  process.stderr.write(`set-up: ${N} transactions in ${head} blocks in ${Math.round(performance.now() - t0)} ms\n`);
}

// The measurement.
const cpuBefore = process.cpuUsage();
let t = performance.now();
const rawsT0 = performance.now();
const raws = await ledgerRaws(db, tables.ledger, address);
const rawsMs = performance.now() - rawsT0;
t = performance.now();
const chain = await startLocalChain(options);
const startMs = performance.now() - t;
const provider = createLedgerProvider({ rpcUrl: chain.url, chainId: CHAIN_ID, pollingIntervalMs: 50 });
const sender = new LedgerSender({ provider, signer: wallet, db, table: tables.ledger, chainId: CHAIN_ID, priorityFeeGwei: 1, maxFeeGwei: 100 });
const t2 = performance.now();
const report = await sender.replay();
const senderReplayMs = performance.now() - t2;
const head = Number(await rpc(chain.url, 'eth_blockNumber'));
const cpu = process.cpuUsage(cpuBefore);
const result = {
  transactions: N,
  perBlock: PER_BLOCK,
  blocks: head,
  restartMs: Math.round(startMs + senderReplayMs),
  nodeStartToReadyMs: Math.round(startMs),
  rebuildInNodeMs: chain.history?.ms,
  readRawsFromDynamoMs: Math.round(rawsMs),
  rawsRead: raws.length,
  senderReplayMs: Math.round(senderReplayMs),
  senderResent: report.resent,
  rebuilt: chain.history,
  parentCpuMs: Math.round((cpu.user + cpu.system) / 1000),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
provider.destroy();
await chain.stop();
db.destroy();
await dynamo.stop();
