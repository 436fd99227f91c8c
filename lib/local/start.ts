/**
 * `npm start`: the whole service on this machine, on real embedded parts, 127.0.0.1 only
 * (lib/local/stack.ts). Before anything starts (no child, no file in DATA_DIR, nothing on the
 * chain) it loads the configuration and tries every port it will bind: the API's (PORT), and
 * dynalite's (DYNAMODB_PORT) and the Hardhat node's (LEDGER_RPC_PORT) unless DYNAMODB_ENDPOINT or
 * LEDGER_RPC_URL point elsewhere. A bad value or a busy port is one line on stderr and exit code 1,
 * before the stack's modules are even loaded (docs/configuration.md). Then DATA_DIR is made
 * owner-only (lib/local/data-dir.ts): a DATA_DIR that cannot be is one line naming it, exit code 1.
 */
import { availableParallelism } from 'node:os';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { DataDirError, ownerOnlyDataDir } from './data-dir.js';
import { checkPorts, localPlan } from './preflight.js';

// npm scripts run Node 24 (as Lambda's nodejs24.x), but the CLI may run on an older Node: the SDK's notice that its
// releases after January 2027 need Node 22 is not repeated on every start.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
// The local keys' proofs on a worker thread when there is a core for it (lib/local/proof-threads.ts;
// a process that is not `npm start`, a test's or a bundled function's, makes them on its event loop).
process.env.PROOF_THREADS ??= availableParallelism() > 1 ? '1' : '0';

let config: Config | undefined;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exitCode = 1;
}
if (config) {
  const plan = localPlan(config);
  // The ports first: a busy one leaves DATA_DIR as it was (not even created).
  const problem = (await checkPorts(plan.ports)) ?? (await ownerOnlyProblem(config.dataDir));
  if (problem) {
    process.stderr.write(`${problem}\n`);
    process.exitCode = 1;
  } else {
    await (await import('./stack.js')).runLocalStack(config, plan);
  }
}

/** Makes DATA_DIR owner-only; the one line saying why it cannot be, or null. */
async function ownerOnlyProblem(dataDir: string): Promise<string | null> {
  try {
    await ownerOnlyDataDir(dataDir);
    return null;
  } catch (error) {
    if (error instanceof DataDirError) return error.message;
    throw error;
  }
}
