import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PortInUseError, probePort } from './net.js';

/**
 * The local chain: a real Hardhat 2 node (`hardhat node`) in a child process, configured by
 * infra/hardhat.config.cjs through the environment. Hardhat keeps no state on disk. With
 * `history`, the node keeps a journal of its blocks (number, timestamp, hash, transaction hashes)
 * and, at the next start, rebuilds the same blocks from it before it listens: the raw transactions
 * come from the ledger records (`history.raws`, asked over the IPC channel), see
 * lib/local/chain-history.cjs. Whatever the journal does not cover (transactions signed but never
 * mined, a journal lost) is re-sent afterwards by LedgerSender.replay into new blocks.
 */

export interface LocalChainAccount {
  /** 32 bytes in hex, with or without 0x. */
  privateKey: string;
  /** Genesis balance in wei. */
  balanceWei: bigint;
}

export interface LocalChainOptions {
  port: number;
  /** 0: one block per transaction (automine); otherwise a block every blockTimeMs. */
  blockTimeMs: number;
  /** Default 31337. */
  chainId?: number;
  accounts: LocalChainAccount[];
  /** The node's per-request log (appended). */
  logFile: string;
  /** How long to wait for the first JSON-RPC answer; default 30 s (120 s with `history`). */
  startTimeoutMs?: number;
  /** Keep a block journal in `file` and replay it at start (same block numbers, timestamps and hashes). */
  history?: {
    file: string;
    /** The wallet's signed raw transactions as [hash, raw] (every version of every slot). */
    raws(): Promise<Iterable<readonly [string, string]>>;
  };
}

/** What the node rebuilt from its journal before it started listening. */
export interface ChainHistoryReport {
  /** Blocks in the journal (0: a new journal was started). */
  journaled: number;
  /** Blocks rebuilt (numbered 1 … blocks), and the transactions in them. */
  blocks: number;
  transactions: number;
  /** The last block rebuilt has its original hash (hence every block before it); null if none was rebuilt. */
  hashesMatch: boolean | null;
  /** The block where the replay stopped (a transaction the records do not hold), with why. */
  stoppedAt: number | null;
  reason: string | null;
  ms: number;
  /** CPU time of the node process meanwhile (every thread). */
  cpuMs: number;
}

export interface LocalChain {
  url: string;
  port: number;
  chainId: number;
  pid: number;
  /** Settles when the node has exited, with how it ended (`code 0`, `signal SIGKILL`). */
  exited: Promise<string>;
  /** With `history`: what was rebuilt from the journal. */
  history: ChainHistoryReport | null;
  /** Lets this process exit while the node runs (tests); the node is still killed on exit. */
  unref(): void;
  /** Stops the node (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. */
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const configFile = path.join(repoRoot, 'infra', 'hardhat.config.cjs');

function hardhatCli(): string {
  const require = createRequire(import.meta.url);
  const pkgFile = require.resolve('hardhat/package.json');
  const pkg = JSON.parse(readFileSync(pkgFile, 'utf8')) as { bin?: Record<string, string> };
  const bin = pkg.bin?.hardhat ?? 'internal/cli/bootstrap.js';
  return path.join(path.dirname(pkgFile), bin);
}

/** Rejects when something already listens on host:port (a second node would fail late and obscurely). */
async function assertPortFree(port: number): Promise<void> {
  const problem = await probePort(port, HOST);
  if (problem === 'EADDRINUSE') throw new PortInUseError(port, HOST, 'the local chain');
  if (problem) throw new Error(`Cannot start the local chain on ${HOST}:${port}: ${problem}`);
}

/** The end of what the node wrote to `file` since offset `from`. */
function tail(file: string, from: number, bytes = 2000): string {
  try {
    const size = statSync(file).size;
    const fd = openSync(file, 'r');
    try {
      const length = Math.min(bytes, Math.max(0, size - from));
      const buf = Buffer.alloc(length);
      readSync(fd, buf, 0, length, size - length);
      return buf.toString('utf8').trim();
    } finally {
      closeSync(fd);
    }
  } catch {
    return '';
  }
}

/** One JSON-RPC call to the node at `url`, with a deadline; throws the node's error message. */
export async function jsonRpc(url: string, method: string, params: unknown[], timeoutMs = 10_000): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!res.ok) throw new Error(`${method}: HTTP ${res.status}`);
  const body = (await res.json()) as { result?: unknown; error?: { message?: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message ?? 'error'}`);
  return body.result;
}

async function rpcChainId(url: string): Promise<number | null> {
  try {
    const result = await jsonRpc(url, 'eth_chainId', [], 1000);
    return typeof result === 'string' ? Number.parseInt(result, 16) : null;
  } catch {
    return null;
  }
}

function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, ms);
    const onExit = () => {
      clearTimeout(timer);
      resolve(true);
    };
    child.once('exit', onExit);
  });
}

/** The genesis date pinned by the journal's first line (block 0), if there is one. */
function genesisDate(file: string): string | undefined {
  try {
    const fd = openSync(file, 'r');
    try {
      const buf = Buffer.alloc(512);
      const n = readSync(fd, buf, 0, buf.length, 0);
      const first = JSON.parse(buf.subarray(0, n).toString('utf8').split('\n')[0] ?? '') as { n?: unknown; t?: unknown };
      return first.n === 0 && Number.isInteger(first.t) ? new Date((first.t as number) * 1000).toISOString() : undefined;
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/** Starts `hardhat node` on 127.0.0.1:port; resolves once it answers eth_chainId (and, with history, has replayed it). */
export async function startLocalChain(options: LocalChainOptions): Promise<LocalChain> {
  const chainId = options.chainId ?? 31337;
  if (!Number.isInteger(options.blockTimeMs) || options.blockTimeMs < 0) {
    throw new Error(`blockTimeMs must be a non-negative integer, got ${options.blockTimeMs}`);
  }
  await assertPortFree(options.port);

  mkdirSync(path.dirname(options.logFile), { recursive: true, mode: 0o700 });
  const logFd = openSync(options.logFile, 'a', 0o600);
  const logStart = statSync(options.logFile).size;
  const accounts = options.accounts.map((a) => ({ privateKey: a.privateKey, balance: a.balanceWei.toString() }));
  const initialDate = options.history ? genesisDate(options.history.file) : undefined;
  let child: ChildProcess;
  try {
    child = spawn(
      process.execPath,
      [hardhatCli(), 'node', '--hostname', HOST, '--port', String(options.port), '--config', configFile],
      {
        cwd: repoRoot,
        env: {
          ...process.env,
          HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true',
          HARDHAT_HIDE_SOLIDITY_SURVEY_MESSAGE: 'true',
          NO_COLOR: '1',
          LOCAL_CHAIN_ID: String(chainId),
          LOCAL_CHAIN_BLOCK_TIME_MS: String(options.blockTimeMs),
          LOCAL_CHAIN_ACCOUNTS: JSON.stringify(accounts),
          LOCAL_CHAIN_PARENT_PID: String(process.pid),
          ...(options.history ? { LOCAL_CHAIN_HISTORY_FILE: options.history.file } : {}),
          ...(initialDate ? { LOCAL_CHAIN_INITIAL_DATE: initialDate } : {}),
        },
        // Its own process group: Ctrl-C reaches only the parent, which stops the node itself.
        // The IPC channel closes when the parent dies, however it dies: the node then exits at once.
        detached: true,
        stdio: ['ignore', logFd, logFd, 'ipc'],
      },
    );
  } finally {
    closeSync(logFd); // the child holds its own copy
  }

  // Also stop the node when this process exits normally (the config's watchdog covers crashes).
  const killOnExit = () => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  child.channel?.unref();
  let history: ChainHistoryReport | null = null;
  const history_ = options.history;
  if (history_) {
    child.on('message', (message: { type?: string; report?: ChainHistoryReport }) => {
      if (message?.type === 'history-replayed' && message.report) history = message.report;
      if (message?.type !== 'history-raws?') return;
      const reply = (m: object) => {
        if (child.connected) child.send(m, (error) => error && child.kill('SIGKILL'));
      };
      history_.raws().then(
        (raws) => reply({ type: 'history-raws', raws: [...raws] }),
        (error: unknown) => {
          // Without them the node cannot rebuild its blocks: it must not start empty and journal over them.
          reply({ type: 'history-raws', error: error instanceof Error ? error.message : String(error) });
        },
      );
    });
  }
  const exitedHow = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      process.off('exit', killOnExit);
      resolve(signal ? `signal ${signal}` : `code ${code}`);
    });
  });

  const url = `http://${HOST}:${options.port}`;
  const startTimeoutMs = options.startTimeoutMs ?? (options.history ? 120_000 : 30_000);
  const deadline = Date.now() + startTimeoutMs;
  let exited: string | null = null;
  const onEarlyExit = (code: number | null, signal: NodeJS.Signals | null) => {
    exited = signal ? `signal ${signal}` : `code ${code}`;
  };
  child.once('exit', onEarlyExit);
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
  let failure: Error | null = null;
  spawnError.then((e) => (failure = e), () => undefined);

  try {
    for (;;) {
      if (failure) throw new Error(`Cannot start the local chain: ${(failure as Error).message}`);
      if (exited) {
        const log = tail(options.logFile, logStart);
        // Taken between the check above and the node's own bind.
        if (/EADDRINUSE|address already in use/i.test(log)) throw new PortInUseError(options.port, HOST, 'the local chain');
        throw new Error(`The local chain (hardhat node) exited during start-up (${exited}). Last output (${options.logFile}):\n${log}`);
      }
      const answered = await rpcChainId(url);
      if (answered !== null && (!options.history || history)) {
        if (answered !== chainId) {
          throw new Error(`The node on ${url} answered chain id ${answered}, expected ${chainId}: another node holds the port?`);
        }
        break;
      }
      if (Date.now() > deadline) {
        throw new Error(`The local chain did not answer on ${url} within ${startTimeoutMs} ms (log: ${options.logFile})`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (error) {
    child.kill('SIGKILL');
    await waitForExit(child, 5000);
    process.off('exit', killOnExit);
    throw error;
  }
  child.off('exit', onEarlyExit);

  let stopping: Promise<void> | null = null;
  return {
    url,
    port: options.port,
    chainId,
    pid: child.pid ?? -1,
    exited: exitedHow,
    history,
    unref() {
      child.unref();
    },
    stop() {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          if (!(await waitForExit(child, 5000))) {
            child.kill('SIGKILL');
            await waitForExit(child, 5000);
          }
        }
        process.off('exit', killOnExit);
      })();
      return stopping;
    },
  };
}
