import { randomBytes } from 'node:crypto';
import { freePort } from '../../lib/local/net.js';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../lib/config.js';
import { resetCoreDeps } from '../../lib/deps/core.js';
import { setLogLevel } from '../../lib/log.js';
import { ensureLocalSecrets } from '../../lib/local/bootstrap.js';
import { startLocalChain } from '../../lib/local/chain.js';
import { startEmbeddedDynamo } from '../../lib/local/dynamo-server.js';
import { createDocumentClient } from '../../lib/store/dynamo.js';
import { ensureTables } from '../../lib/store/tables.js';
import { STACK_ENV_MARKER } from './env.js';

/** The embedded parts a test run shares: in-memory dynalite, an automining Hardhat node, secrets in a temp dir. */
export interface TestStack {
  env: Record<string, string>;
  /** Lets the process end after its tests although the parts still run (killed on exit). */
  unref(): void;
  stop(): Promise<void>;
}

/** Starts the embedded parts for tests (in memory, random ports) and returns the environment that points at them. */
export async function startTestStack(): Promise<TestStack> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'evidence-test-'));
  const dynamo = await startEmbeddedDynamo();
  const env: Record<string, string> = {
    [STACK_ENV_MARKER]: '1',
    DATA_DIR: dataDir,
    DYNAMODB_ENDPOINT: dynamo.endpoint,
    TABLE_PREFIX: `test-${randomBytes(3).toString('hex')}-`,
    ADMIN_TOKEN: randomBytes(24).toString('base64url'),
    LOG_LEVEL: 'warn',
    PUBLIC_RATE_PER_MINUTE: '100000',
    // Tests share one counters table and most send no client address: the limits that count per
    // address or per account are tested with their own settings (testDeps), not by accident.
    ACCOUNT_RATE_PER_MINUTE: '100000',
    AUTH_FAILURES_PER_WINDOW: '100000',
    // Direct mode (one transaction per anchor) unless a test asks for batches: most tests assert on
    // an anchor's own transaction; batch mode has its own (test/evidence/batch.test.ts,
    // test/cli/batched-receipt.test.ts, test/faults/batch-sealing.test.ts). The default is 250.
    LEDGER_BATCH_WINDOW_MS: '0',
  };
  const rpcPort = await freePort();
  Object.assign(env, { LEDGER_RPC_PORT: String(rpcPort), LEDGER_RPC_URL: `http://127.0.0.1:${rpcPort}`, LEDGER_RECEIPT_TIMEOUT_MS: '10000' });
  const config = loadConfig({ ...process.env, ...env });
  const secrets = await ensureLocalSecrets(config);
  const db = createDocumentClient({ region: config.aws.region, endpoint: dynamo.endpoint });
  const [chain] = await Promise.all([
    startLocalChain({
      port: rpcPort,
      blockTimeMs: 0,
      chainId: config.ledger.chainId,
      accounts: [{ privateKey: secrets.walletPrivateKey, balanceWei: 10n ** 24n }],
      logFile: path.join(dataDir, 'chain.log'),
    }),
    ensureTables(db, config.tables),
  ]);
  db.destroy();
  return {
    env,
    unref() {
      chain.unref();
      dynamo.unref();
    },
    async stop() {
      await Promise.all([chain.stop(), dynamo.stop()]);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}


/**
 * For a test file: points process.env at the run's shared stack (test/run.ts) or, when the file
 * runs on its own, starts a private one that is stopped after the file.
 */
export async function useStack(): Promise<Record<string, string>> {
  let env: Record<string, string>;
  if (process.env[STACK_ENV_MARKER]) {
    env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
  } else {
    const stack = await startTestStack();
    Object.assign(process.env, stack.env);
    stack.unref();
    // Not node:test's after(): called from a before() hook it would run when that hook ends.
    // The test runner ends the process after the file; the chain node is killed on exit
    // (lib/local/chain.ts), dynalite is in-process and in memory; the temp dir goes here.
    process.once('exit', () => rmSync(stack.env.DATA_DIR ?? '', { recursive: true, force: true }));
    env = stack.env;
  }
  setLogLevel('warn');
  resetCoreDeps();
  return env;
}
export { freePort };
