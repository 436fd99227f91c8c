import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Wallet, type JsonRpcProvider } from 'ethers';
import { RpcReader } from '../../lib/ledger/rpc-reader.js';
import { createLedgerProvider, LedgerSender, type LedgerSenderOptions, type LedgerSigner } from '../../lib/ledger/sender.js';
import { startLocalChain, type LocalChain } from '../../lib/local/chain.js';
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../lib/local/dynamo-server.js';
import { createDocumentClient, TABLE_KEYS, type TableKey, type TableNames } from '../../lib/store/dynamo.js';
import { ensureTables } from '../../lib/store/tables.js';

/** Shared set-up of the ledger tests: in-memory dynalite, tables with a random prefix, a funded wallet. */

export const CHAIN_ID = 31337;
export const FUNDS = 10n ** 22n;

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export function tempLog(name: string): string {
  return path.join(mkdtempSync(path.join(os.tmpdir(), 'ledger-test-')), `${name}.log`);
}

export interface Store {
  dynamo: EmbeddedDynamo;
  db: DynamoDBDocumentClient;
  tables: TableNames;
  stop(): Promise<void>;
}

export async function startStore(): Promise<Store> {
  const dynamo = await startEmbeddedDynamo();
  const db = createDocumentClient({ region: 'local', endpoint: dynamo.endpoint });
  const prefix = `t${randomBytes(4).toString('hex')}-`;
  const tables = Object.fromEntries(TABLE_KEYS.map((k) => [k, `${prefix}${k}`])) as Record<TableKey, string>;
  await ensureTables(db, tables);
  return {
    dynamo,
    db,
    tables,
    async stop() {
      db.destroy();
      await dynamo.stop();
    },
  };
}

export function newWallet(): Wallet {
  return new Wallet(Wallet.createRandom().privateKey);
}

export function makeSender(
  store: Store,
  provider: JsonRpcProvider,
  signer: LedgerSigner,
  extra: Partial<LedgerSenderOptions> = {},
): LedgerSender {
  return new LedgerSender({
    provider,
    signer,
    db: store.db,
    table: store.tables.ledger,
    chainId: CHAIN_ID,
    priorityFeeGwei: 1,
    maxFeeGwei: 100,
    // LEDGER_TEST_LOG=1 prints what the senders log (to see why a broadcast was kept or a nonce given back).
    ...(process.env.LEDGER_TEST_LOG ? { log: (level: string, message: string, fields?: Record<string, unknown>) => console.error(new Date().toISOString(), level, message, JSON.stringify(fields ?? {})) } : {}),
    ...extra,
  });
}

export const randomHash = (): string => randomBytes(32).toString('hex');

/** What a ledger test file runs against: a store, a Hardhat node funding `wallets`, a provider and a reader. */
export interface LedgerFixture {
  store: Store;
  chain: LocalChain;
  provider: JsonRpcProvider;
  reader: RpcReader;
  /** A further provider on the node, destroyed with the fixture. */
  track<P extends JsonRpcProvider>(provider: P): P;
  stop(): Promise<void>;
}

export async function startLedgerFixture(name: string, wallets: Wallet[]): Promise<LedgerFixture> {
  const store = await startStore();
  const chain = await startLocalChain({
    port: await freePort(),
    blockTimeMs: 0,
    chainId: CHAIN_ID,
    accounts: wallets.map((w) => ({ privateKey: w.privateKey, balanceWei: FUNDS })),
    logFile: tempLog(name),
  });
  const providers: JsonRpcProvider[] = [];
  const track = <P extends JsonRpcProvider>(p: P): P => {
    providers.push(p);
    return p;
  };
  return {
    store,
    chain,
    provider: track(createLedgerProvider({ rpcUrl: chain.url, chainId: CHAIN_ID, pollingIntervalMs: 50 })),
    reader: new RpcReader(chain.url),
    track,
    async stop() {
      for (const p of providers) p.destroy();
      await chain.stop();
      await store.stop();
    },
  };
}
