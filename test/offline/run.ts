/**
 * `npm run test:offline`: the deployed shape. First test/offline/package.offline.ts: the prod
 * package twice (placeholders refused by name; complete values packaged and passed by
 * `npm run check:template`), no stack needed. Then the API through the deployed shape: starts the embedded stack
 * (in-memory dynalite, automining Hardhat, secrets in a temp dir: test/support/stack.ts), then
 * `osls offline` as a child process with the stack's environment — serverless-esbuild bundles
 * every function of infra/functions.json as on `osls package`, serverless-offline serves them
 * behind its HTTP API Gateway emulation (payload v2), one worker thread per function, and
 * infra/serverless-offline-local.cjs gives them the local deployment's environment (never KMS) —
 * and runs test/offline/smoke.offline.ts over real HTTP against it. Always stops both.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort, startTestStack, type TestStack } from '../support/stack.js';

const root = path.resolve(import.meta.dirname, '..', '..');
const require = createRequire(import.meta.url);
const OSLS = path.join(path.dirname(require.resolve('osls/package.json')), 'bin', 'serverless.js');
// A guard against a hang, not a performance bound: osls bundles every function before it serves,
// which took 40 s on an idle 2-core machine and over 90 s on the same machine under load (a CI
// run failed on a 90 s guard while nothing was wrong). Readiness itself is the "Server ready" line.
const READY_TIMEOUT_MS = Number(process.env.OFFLINE_READY_TIMEOUT_MS ?? 600_000);

// Lambda runs nodejs24.x; locally Node 20 is supported. serverless-offline passes AWS_* on to
// every function, so this also quiets the SDK's Node 22 notice in each worker.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

let stack: TestStack | undefined;
let offline: ChildProcess | undefined;
let offlineLog = '';
let code = 1;

let stopping: Promise<void> | undefined;
/** Stops osls offline (its process group), then the stack; once, whoever asks first. */
const stopAll = () =>
  (stopping ??= (async () => {
    if (offline && offline.exitCode === null && offline.signalCode === null) {
      const exited = new Promise((resolve) => offline?.once('exit', resolve));
      killGroup(offline, 'SIGTERM');
      const timer = setTimeout(() => offline && killGroup(offline, 'SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    await stack?.stop();
  })());
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void stopAll().finally(() => process.exit(130)));
}

/** A node --test child over one file; resolves with its exit code. */
function nodeTest(file: string, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise<number>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', path.join('test', 'offline', file)], { cwd: root, env, stdio: 'inherit' });
    child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
  });
}

// Packaging first, on its own: both packages bundle every function, which osls offline does too.
const tPackage = performance.now();
const packageCode = await nodeTest('package.offline.ts');
console.log(`# offline: prod packaging tests ${ms(performance.now() - tPackage)}`);

try {
  const t0 = performance.now();
  stack = await startTestStack();
  const tStack = performance.now();
  const [httpPort, lambdaPort] = await Promise.all([freePort(), freePort()]);
  const baseUrl = `http://127.0.0.1:${httpPort}`;
  const env = { ...process.env, ...stack.env, PUBLIC_BASE_URL: baseUrl };

  offline = spawn(
    process.execPath,
    [OSLS, 'offline', '--host', '127.0.0.1', '--httpPort', String(httpPort), '--lambdaPort', String(lambdaPort), '--noSponsor'],
    // Own process group: stopping it also stops what osls started (esbuild's service process).
    { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  await waitUntilReady(offline);
  const tReady = performance.now();
  console.log(`# offline: stack ${ms(tStack - t0)}, osls offline ready ${ms(tReady - tStack)} (bundling included) at ${baseUrl}`);

  code = await nodeTest('smoke.offline.ts', { ...process.env, OFFLINE_URL: baseUrl, OFFLINE_LAMBDA_URL: `http://127.0.0.1:${lambdaPort}`, ADMIN_TOKEN: stack?.env.ADMIN_TOKEN ?? '' });
  console.log(`# offline: smoke run ${ms(performance.now() - tReady)}, total ${ms(performance.now() - t0)}`);
  if (code !== 0) console.error(`\n# osls offline output (last 8000 characters):\n${offlineLog.slice(-8000)}`);
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  if (offlineLog) console.error(`\n# osls offline output (last 8000 characters):\n${offlineLog.slice(-8000)}`);
  code = 1;
} finally {
  await stopAll();
}
process.exit(code || packageCode);

/** Resolves on serverless-offline's "Server ready" line; rejects if osls exits first or takes too long. */
function waitUntilReady(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`osls offline was not ready after ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      offlineLog += chunk.toString('utf8');
      if (/Server ready: http/.test(offlineLog)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (c, signal) => {
      clearTimeout(timer);
      reject(new Error(`osls offline exited (${signal ?? `code ${c}`}) before it was ready`));
    });
  });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals) {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
}

function ms(n: number): string {
  return `${(n / 1000).toFixed(1)} s`;
}
