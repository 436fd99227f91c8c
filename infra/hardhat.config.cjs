/**
 * Hardhat 2 configuration of the local chain (`hardhat node`), started by lib/local/chain.ts.
 * Every setting arrives in the environment so that one file serves every port and test:
 *   LOCAL_CHAIN_ID            chain id (default 31337)
 *   LOCAL_CHAIN_BLOCK_TIME_MS 0 = automine (one block per transaction), otherwise interval mining
 *   LOCAL_CHAIN_ACCOUNTS      JSON [{ "privateKey": "0x…", "balance": "<wei, decimal>" }] funded in genesis
 *   LOCAL_CHAIN_PARENT_PID    the process that started the node: the node exits when it is gone
 *   LOCAL_CHAIN_INITIAL_DATE  the genesis block's date (ISO 8601): pinned so that a restart rebuilds the same chain
 *   LOCAL_CHAIN_HISTORY_FILE  the block journal: replayed at start, appended to on every block (lib/local/chain-history.cjs)
 * Blocks may share a timestamp, so fast automining does not push the chain's clock ahead of the wall clock.
 * Nothing here touches the network or the disk except the (unused) cache and artifacts paths.
 */
const os = require('node:os');
const path = require('node:path');
const { subtask } = require('hardhat/config');
const { TASK_NODE_GET_PROVIDER } = require('hardhat/builtin-tasks/task-names');
const { installChainHistory } = require('../lib/local/chain-history.cjs');

function intFromEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return Number(raw.trim());
}

function accountsFromEnv() {
  const raw = process.env.LOCAL_CHAIN_ACCOUNTS;
  if (raw === undefined || raw.trim() === '') return undefined;
  const parsed = JSON.parse(raw);
  if (!Array.isArray(parsed)) throw new Error('LOCAL_CHAIN_ACCOUNTS must be a JSON array');
  return parsed.map((a, i) => {
    if (typeof a.privateKey !== 'string' || !/^(0x)?[0-9a-fA-F]{64}$/.test(a.privateKey)) {
      throw new Error(`LOCAL_CHAIN_ACCOUNTS[${i}].privateKey must be 32 bytes in hex`);
    }
    if (typeof a.balance !== 'string' || !/^\d+$/.test(a.balance)) {
      throw new Error(`LOCAL_CHAIN_ACCOUNTS[${i}].balance must be a decimal string of wei`);
    }
    return { privateKey: a.privateKey.startsWith('0x') ? a.privateKey : `0x${a.privateKey}`, balance: a.balance };
  });
}

// Parent watchdog: if the process that started the node dies without stopping it (SIGKILL,
// crash), the node exits instead of holding the port forever: at once when the IPC channel
// lib/local/chain.ts opens closes, otherwise when it notices it was re-parented.
const parentPid = intFromEnv('LOCAL_CHAIN_PARENT_PID', 0);
if (process.connected) {
  process.once('disconnect', () => process.exit(0));
  process.channel?.unref();
}
if (parentPid > 0) {
  const timer = setInterval(() => {
    let alive = process.ppid === parentPid;
    if (alive) {
      try {
        process.kill(parentPid, 0);
      } catch {
        alive = false;
      }
    }
    if (!alive) process.exit(0);
  }, 1000);
  timer.unref();
}

const blockTimeMs = intFromEnv('LOCAL_CHAIN_BLOCK_TIME_MS', 0);
const accounts = accountsFromEnv();
const loggingEnabled = true;
installChainHistory({ subtask, taskName: TASK_NODE_GET_PROVIDER, blockTimeMs, loggingEnabled });
const scratch = path.join(os.tmpdir(), 'evidence-local-chain-hardhat');

module.exports = {
  networks: {
    hardhat: {
      chainId: intFromEnv('LOCAL_CHAIN_ID', 31337),
      mining: blockTimeMs === 0 ? { auto: true, interval: 0 } : { auto: false, interval: blockTimeMs },
      allowBlocksWithSameTimestamp: true,
      loggingEnabled,
      ...(process.env.LOCAL_CHAIN_INITIAL_DATE ? { initialDate: process.env.LOCAL_CHAIN_INITIAL_DATE } : {}),
      ...(accounts ? { accounts } : {}),
    },
  },
  paths: {
    sources: path.join(scratch, 'contracts'),
    cache: path.join(scratch, 'cache'),
    artifacts: path.join(scratch, 'artifacts'),
  },
};
