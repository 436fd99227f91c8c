import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { loadConfig } from '../../lib/config.js';
import { resetCoreDeps } from '../../lib/deps/core.js';
import { setLogLevel } from '../../lib/log.js';
import { ensureLocalSecrets } from '../../lib/local/bootstrap.js';
import { startEmbeddedDynamo } from '../../lib/local/dynamo-server.js';
import { createDocumentClient } from '../../lib/store/dynamo.js';
import { ensureTables } from '../../lib/store/tables.js';
import { STACK_ENV_MARKER } from './env.js';

/** The embedded parts a test run shares: in-memory dynalite, an automining Hardhat node, secrets in a temp dir. */
export interface TestStack {
  env: Record<string, string>;
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
  };
  const config = loadConfig({ ...process.env, ...env });
  await ensureLocalSecrets(config);
  const db = createDocumentClient({ region: config.aws.region, endpoint: dynamo.endpoint });
  await ensureTables(db, config.tables);
  db.destroy();
  return {
    env,
    async stop() {
      await dynamo.stop();
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
    after(() => stack.stop());
    env = stack.env;
  }
  setLogLevel('warn');
  resetCoreDeps();
  return env;
}
