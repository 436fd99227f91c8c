/**
 * `npm start` (lib/local/start.ts) as a benchmark runs it: its own process, on a dynalite of this
 * process (with a proxy in front when `front` is given: bench/lib/dynamo-count.ts counts there),
 * fresh ports, data dir and table prefix, the limits raised (BENCH_TIER_LIMITS). Used by
 * bench/request-path.ts and bench/batch-sync.ts. `NODE_OPTIONS: --cpu-prof --cpu-prof-dir=<dir>`
 * in `extraEnv` writes the API process's CPU profile when `stop()` ends it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedDynamo, type EmbeddedDynamo } from '../../lib/local/dynamo-server.js';
import { freePort } from '../../lib/local/net.js';
import { REPO_ROOT } from './proc.js';
import { BENCH_TIER_LIMITS } from './stack.js';

export interface Stack {
  base: string;
  apiPid: number;
  /** The Hardhat node's pid, from `npm start`'s ledger line. */
  ledgerPid: number;
  dataDir: string;
  adminToken: string;
  dynamo: EmbeddedDynamo;
  stop(): Promise<void>;
}

/** `npm start` (lib/local/start.ts) on a dynalite of this process, with `endpoint` in front of it (a proxy) or not. */
export async function startStack(extraEnv: Record<string, string>, front?: (dynamoEndpoint: string) => Promise<string>): Promise<Stack> {
  const dynamo = await startEmbeddedDynamo();
  const endpoint = front ? await front(dynamo.endpoint) : dynamo.endpoint;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'evidence-request-path-'));
  const port = await freePort();
  const adminToken = randomBytes(24).toString('base64url');
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATA_DIR: dataDir,
    PORT: String(port),
    LEDGER_RPC_PORT: String(await freePort()),
    DYNAMODB_ENDPOINT: endpoint,
    TABLE_PREFIX: `bench-${randomBytes(3).toString('hex')}-`,
    ADMIN_TOKEN: adminToken,
    LOG_LEVEL: 'warn',
    PUBLIC_RATE_PER_MINUTE: '100000000',
    ACCOUNT_RATE_PER_MINUTE: '100000000',
    TIER_LIMITS: BENCH_TIER_LIMITS,
    ...extraEnv,
  };
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'lib/local/start.ts')], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not become ready:\n${out}`)), 120_000);
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (/^ready in /m.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`npm start exited (${code}):\n${out}`)));
  });
  return {
    base: `http://127.0.0.1:${port}`,
    apiPid: child.pid ?? 0,
    ledgerPid: Number(/\(hardhat, pid (\d+)/.exec(out)?.[1] ?? 0),
    dataDir,
    adminToken,
    dynamo,
    async stop() {
      process.off('exit', kill);
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      await dynamo.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
