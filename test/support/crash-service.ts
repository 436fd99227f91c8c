/**
 * The crash harness's service (crash-harness.ts): one `npm start` (lib/local/start.ts) as a user
 * runs it, on a DATA_DIR and fixed ports, in its own process group so that a SIGKILL reaches the
 * whole tree, restartable; and the process-tree reading the kills rely on (Linux /proc).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../lib/local/net.js';
import { waitFor } from './wait.js';

/** Process groups started here and not yet killed (so that a Ctrl-C of the bench can end them). */
const liveGroups = new Set<number>();

/** SIGKILLs every service group this process started; for SIGINT/SIGTERM handlers of scripts. */
export function killStartedServices(): void {
  for (const pgid of liveGroups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  liveGroups.clear();
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

// ─── the service as a process group ─────────────────────────────────────────────────────────────

export interface ServiceOptions {
  dataDir: string;
  logFile: string;
  blockTimeMs?: number;
  /** Extra environment (wins over the defaults). */
  env?: Record<string, string>;
  /** How long a start may take before it counts as failed (loaded machine: generous). */
  startDeadlineMs?: number;
}

/** Environment variables a user's shell would pass through; everything else (the test stack's
 * DYNAMODB_ENDPOINT, LEDGER_RPC_URL, TABLE_PREFIX…) is left out so the service runs its own parts. */
const PASS_THROUGH = ['PATH', 'HOME', 'USER', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'TMP', 'TEMP', 'SHELL'];

interface GroupProcess {
  pid: number;
  ppid: number;
  state: string;
  cmdline: string;
}

/**
 * The service's process tree: every process of group `pgid` and every descendant of one (the
 * local stack runs its database and ledger node in process groups of their own, so that Ctrl-C
 * reaches only `npm start`; a SIGKILL of the tree must reach them too). Read from /proc (Linux).
 */
export function groupProcesses(pgid: number): GroupProcess[] {
  const all = allProcesses();
  const inTree = new Set(all.filter((p) => p.pgrp === pgid).map((p) => p.pid));
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of all) {
      if (!inTree.has(p.pid) && inTree.has(p.ppid)) {
        inTree.add(p.pid);
        grew = true;
      }
    }
  }
  return all.filter((p) => inTree.has(p.pid)).map(({ pgrp: _pgrp, ...rest }) => rest);
}

function allProcesses(): (GroupProcess & { pgrp: number })[] {
  const out: (GroupProcess & { pgrp: number })[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid pgrp …; comm may contain spaces and parentheses.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      let cmdline = '';
      try {
        cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim();
      } catch {
        // gone meanwhile
      }
      out.push({ pid: Number(name), ppid: Number(fields[1]), pgrp: Number(fields[2]), state: fields[0] ?? '?', cmdline });
    } catch {
      // the process ended while we read it
    }
  }
  return out;
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * One `npm start` on a DATA_DIR and fixed ports, restartable. The process is the leader of its
 * own group, so a kill reaches the database and the ledger node it starts too.
 */
export class Service {
  readonly ports: { api: number; rpc: number; dynamo: number };
  readonly adminToken = randomBytes(24).toString('base64url');
  child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  /** Set when the running service's process exited (killed by its fault hook, or crashed). */
  exitedBy: string | undefined;
  starts = 0;

  private constructor(
    readonly options: ServiceOptions,
    ports: { api: number; rpc: number; dynamo: number },
  ) {
    this.ports = ports;
  }

  static async create(options: ServiceOptions): Promise<Service> {
    const ports = { api: await freePort(), rpc: await freePort(), dynamo: await freePort() };
    return new Service(options, ports);
  }

  get base(): string {
    return `http://127.0.0.1:${this.ports.api}`;
  }

  get rpcUrl(): string {
    return `http://127.0.0.1:${this.ports.rpc}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The environment of `npm start` (and of `npm run admin` next to it, as from the same shell). */
  private environment(extraEnv: Record<string, string> = {}): Record<string, string> {
    const env: Record<string, string> = {};
    for (const key of PASS_THROUGH) if (process.env[key] !== undefined) env[key] = process.env[key] as string;
    return Object.assign(env, {
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      DATA_DIR: this.options.dataDir,
      PORT: String(this.ports.api),
      LEDGER_RPC_PORT: String(this.ports.rpc),
      DYNAMODB_PORT: String(this.ports.dynamo),
      ADMIN_TOKEN: this.adminToken,
      LEDGER_BLOCK_TIME_MS: String(this.options.blockTimeMs ?? 0),
      // The burst must not be throttled: the limits are not under test here (operators change them).
      TIER_LIMITS: JSON.stringify({ pro: { monthly_quota: 1_000_000, rate_per_minute: 1_000_000 } }),
      PUBLIC_RATE_PER_MINUTE: '1000000',
      ACCOUNT_RATE_PER_MINUTE: '1000000',
      LOG_LEVEL: 'warn',
      ...this.options.env,
      ...extraEnv,
    });
  }

  /** Whether GET /api/v1/health answers 200 now (within 5 s). */
  async healthy(): Promise<boolean> {
    try {
      const res = await fetch(`${this.base}/api/v1/health`, { signal: AbortSignal.timeout(5000) });
      await res.arrayBuffer();
      return res.status === 200;
    } catch {
      return false;
    }
  }

  /** Starts the service and resolves when GET /api/v1/health answers 200. */
  async start(extraEnv: Record<string, string> = {}): Promise<void> {
    if (this.child) throw new Error('service already running');
    const env = this.environment(extraEnv);
    const fd = openSync(this.options.logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(process.execPath, ['--import', 'tsx', 'lib/local/start.ts'], {
        cwd: repoRoot,
        env,
        detached: true,
        stdio: ['ignore', fd, fd],
      });
    } finally {
      closeSync(fd);
    }
    this.child = child;
    if (child.pid) liveGroups.add(child.pid);
    this.starts += 1;
    let exitCode: string | undefined;
    this.exitedBy = undefined;
    this.exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        exitCode = signal ?? String(code);
        this.exitedBy = exitCode;
        resolve();
      });
    });
    const deadline = this.options.startDeadlineMs ?? 90_000;
    await waitFor(`GET /api/v1/health 200 (start ${this.starts}, log ${this.options.logFile})`, deadline, async () => {
      if (exitCode !== undefined) throw new Error(`the service exited (${exitCode}) before it was ready; log: ${this.options.logFile}\n${this.logTail()}`);
      return (await this.healthy()) || undefined;
    });
  }

  /**
   * `npm run admin -- <args>` as a child process with the service's environment (its DATA_DIR and
   * ports): its exit code, its standard output and its standard error.
   */
  admin(...args: string[]): Promise<{ code: number; out: string; err: string }> {
    return new Promise((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', 'lib/cli/admin.ts', ...args], { cwd: repoRoot, env: this.environment() }, (error, out, err) => {
        if (error && typeof error.code !== 'number') reject(error);
        else resolve({ code: typeof error?.code === 'number' ? error.code : 0, out, err });
      });
    });
  }

  /** The service log from byte `offset` on (what it wrote since). */
  logSince(offset: number): string {
    try {
      return readFileSync(this.options.logFile).subarray(offset).toString('utf8');
    } catch {
      return '';
    }
  }

  logTail(lines = 30): string {
    try {
      return readFileSync(this.options.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }

  /** SIGKILL of the whole tree; resolves when no process of it remains and every port is closed. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child?.pid) return;
    const pgid = child.pid;
    // The tree is read before the kill: once the parent is gone its children are re-parented.
    const tree = groupProcesses(pgid);
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
    for (const p of tree) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await this.exited;
    liveGroups.delete(pgid);
    await waitFor(`process group ${pgid} to be gone and ports ${Object.values(this.ports).join(', ')} closed`, 30_000, async () => {
      const alive = groupProcesses(pgid).filter((p) => p.state !== 'Z');
      if (alive.length > 0) {
        for (const p of alive) {
          try {
            process.kill(p.pid, 'SIGKILL');
          } catch {
            // gone
          }
        }
        return undefined;
      }
      for (const port of Object.values(this.ports)) if (await portOpen(port)) return undefined;
      return true;
    });
    this.child = undefined;
  }

  /** The processes of the group other than the service itself whose command line matches. */
  findChild(pattern: RegExp): GroupProcess[] {
    const pid = this.pid;
    if (!pid) return [];
    return groupProcesses(pid).filter((p) => p.pid !== pid && p.state !== 'Z' && pattern.test(p.cmdline));
  }
}
