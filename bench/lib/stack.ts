/**
 * The embedded stack a benchmark runs against, started the way test/support/stack.ts starts the
 * test stack: in-memory dynalite in this process, a Hardhat node in a child process (automine, or
 * interval mining with `blockTimeMs`), secrets in a temp dir, and the environment pointing at them.
 * A second stack on the same dynalite takes a fresh table prefix (a fresh chain starts at nonce 0,
 * so the ledger table of a previous chain must not be reused).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../lib/config.js';
import { ensureLocalSecrets } from '../../lib/local/bootstrap.js';
import { startLocalChain, type LocalChain } from '../../lib/local/chain.js';
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../lib/local/dynamo-server.js';
import { createDocumentClient } from '../../lib/store/dynamo.js';
import { ensureTables } from '../../lib/store/tables.js';
import { freePort } from './proc.js';

/** Limits raised so that neither the per-minute rate nor the monthly quota cuts a benchmark. */
export const BENCH_TIER_LIMITS = JSON.stringify({
  pro: { monthly_quota: 100_000_000, rate_per_minute: 100_000_000 },
  enterprise: { monthly_quota: 100_000_000, rate_per_minute: 100_000_000 },
});

export interface BenchStack {
  env: Record<string, string>;
  blockTimeMs: number;
  /** The Hardhat node's process id. */
  chainPid: number;
  /**
   * Spare wallets funded at genesis (private keys, 0x hex), one per API process: each process's
   * sender then owns its nonces alone, so a request cut off when one API process stops can never
   * leave a nonce gap in front of the next process's transactions.
   */
  wallets: string[];
  stop(): Promise<void>;
}

let sharedDynamo: EmbeddedDynamo | undefined;

/** The process-wide in-memory dynalite (started once, in this process). */
export async function benchDynamo(): Promise<EmbeddedDynamo> {
  sharedDynamo ??= await startEmbeddedDynamo();
  return sharedDynamo;
}

export async function stopBenchDynamo(): Promise<void> {
  await sharedDynamo?.stop();
  sharedDynamo = undefined;
}

export async function startBenchStack(options: { blockTimeMs: number; extraEnv?: Record<string, string>; wallets?: number }): Promise<BenchStack> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'evidence-bench-'));
  const dynamo = await benchDynamo();
  const rpcPort = await freePort();
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    DYNAMODB_ENDPOINT: dynamo.endpoint,
    TABLE_PREFIX: `bench-${randomBytes(3).toString('hex')}-`,
    ADMIN_TOKEN: randomBytes(24).toString('base64url'),
    LOG_LEVEL: 'warn',
    // Register and login get 1/20 of this per client IP: high enough never to answer 429 here.
    PUBLIC_RATE_PER_MINUTE: '100000000',
    ACCOUNT_RATE_PER_MINUTE: '100000000',
    TIER_LIMITS: BENCH_TIER_LIMITS,
    LEDGER_RPC_PORT: String(rpcPort),
    LEDGER_RPC_URL: `http://127.0.0.1:${rpcPort}`,
    LEDGER_BLOCK_TIME_MS: String(options.blockTimeMs),
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    ...options.extraEnv,
  };
  const config = loadConfig({ ...process.env, ...env });
  const secrets = await ensureLocalSecrets(config);
  const wallets = Array.from({ length: options.wallets ?? 8 }, () => `0x${randomBytes(32).toString('hex')}`);
  const db = createDocumentClient({ region: config.aws.region, endpoint: dynamo.endpoint });
  let chain: LocalChain;
  try {
    [chain] = await Promise.all([
      startLocalChain({
        port: rpcPort,
        blockTimeMs: options.blockTimeMs,
        chainId: config.ledger.chainId,
        accounts: [secrets.walletPrivateKey, ...wallets].map((privateKey) => ({ privateKey, balanceWei: 10n ** 24n })),
        logFile: path.join(dataDir, 'chain.log'),
      }),
      ensureTables(db, config.tables),
    ]);
  } finally {
    db.destroy();
  }
  return {
    env,
    blockTimeMs: options.blockTimeMs,
    chainPid: chain.pid,
    wallets,
    async stop() {
      await chain.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
