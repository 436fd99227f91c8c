/**
 * Crash harness: runs `npm start` (lib/local/start.ts) as a user would, in its own process group,
 * drives a burst of chained anchors from N devices with a phone app's retry rule, SIGKILLs the
 * whole process tree at random moments (seeded), restarts it on the same DATA_DIR, and then checks
 * the promises of decisions.md "Faults and retries" through public interfaces and independent reads
 * (the API, the local chain's JSON-RPC):
 *   1. every 200 verifies and has a receipt;
 *   2. no limbo: every interrupted hash settles within 60 s of the restart that follows;
 *   3. at most one ledger transaction per image hash, and each receipt names one of them;
 *   4. no fork: one verified hash per (device, index), the one the device sent; chain intact;
 *   5. exact charging: `used` equals the anchors the account holds.
 *
 * Nothing here imports the service's anchoring code: the device side is node:crypto, the ledger
 * read is ethers over JSON-RPC, the transaction data is decoded here (image_hash || server_hash).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type AttributeValue, DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { JsonRpcProvider, Network } from 'ethers';
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
const ZERO32 = Buffer.alloc(32);
const ANCHOR_PATH = '/api/v2/evidence/anchor';
const REGISTER_PATH = '/api/v2/evidence/hash';
const BATCH_PATH = '/api/v2/evidence/anchor/batch';

/** A hash registration's body (32 random bytes), byte-identical on every retry. */
function registrationBody(): { index: number; imageHash: string; body: string } {
  const imageHash = randomBytes(32).toString('hex');
  return { index: -1, imageHash, body: JSON.stringify({ sha256_hash: imageHash }) };
}

// ─── seeded randomness ──────────────────────────────────────────────────────────────────────────

/** mulberry32: a small seeded PRNG, so that a failing kill schedule can be replayed (CRASH_SEED). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

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
      try {
        const res = await fetch(`${this.base}/api/v1/health`, { signal: AbortSignal.timeout(5000) });
        await res.arrayBuffer();
        return res.status === 200 ? true : undefined;
      } catch {
        return undefined;
      }
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

// ─── devices and the client ─────────────────────────────────────────────────────────────────────

/** A phone: an Ed25519 key and its hash chain, built with node:crypto only. */
export class DeviceChain {
  readonly privateKey: KeyObject;
  readonly publicKeyHex: string;
  private previous: Buffer | null = null;
  /** The request bodies, by chain index (byte-identical on every retry). */
  readonly bodies: string[] = [];
  readonly hashes: string[] = [];

  constructor(readonly id: number) {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    this.privateKey = privateKey;
    this.publicKeyHex = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('hex');
  }

  /** The body of the next photo's anchor request (image hash: 32 random bytes). */
  nextBody(): { index: number; imageHash: string; body: string } {
    const index = this.hashes.length;
    const image = randomBytes(32);
    const chainHash = createHash('sha256').update(this.previous ?? ZERO32).update(image).digest();
    const body = JSON.stringify({
      sha256_hash: image.toString('hex'),
      chain_index: index,
      chain_hash: chainHash.toString('hex'),
      previous_hash: this.previous ? this.previous.toString('hex') : null,
      signature_hex: sign(null, image, this.privateKey).toString('hex'),
      public_key_hex: this.publicKeyHex,
    });
    this.previous = chainHash;
    this.bodies.push(body);
    this.hashes.push(image.toString('hex'));
    return { index, imageHash: image.toString('hex'), body };
  }

  /** A different photo for an index already used (the fork probe); does not move the chain. */
  conflictingBody(index: number): { imageHash: string; body: string } {
    const previous = index === 0 ? null : chainHashAt(this, index - 1);
    const image = randomBytes(32);
    const chainHash = createHash('sha256').update(previous ?? ZERO32).update(image).digest();
    return {
      imageHash: image.toString('hex'),
      body: JSON.stringify({
        sha256_hash: image.toString('hex'),
        chain_index: index,
        chain_hash: chainHash.toString('hex'),
        previous_hash: previous ? previous.toString('hex') : null,
        signature_hex: sign(null, image, this.privateKey).toString('hex'),
        public_key_hex: this.publicKeyHex,
      }),
    };
  }
}

function chainHashAt(device: DeviceChain, index: number): Buffer {
  const body = JSON.parse(device.bodies[index] ?? 'null') as { chain_hash: string } | null;
  if (!body) throw new Error(`device ${device.id} has no index ${index}`);
  return Buffer.from(body.chain_hash, 'hex');
}

export interface HashRecord {
  device: number;
  index: number;
  imageHash: string;
  body: string;
  /** Where it is sent: an anchor (/api/v2/evidence/anchor) or a hash registration (/api/v2/evidence/hash, device -1). */
  path: string;
  attempts: number;
  firstSentAt: number | undefined;
  /** Kill numbers (1-based) during which an attempt was in flight and got no answer. */
  interruptions: number[];
  settledAt: number | undefined;
  how: '200' | '409-anchored' | undefined;
  /** Time from the ready of the restart after the last interruption to settlement. */
  settleAfterRestartMs: number | undefined;
  /** The last answer that did not settle it (for messages). */
  lastAnswer: string | undefined;
  /** A final answer the client cannot retry (e.g. 409 chain_index_conflict): the device stopped. */
  rejected: string | undefined;
  gaveUp: boolean;
}

interface Attempt {
  record: HashRecord;
  killedBy: number | undefined;
}

/** An armed batch request's photos and its exact body (operation 'batch'), sent again unchanged until they settle. */
interface PendingBatch {
  records: HashRecord[];
  body: string;
}

/** The faults the harness injects: the whole service, or one part of it. */
export type FaultKind = 'kill' | 'stop-database' | 'kill-ledger' | 'kill-database';
/** What a crash point did: killed the service at its call, or the request made fewer calls (not reached). */
export interface CrashPointOutcome extends CrashPoint {
  reached: boolean;
  /** The call the hook killed at (from the service log), e.g. "dynamodb UpdateCommand". */
  call?: string;
  /** Not reached: how many calls the request made (the path's length that time). */
  calls?: number;
  imageHash: string;
}

/** One crash point of the sweep: the k-th DynamoDB or ledger call of an anchor request, before it leaves or after its answer. */
export interface CrashPoint {
  killAt: number;
  when: 'before' | 'after';
}

/** A fault at a fixed time after the burst began (continuous runs). */
export interface ScheduledFault {
  kind: FaultKind;
  atMs: number;
  /** stop-database: how long the database stays frozen (SIGSTOP … SIGCONT). */
  durationMs?: number;
}

export interface FaultEvent {
  kind: FaultKind;
  /** 1-based number among the kills (for 'kill'). */
  n: number;
  at: number;
  inFlight: number;
  /** When the service answered health 200 again (kills), or when the fault ended. */
  readyAt: number | undefined;
  /**
   * How long after `readyAt` the last of the photos in flight when the fault began settled (their
   * phones retrying the identical request): recovery should be as short as the outage.
   */
  recoveryMs?: number | undefined;
  note: string;
}

export interface CrashRunOptions {
  devices: number;
  photos: number;
  kills: number;
  seed?: number;
  blockTimeMs?: number;
  /** The contract's limit for settling an interrupted anchor after a restart (60 s). */
  limboLimitMs?: number;
  /** After the final restart, how long past limboLimitMs the client keeps retrying before giving up. */
  graceMs?: number;
  /** Optional faults for the lead to wire (see stopDatabase / killLedger below). */
  stopDatabase?: { times: number; durationMs: number };
  killLedger?: { times: number };
  /**
   * Continuous mode (the SRE's experiment): faults at fixed times after the burst began, instead of
   * at fractions of it; the devices keep anchoring new photos (up to `photos` each) until the last
   * fault is over and `tailMs` has passed. A frozen database is probed with public reads meanwhile.
   */
  schedule?: ScheduledFault[];
  tailMs?: number;
  /**
   * The crash-point sweep: instead of a burst, one photo after the other (device 0), the first
   * attempt of each armed (`x-fault-arm: 1`) on a service started with the fault hook
   * (lib/local/fault-hook.ts) killing itself at call `killAt` of that request, `before` the call
   * leaves or `after` its answer. The next start (with the next point's hook) is the recovery: the
   * phone retries the interrupted photo there, unarmed, until it settles.
   */
  crashPoints?: CrashPoint[];
  /**
   * What the crash points interrupt: `anchor` (default: the armed anchor request), `register` (an
   * armed hash registration), or `feed` (the change feed's applying of the derived data: the photo
   * is anchored unarmed, and the feed's k-th call to DynamoDB kills the service, before it leaves
   * or after its answer, lib/local/fault-hook.ts with EVIDENCE_FAULT_ARM=feed), or `batch` (an
   * armed POST /api/v2/evidence/anchor/batch of `batchSize` consecutive photos of device 0; after
   * the restart the phone sends the identical batch again until every entry settles).
   */
  operation?: 'anchor' | 'register' | 'feed' | 'batch';
  /** operation 'batch': the photos of device 0 in each armed batch request (default 4). */
  batchSize?: number;
  /** Extra environment for the service (e.g. LEDGER_BATCH_WINDOW_MS). */
  env?: Record<string, string>;
  /** After settling, send a different photo at each interrupted (device, index): it must be refused.
   * 'all': at every settled index (a self-check of the harness on a run without kills). */
  forkProbe?: boolean | 'all';
  log?: (line: string) => void;
  keepDataDir?: boolean;
}

export interface CrashReport {
  seed: number;
  devices: number;
  photos: number;
  dataDir: string;
  logFile: string;
  faults: FaultEvent[];
  hashes: number;
  requestsSent: number;
  interrupted: number;
  settled200: number;
  settled409Anchored: number;
  unsettled: number;
  rejected: number;
  maxSettleAfterRestartMs: number | null;
  p50SettleAfterRestartMs: number | null;
  ledgerAnchorTransactions: number;
  /** Image hashes of this run on the ledger whose evidence does not verify (an unfinished anchor). */
  ledgerWithoutEvidence: string[];
  duplicates: number;
  /** Batch roots on the ledger more than once. */
  rootsTwice: number;
  /** Public reads made while the database was frozen. */
  readProbes: ReadProbe[];
  /** The sweep's points, with whether each was reached. */
  crashPoints: CrashPointOutcome[];
  forks: number;
  forkProbes: { sent: number; refused: number; accepted: number };
  charged: number | null;
  anchorsHeld: number;
  violations: {
    verify200: string[];
    limbo: string[];
    ledgerOnce: string[];
    noFork: string[];
    charging: string[];
    /** Public reads while a part was down: slower than 5 s, or not 503 problem+json (200 from what needs no database is fine). */
    reads: string[];
    /** GET /api/v1/stats totals once converged, against what the run holds. */
    stats: string[];
  };
  durationMs: number;
}

interface Problem {
  code?: string;
  detail?: string;
  title?: string;
}

/**
 * Runs one crash experiment end to end and returns what it found. It throws only when the
 * harness itself cannot work (the service does not start); broken promises are in `violations`.
 */
export async function runCrashExperiment(options: CrashRunOptions): Promise<CrashReport> {
  const t0 = Date.now();
  const seed = options.seed ?? (Number(process.env.CRASH_SEED) || (randomBytes(4).readUInt32LE(0) >>> 0));
  const log = options.log ?? (() => undefined);
  const random = prng(seed);
  const limboLimitMs = options.limboLimitMs ?? 60_000;
  const graceMs = options.graceMs ?? 3_000;
  log(`crash harness: seed ${seed} (CRASH_SEED=${seed} replays the kill schedule), ${options.devices} devices × ${options.photos} photos, ${options.kills} kills`);

  const work = await mkdtemp(path.join(os.tmpdir(), 'evidence-crash-'));
  const dataDir = path.join(work, 'data');
  const logFile = path.join(work, 'service.log');
  const service = await Service.create({ dataDir, logFile, blockTimeMs: options.blockTimeMs ?? 0, ...(options.env ? { env: options.env } : {}) });
  const killOnExit = () => {
    if (service.pid) {
      try {
        process.kill(-service.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  };
  process.once('exit', killOnExit);

  try {
    await service.start();
    log(`service ready on ${service.base} (rpc ${service.rpcUrl}, data ${dataDir})`);
    const account = await setUpAccount(service);
    const baselineStats = await readStats(service);

    // ── the burst ──
    const devices = Array.from({ length: options.devices }, (_, i) => new DeviceChain(i));
    const records: HashRecord[] = [];
    const inFlight = new Set<Attempt>();
    const faults: FaultEvent[] = [];
    const readProbes: ReadProbe[] = [];
    /** The photos in flight when each fault began (their settling after the fault ended is the recovery). */
    const inFlightAt = new Map<FaultEvent, HashRecord[]>();
    let requestsSent = 0;
    let lastReadyAt = Date.now();
    let faultsDone = false;
    const totalHashes = options.devices * options.photos;
    const readyAfterKill = (n: number): number | undefined => faults.find((f) => f.kind === 'kill' && f.n === n)?.readyAt;

    // The client gives up on a hash only once every fault is over, and only after the contract's
    // limit has passed since the last restart or since the hash was first sent, whichever is later
    // (a slow machine must not turn an ordinary late photo into a "limbo").
    const giveUpAt = (record: HashRecord) =>
      faultsDone ? Math.max(lastReadyAt, record.firstSentAt ?? Date.now()) + limboLimitMs + graceMs : Number.POSITIVE_INFINITY;

    /**
     * Retries the record until it settles. `whenDead` (the crash-point sweep of the change feed):
     * called when an attempt failed because the service exited, which in that mode only the armed
     * feed does (it may apply this very anchor's write before the answer leaves); it restarts the
     * service, as nothing else would.
     */
    const sendUntilSettled = async (record: HashRecord, whenDead?: () => Promise<void>): Promise<void> => {
      let backoff = 250;
      const pause = async () => {
        await sleep(backoff * (0.75 + random() * 0.5));
        backoff = Math.min(backoff * 2, 2000);
      };
      for (;;) {
        if (Date.now() > giveUpAt(record)) {
          record.gaveUp = true;
          return;
        }
        const attempt: Attempt = { record, killedBy: undefined };
        record.attempts += 1;
        record.firstSentAt ??= Date.now();
        requestsSent += 1;
        inFlight.add(attempt);
        let status: number;
        let text: string;
        try {
          const res = await fetch(`${service.base}${record.path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey },
            body: record.body,
            signal: AbortSignal.timeout(30_000),
          });
          status = res.status;
          text = await res.text();
        } catch (error) {
          if (attempt.killedBy !== undefined) record.interruptions.push(attempt.killedBy);
          record.lastAnswer = `network error: ${(error as Error).message}`;
          if (whenDead && (await waitFor('the service to exit', 2_000, () => (service.exitedBy !== undefined ? true : undefined), 20).catch(() => false))) {
            await whenDead();
            continue;
          }
          await pause();
          continue;
        } finally {
          inFlight.delete(attempt);
        }
        if (status === 200) {
          settle(record, '200');
          return;
        }
        const problem = parseProblem(text);
        record.lastAnswer = `${status} ${problem.code ?? ''}: ${problem.detail ?? text.slice(0, 200)}`;
        if (status === 409 && problem.code === 'hash_already_anchored') {
          if (/being anchored/i.test(problem.detail ?? '')) {
            await pause();
            continue;
          }
          // "is anchored": settled when the public verify agrees.
          const verified = await verifyHash(service, record.imageHash).catch(() => undefined);
          if (verified?.verified) {
            settle(record, '409-anchored');
            return;
          }
          record.lastAnswer += ` (verify: ${verified ? `${verified.status} verified:${String(verified.verified)}` : 'unreachable'})`;
          await pause();
          continue;
        }
        if (status >= 500 || status === 429) {
          await pause();
          continue;
        }
        record.rejected = record.lastAnswer;
        return;
      }
    };

    /**
     * The batch's phone (operation 'batch'): sends the identical batch request until every entry
     * settled (200, or 409 for a hash the public verify shows anchored) or was refused for good.
     */
    const sendBatchUntilSettled = async (batch: PendingBatch): Promise<void> => {
      let backoff = 250;
      for (;;) {
        const open = batch.records.filter((r) => !r.settledAt && !r.rejected);
        if (open.length === 0) return;
        if (open.some((r) => Date.now() > giveUpAt(r))) {
          for (const r of open) r.gaveUp = true;
          return;
        }
        for (const r of open) r.attempts += 1;
        requestsSent += 1;
        let answer: { status: number; text: string } | undefined;
        try {
          const res = await fetch(`${service.base}${BATCH_PATH}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey },
            body: batch.body,
            signal: AbortSignal.timeout(60_000),
          });
          answer = { status: res.status, text: await res.text() };
        } catch (error) {
          for (const r of open) r.lastAnswer = `network error: ${(error as Error).message}`;
        }
        if (answer?.status === 200) {
          const results = (JSON.parse(answer.text) as { results: { status: number; problem?: Problem }[] }).results;
          for (const [i, record] of batch.records.entries()) {
            const result = results[i];
            if (record.settledAt || record.rejected || !result) continue;
            if (result.status === 200) {
              settle(record, '200');
              continue;
            }
            record.lastAnswer = `${result.status} ${result.problem?.code ?? ''}: ${result.problem?.detail ?? ''}`;
            if (result.status === 409 && result.problem?.code === 'hash_already_anchored' && !/being anchored/i.test(result.problem.detail ?? '')) {
              const verified = await verifyHash(service, record.imageHash).catch(() => undefined);
              if (verified?.verified) settle(record, '409-anchored');
            } else if (result.status < 500 && result.status !== 429 && result.problem?.code !== 'previous_entry_failed') {
              record.rejected = record.lastAnswer;
            }
          }
        } else if (answer) {
          for (const r of open) r.lastAnswer = `${answer.status} ${answer.text.slice(0, 200)}`;
          if (answer.status < 500 && answer.status !== 429) {
            for (const r of open) r.rejected = r.lastAnswer;
            return;
          }
        }
        if (batch.records.every((r) => r.settledAt || r.rejected)) return;
        await sleep(backoff * (0.75 + random() * 0.5));
        backoff = Math.min(backoff * 2, 2000);
      }
    };

    const settle = (record: HashRecord, how: '200' | '409-anchored') => {
      record.settledAt = Date.now();
      record.how = how;
    };

    const burstStart = Date.now();
    const schedule = options.schedule ? [...options.schedule].sort((a, b) => a.atMs - b.atMs) : undefined;
    // Continuous mode: new photos until the last fault is over and the tail has passed.
    let stopAt = Number.POSITIVE_INFINITY;
    const runDevice = async (device: DeviceChain) => {
      for (let i = 0; i < options.photos && Date.now() < stopAt; i++) {
        const next = device.nextBody();
        const record: HashRecord = {
          device: device.id,
          index: next.index,
          imageHash: next.imageHash,
          body: next.body,
          path: ANCHOR_PATH,
          attempts: 0,
          firstSentAt: undefined,
          interruptions: [],
          settledAt: undefined,
          how: undefined,
          settleAfterRestartMs: undefined,
          lastAnswer: undefined,
          rejected: undefined,
          gaveUp: false,
        };
        records.push(record);
        await sendUntilSettled(record);
        if (!record.settledAt) return; // a phone cannot link the next photo to an unsettled one
      }
    };

    // ── the fault schedule: kills at random fractions of the burst (or at fixed times), plus the optional faults ──
    type Planned = { kind: FaultEvent['kind']; threshold: number; atMs?: number; durationMs?: number };
    const planned: Planned[] = [];
    if (schedule) {
      for (const f of schedule) planned.push({ kind: f.kind, threshold: 0, atMs: f.atMs, ...(f.durationMs !== undefined ? { durationMs: f.durationMs } : {}) });
    } else {
      for (let k = 0; k < options.kills; k++) planned.push({ kind: 'kill', threshold: 0.1 + random() * 0.75 });
      for (let k = 0; k < (options.stopDatabase?.times ?? 0); k++) planned.push({ kind: 'stop-database', threshold: 0.1 + random() * 0.75 });
      for (let k = 0; k < (options.killLedger?.times ?? 0); k++) planned.push({ kind: 'kill-ledger', threshold: 0.1 + random() * 0.6 });
      planned.sort((a, b) => a.threshold - b.threshold);
    }
    const firstSent = () => records.filter((r) => r.firstSentAt !== undefined).length;
    const devicesDone = { value: false };
    const anchoredSoFar = () => records.filter((r) => r.how === '200').map((r) => r.imageHash);

    /** Waits until health answers 200 again (a supervised part restarted, a frozen one thawed). */
    const healthyAgain = async (partWasKilled = false): Promise<number> => {
      // A killed part: first its restart is noticed (health says down), so that "again" is not the answer from before.
      if (partWasKilled) {
        await waitFor('health to notice the fault', 3_000, async () => {
          try {
            const res = await fetch(`${service.base}/api/v1/health`, { signal: AbortSignal.timeout(5000) });
            await res.arrayBuffer();
            return res.status !== 200 ? true : undefined;
          } catch {
            return true;
          }
        }, 20).catch(() => undefined);
      }
      await waitFor('health 200 after the fault', 5 * 60_000, async () => {
        try {
          const res = await fetch(`${service.base}/api/v1/health`, { signal: AbortSignal.timeout(5000) });
          await res.arrayBuffer();
          return res.status === 200 ? true : undefined;
        } catch {
          return undefined;
        }
      }, 100);
      return Date.now();
    };

    /** A request armed for the fault hook (`x-fault-arm: 1`): its k-th call kills the service. */
    const armedPost = (requestPath: string, body: string) =>
      fetch(`${service.base}${requestPath}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey, 'x-fault-arm': '1' },
        body,
        signal: AbortSignal.timeout(60_000),
      });

    /** The sweep's driver (see CrashRunOptions.crashPoints). */
    const runCrashPoints = async (points: CrashPoint[], device: DeviceChain) => {
      // Each photo's limit runs from the start that recovers it (giveUpAt).
      faultsDone = true;
      let pending: HashRecord | undefined;
      let pendingBatch: PendingBatch | undefined;
      for (const [i, point] of points.entries()) {
        // The start with this point's hook is the recovery of the previous point's photo.
        await service.kill();
        const startedLog = readLogLength(options, service);
        try {
          await service.start({ EVIDENCE_FAULT_KILL_AT: String(point.killAt), EVIDENCE_FAULT_KILL_WHEN: point.when, ...(options.operation === 'feed' ? { EVIDENCE_FAULT_ARM: 'feed' } : {}) });
        } catch (error) {
          // The change feed's first batch after a start is the one the previous kill left untrimmed:
          // the point may kill its applying again while the service starts. A crash point like any
          // other (the next start recovers it); any other failure to start is the harness's.
          const call = /fault-hook: SIGKILL at call \d+ \(([^)]*)\)/.exec(service.logSince(startedLog))?.[1];
          if (options.operation !== 'feed' || !call) throw error;
          pointOutcomes.push({ ...point, reached: true, call: `${call}, applying the previous kill's changes during the start`, imageHash: '' });
          const n = faults.filter((f) => f.kind === 'kill').length + 1;
          faults.push({ kind: 'kill', n, at: Date.now(), inFlight: 0, readyAt: undefined, note: `crash point ${i + 1}/${points.length}: call ${point.killAt} ${point.when} (${call}) during the start` });
          continue;
        }
        const ready = Date.now();
        const previous = faults.at(-1);
        if (previous && previous.readyAt === undefined) previous.readyAt = ready;
        lastReadyAt = ready;
        if (pending) await sendUntilSettled(pending);
        if (pendingBatch) await sendBatchUntilSettled(pendingBatch);
        pendingBatch = undefined;
        const operation = options.operation ?? 'anchor';
        if (operation === 'batch') {
          const entries = Array.from({ length: options.batchSize ?? 4 }, () => device.nextBody());
          const batch: PendingBatch = {
            body: JSON.stringify({ anchors: entries.map((e) => JSON.parse(e.body) as unknown) }),
            records: entries.map((e) => ({
              device: device.id, index: e.index, imageHash: e.imageHash, body: e.body, path: ANCHOR_PATH, attempts: 1, firstSentAt: Date.now(),
              interruptions: [], settledAt: undefined, how: undefined, settleAfterRestartMs: undefined, lastAnswer: undefined, rejected: undefined, gaveUp: false,
            })),
          };
          records.push(...batch.records);
          requestsSent += 1;
          const logBefore = readLogLength(options, service);
          const outcome: CrashPointOutcome = { ...point, reached: false, imageHash: entries[0]?.imageHash ?? '' };
          pointOutcomes.push(outcome);
          try {
            const res = await armedPost(BATCH_PATH, batch.body);
            const text = await res.text();
            outcome.calls = Number(res.headers.get('x-fault-calls') ?? 'NaN');
            if (res.status === 200) {
              const results = (JSON.parse(text) as { results: { status: number }[] }).results;
              for (const [k, record] of batch.records.entries()) if (results[k]?.status === 200) settle(record, '200');
            }
          } catch (error) {
            outcome.reached = true;
            outcome.call = /fault-hook: SIGKILL at call \d+ \(([^)]*)\)/.exec(service.logSince(logBefore))?.[1];
            const n = faults.filter((f) => f.kind === 'kill').length + 1;
            faults.push({ kind: 'kill', n, at: Date.now(), inFlight: batch.records.length, readyAt: undefined, note: `crash point ${i + 1}/${points.length}: call ${point.killAt} ${point.when}${outcome.call ? ` (${outcome.call})` : ''} in a batch of ${batch.records.length}` });
            for (const r of batch.records) {
              r.interruptions.push(n);
              r.lastAnswer = `killed at call ${point.killAt} ${point.when}: ${(error as Error).message}`;
            }
          }
          pending = undefined;
          pendingBatch = batch.records.every((r) => r.settledAt) ? undefined : batch;
          continue;
        }
        const next = operation === 'register' ? registrationBody() : device.nextBody();
        const record: HashRecord = {
          device: operation === 'register' ? -1 : device.id, index: next.index, imageHash: next.imageHash, body: next.body,
          path: operation === 'register' ? REGISTER_PATH : ANCHOR_PATH, attempts: 1, firstSentAt: Date.now(),
          interruptions: [], settledAt: undefined, how: undefined, settleAfterRestartMs: undefined, lastAnswer: undefined, rejected: undefined, gaveUp: false,
        };
        records.push(record);
        requestsSent += 1;
        const logBefore = readLogLength(options, service);
        const outcome: CrashPointOutcome = { ...point, reached: false, imageHash: next.imageHash };
        pointOutcomes.push(outcome);
        const killed = (note: string) => {
          outcome.reached = true;
          outcome.call = /fault-hook: SIGKILL at call \d+ \(([^)]*)\)/.exec(service.logSince(logBefore))?.[1];
          const n = faults.filter((f) => f.kind === 'kill').length + 1;
          faults.push({ kind: 'kill', n, at: Date.now(), inFlight: operation === 'feed' ? 0 : 1, readyAt: undefined, note: `crash point ${i + 1}/${points.length}: call ${point.killAt} ${point.when}${outcome.call ? ` (${outcome.call})` : ''}${note}` });
          return n;
        };
        if (operation === 'feed') {
          // The photo is anchored unarmed; the feed applies its changes within a second or so,
          // armed: the k-th of its calls since this start kills the service, or none does. The feed
          // may apply the anchor's own write, and be killed, before the anchor's answer leaves: the
          // point is reached, and a start without the hook recovers both.
          let diedDuringSend = false;
          await sendUntilSettled(record, async () => {
            if (!diedDuringSend) record.interruptions.push(killed(': the change feed, before the anchor answered'));
            diedDuringSend = true;
            await service.kill();
            await service.start();
            const last = faults.at(-1);
            if (last && last.readyAt === undefined) last.readyAt = Date.now();
            lastReadyAt = Date.now();
          });
          if (diedDuringSend) {
            pending = undefined;
            continue;
          }
          const feedCalls = () => [...service.logSince(logBefore).matchAll(/fault-hook: change feed made (\d+) calls/g)].reduce((n, m) => n + Number(m[1]), 0);
          await waitFor('the change feed to apply the photo, or the hook to kill the service', 20_000, () =>
            service.exitedBy !== undefined || /fault-hook: change feed made [1-9]/.test(service.logSince(logBefore)) ? true : undefined,
          ).catch(() => undefined);
          if (service.exitedBy !== undefined) killed(': the change feed');
          else outcome.calls = feedCalls();
          pending = undefined;
          continue;
        }
        try {
          const res = await armedPost(record.path, record.body);
          const text = await res.text();
          outcome.calls = Number(res.headers.get('x-fault-calls') ?? 'NaN');
          // Not killed: this request made fewer calls than the point (a path shorter this time).
          if (res.status === 200) {
            record.settledAt = Date.now();
            record.how = '200';
          } else record.lastAnswer = `${res.status} ${text.slice(0, 200)}`;
          pending = record.settledAt ? undefined : record;
        } catch (error) {
          record.interruptions.push(killed(''));
          record.lastAnswer = `killed at call ${point.killAt} ${point.when}: ${(error as Error).message}`;
          pending = record;
        }
      }
      // The last point's recovery: a start without the hook.
      await service.kill();
      await service.start();
      lastReadyAt = Date.now();
      const last = faults.at(-1);
      if (last && last.readyAt === undefined) last.readyAt = lastReadyAt;
      if (pending) await sendUntilSettled(pending);
      if (pendingBatch) await sendBatchUntilSettled(pendingBatch);
    };

    const chaos = async () => {
      let killNumber = 0;
      for (const fault of planned) {
        if (fault.atMs !== undefined) {
          const wait = burstStart + fault.atMs - Date.now();
          if (wait > 0) await sleep(wait);
          if (devicesDone.value) break;
        } else {
          const target = Math.ceil(fault.threshold * totalHashes);
          // The moment: the burst has reached the planned fraction, or (when every device is stuck)
          // 4 s have passed since the last restart. Then a random 0–300 ms into the requests' work.
          await waitFor('the burst to reach the next fault', 10 * 60_000, () =>
            devicesDone.value || firstSent() >= target || Date.now() - lastReadyAt > 4_000 ? true : undefined,
          );
          if (devicesDone.value) break;
          await sleep(random() * 300);
        }
        await waitFor('a request in flight', 5_000, () => (inFlight.size > 0 ? true : undefined), 5).catch(() => undefined);
        const event: FaultEvent = { kind: fault.kind, n: 0, at: Date.now(), inFlight: inFlight.size, readyAt: undefined, note: '' };
        inFlightAt.set(event, [...inFlight].map((a) => a.record));
        faults.push(event);
        if (fault.kind === 'kill') {
          killNumber += 1;
          event.n = killNumber;
          for (const attempt of inFlight) attempt.killedBy = killNumber;
          const pids = service.pid ? groupProcesses(service.pid).map((p) => p.pid) : [];
          await service.kill();
          const downAt = Date.now();
          await service.start();
          event.readyAt = Date.now();
          event.note = `killed ${pids.length} processes with ${event.inFlight} requests in flight; down ${downAt - event.at} ms, restarted in ${event.readyAt - downAt} ms`;
        } else if (fault.kind === 'stop-database') {
          const durationMs = fault.durationMs ?? options.stopDatabase?.durationMs ?? 6000;
          const probing = probeReadsWhile(service, anchoredSoFar(), durationMs);
          event.note = await stopDatabase(service, durationMs);
          const probe = await probing;
          readProbes.push(...probe);
          event.readyAt = await healthyAgain();
          const slow = probe.filter((p) => p.ms > READ_DEADLINE_MS || (p.status !== 503 && p.status !== 200));
          event.note += `; ${probe.length} public reads while frozen: ${summariseProbes(probe)}${slow.length ? ` (${slow.length} too slow or not 503)` : ''}; healthy ${event.readyAt - event.at - durationMs} ms after SIGCONT`;
        } else if (fault.kind === 'kill-database') {
          event.note = killDatabase(service);
          event.readyAt = await healthyAgain(true);
          event.note += `; healthy again after ${event.readyAt - event.at} ms`;
        } else {
          event.note = killLedger(service);
          event.readyAt = await healthyAgain(true);
          event.note += `; healthy again after ${event.readyAt - event.at} ms`;
        }
        lastReadyAt = event.readyAt;
        log(`fault ${faults.length}/${planned.length}: ${fault.kind} at ${event.at - t0} ms — ${event.note}`);
      }
      if (schedule) stopAt = Date.now() + (options.tailMs ?? 5_000);
      faultsDone = true;
    };

    const pointOutcomes: CrashPointOutcome[] = [];
    if (options.crashPoints) {
      await runCrashPoints(options.crashPoints, devices[0] as DeviceChain);
    } else {
      const chaosDone = chaos();
      await Promise.all(devices.map((d) => runDevice(d)));
      devicesDone.value = true;
      await chaosDone;
    }
    faultsDone = true;
    log(`burst done at ${Date.now() - t0} ms: ${records.length} hashes, ${requestsSent} requests`);

    // ── the fork probe: a different photo at each interrupted (device, index) must be refused ──
    const probes: { device: number; index: number; imageHash: string; status: number; answer: string }[] = [];
    if (options.forkProbe ?? true) {
      // Only where the interrupted photo settled: an unsettled one is already a limbo violation,
      // and its index may rightly be free (undone) — a probe there would prove nothing.
      const targets = records.filter((r) => r.path === ANCHOR_PATH && (options.forkProbe === 'all' || r.interruptions.length > 0) && r.settledAt !== undefined);
      for (const r of targets) {
        const device = devices[r.device] as DeviceChain;
        const probe = device.conflictingBody(r.index);
        const res = await fetchRetry(`${service.base}/api/v2/evidence/anchor`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey },
          body: probe.body,
        });
        probes.push({ device: r.device, index: r.index, imageHash: probe.imageHash, status: res.status, answer: res.text.slice(0, 200) });
      }
    }

    // ── the reads ──
    // The contract's limit after the last restart, and at least a few seconds from now.
    const readDeadline = Math.max(lastReadyAt + limboLimitMs, Date.now() + 5_000);
    const allHashes = [...records.map((r) => r.imageHash), ...probes.map((p) => p.imageHash)];
    const verified = new Map<string, VerifyResult>();
    const receipts = new Map<string, Receipt>();
    const readHash = async (h: string, mustVerify: boolean) => {
      for (;;) {
        const v = await verifyHash(service, h).catch(() => undefined);
        if (v) verified.set(h, v);
        if (v?.verified) break;
        if (!mustVerify || Date.now() > readDeadline) break;
        await sleep(250);
      }
      if (verified.get(h)?.verified) {
        const res = await fetchRetry(`${service.base}/api/v2/evidence/receipt/${h}`);
        if (res.status === 200) receipts.set(h, JSON.parse(res.text) as Receipt);
      }
    };
    const mustVerify = new Set(records.filter((r) => r.path === ANCHOR_PATH && r.settledAt !== undefined).map((r) => r.imageHash));
    await pool(allHashes, 8, (h) => readHash(h, mustVerify.has(h)));

    const violations: CrashReport['violations'] = { verify200: [], limbo: [], ledgerOnce: [], noFork: [], charging: [], reads: [], stats: [] };
    for (const p of readProbes) {
      if (p.status === 0) violations.reads.push(`GET ${p.path} did not answer within ${READ_DEADLINE_MS * 2} ms while the database was frozen`);
      else if (p.ms > READ_DEADLINE_MS) violations.reads.push(`GET ${p.path} answered ${p.status} after ${p.ms} ms while the database was frozen (limit ${READ_DEADLINE_MS} ms)`);
      else if (p.status === 503 && !p.contentType.startsWith('application/problem+json') && !p.contentType.startsWith('text/html')) violations.reads.push(`GET ${p.path} answered 503 as ${p.contentType}, not problem+json`);
      else if (p.status !== 503 && p.status !== 200) violations.reads.push(`GET ${p.path} answered ${p.status} while the database was frozen (503 expected)`);
    }

    // 1. every 200 verifies and has a receipt; every registration answered 200 is registered
    const registrations = records.filter((r) => r.path === REGISTER_PATH);
    for (const r of registrations.filter((x) => x.how === '200')) {
      const v = verified.get(r.imageHash);
      if (v?.status !== 200 || !v.registered_at) violations.verify200.push(`${r.imageHash} (a registration) got 200 but verify says ${v ? `${v.status} registered_at ${String(v.registered_at)}` : 'nothing'}`);
    }
    for (const r of records.filter((x) => x.how === '200' && x.path === ANCHOR_PATH)) {
      const v = verified.get(r.imageHash);
      if (!v?.verified) violations.verify200.push(`${r.imageHash} (device ${r.device} index ${r.index}) got 200 but verify says ${v ? `${v.status} verified:${String(v.verified)}` : 'nothing'}`);
      else if (!receipts.has(r.imageHash)) violations.verify200.push(`${r.imageHash} (device ${r.device} index ${r.index}) verifies but has no receipt`);
    }

    // 2. no limbo
    const killEvents = faults.filter((f) => f.kind === 'kill');
    for (const r of records) {
      const where = `${r.imageHash} (device ${r.device} index ${r.index})`;
      if (r.rejected) {
        violations.limbo.push(`${where} was refused on retry: ${r.rejected}`);
        continue;
      }
      if (r.settledAt === undefined) {
        violations.limbo.push(
          `${where} never settled${r.interruptions.length ? ` after kill ${r.interruptions.join(', ')}` : ''}: last answer ${r.lastAnswer ?? 'none'} (${r.attempts} attempts)`,
        );
        continue;
      }
      // Each interruption must have settled, or been overtaken by the next kill, within the limit.
      for (const k of r.interruptions) {
        const ready = readyAfterKill(k);
        if (ready === undefined) continue;
        const nextKill = killEvents.find((f) => f.n > k && f.at >= ready);
        const end = nextKill && nextKill.at < r.settledAt ? nextKill.at : r.settledAt;
        if (end - ready > limboLimitMs) {
          violations.limbo.push(`${where} interrupted by kill ${k} settled ${end - ready} ms after the restart (limit ${limboLimitMs} ms)`);
        }
      }
    }

    // 3. at most one ledger transaction per image hash (directly or in a batch); receipts name one of them
    const seals = await readSeals(`http://127.0.0.1:${service.ports.dynamo}`).catch((error: unknown) => {
      violations.ledgerOnce.push(`the sealed batches could not be read: ${(error as Error).message}`);
      return new Map<string, string[]>();
    });
    const ledger = await readLedger(service.rpcUrl, seals).catch((error: unknown): LedgerRead => {
      violations.ledgerOnce.push(`the chain could not be read over JSON-RPC at ${service.rpcUrl}: ${(error as Error).message}`);
      return { txs: new Map(), batchTxs: new Map(), byImageHash: new Map(), byRoot: new Map(), anchorTxCount: 0 };
    });
    const ourHashes = new Set(allHashes);
    let duplicates = 0;
    let rootsTwice = 0;
    for (const [root, txs] of ledger.byRoot) {
      if (txs.length > 1) {
        rootsTwice += 1;
        violations.ledgerOnce.push(`Merkle root ${root} is on the ledger ${txs.length} times: ${txs.join(', ')}`);
      }
      if (!seals.has(root)) violations.ledgerOnce.push(`Merkle root ${root} (${txs.join(', ')}) is on the ledger, but no sealed batch has it`);
    }
    for (const [h, txs] of ledger.byImageHash) {
      if (txs.length > 1) {
        duplicates += 1;
        violations.ledgerOnce.push(`${h}${ourHashes.has(h) ? '' : ' (not sent by this run)'} is on the ledger ${txs.length} times: ${txs.join(', ')}`);
      }
    }
    for (const [h, receipt] of ledger.anchorTxCount === 0 ? [] : receipts) {
      const tx = receipt.ledger?.tx_hash?.toLowerCase();
      const root = receipt.ledger?.merkle?.root;
      const direct = tx ? ledger.txs.get(tx) : undefined;
      const batchRoot = tx ? ledger.batchTxs.get(tx) : undefined;
      if (!direct && !batchRoot) violations.ledgerOnce.push(`${h}: its receipt names ${tx ?? 'no transaction'}, which is not on the chain`);
      else if (root !== undefined ? batchRoot !== root : direct !== h) {
        violations.ledgerOnce.push(`${h}: its receipt's transaction ${tx} carries ${direct ?? `root ${batchRoot}`}, not ${root !== undefined ? `root ${root}` : h}`);
      }
    }
    const orphanTxs = [...ledger.byImageHash.keys()].filter((h) => ourHashes.has(h) && !verified.get(h)?.verified);

    // 4. no fork
    let forks = 0;
    for (const device of devices) {
      const sent = records.filter((r) => r.device === device.id);
      const byIndex = new Map<number, string[]>();
      for (const h of [...sent.map((r) => r.imageHash), ...probes.filter((p) => p.device === device.id).map((p) => p.imageHash)]) {
        const receipt = receipts.get(h);
        if (!receipt) continue;
        const idx = receipt.device?.chain_index;
        if (receipt.device?.public_key_hex !== device.publicKeyHex || typeof idx !== 'number') {
          violations.noFork.push(`${h}: receipt names device ${receipt.device?.public_key_hex ?? '?'} index ${String(idx)}, not device ${device.id}`);
          continue;
        }
        byIndex.set(idx, [...(byIndex.get(idx) ?? []), h]);
      }
      for (const [idx, hs] of byIndex) {
        const expected = device.hashes[idx];
        if (hs.length > 1) {
          forks += 1;
          violations.noFork.push(`device ${device.id} index ${idx} has ${hs.length} verified hashes: ${hs.join(', ')} (sent: ${expected ?? 'none'})`);
        } else if (hs[0] !== expected) {
          forks += 1;
          violations.noFork.push(`device ${device.id} index ${idx} holds ${hs[0] ?? '?'}, but the device sent ${expected ?? 'nothing'} there`);
        }
      }
      for (const r of sent.filter((x) => x.settledAt !== undefined)) {
        if (!byIndex.get(r.index)?.includes(r.imageHash)) violations.noFork.push(`device ${device.id} index ${r.index}: settled ${r.imageHash} has no verified receipt at that index`);
      }
      const chain = await readChain(service, device.publicKeyHex).catch((error: unknown) => {
        violations.noFork.push(`device ${device.id}: v1 chain/all could not be read: ${(error as Error).message}`);
        return null;
      });
      if (chain === null) continue;
      if (!chain) {
        if (sent.some((r) => r.settledAt !== undefined)) violations.noFork.push(`device ${device.id}: v1 chain/all knows no chain`);
        continue;
      }
      if (chain.verdict !== 'complete') violations.noFork.push(`device ${device.id}: v1 chain integrity says ${chain.verdict} (${chain.detail})`);
      for (const entry of chain.entries) {
        if (entry.image_hash !== device.hashes[entry.chain_index]) {
          violations.noFork.push(`device ${device.id} index ${entry.chain_index}: chain/all lists ${entry.image_hash}, the device sent ${device.hashes[entry.chain_index] ?? 'nothing'}`);
        }
      }
    }
    for (const p of probes) {
      if (p.status === 200) violations.noFork.push(`fork probe: a second photo ${p.imageHash} at device ${p.device} index ${p.index} was accepted (200)`);
    }

    // 5. exact charging (the reconciler may refund late: wait up to the limit after the last restart)
    const registered = new Set(registrations.map((r) => r.imageHash));
    const held = () => allHashes.filter((h) => verified.get(h)?.verified).length + [...registered].filter((h) => verified.get(h)?.registered_at).length;
    let charged: number | null = null;
    let lastUsed: number | null = null;
    await waitFor('usage to equal the anchors held', Math.max(5_000, readDeadline - Date.now()), async () => {
      charged = await readUsed(service, account).catch(() => null);
      if (charged !== null && charged === held()) return true;
      // Anchors that were stuck may still complete meanwhile: re-read those.
      if (charged !== lastUsed) {
        lastUsed = charged;
        await pool(
          allHashes.filter((h) => !verified.get(h)?.verified),
          8,
          (h) => readHash(h, false),
        );
      }
      return undefined;
    }, 500).catch(() => undefined);
    if (charged === null) violations.charging.push('GET /api/v2/account/usage could not be read');
    else if (charged !== held()) {
      violations.charging.push(`usage says used=${charged}, the account holds ${held()} verified anchors and registrations (${charged - held() > 0 ? 'overcharged' : 'undercharged'} by ${Math.abs(charged - held())})`);
    }

    // 6. exact statistics, derived from the evidence table's changes across every kill: from the
    // figures of the fresh service (the key's registration transaction) plus what this run holds.
    const anchorsHeld = allHashes.filter((h) => verified.get(h)?.verified);
    const expectedStats = {
      registered: baselineStats.registered + [...registered].filter((h) => verified.get(h)?.registered_at).length,
      anchored: baselineStats.anchored + anchorsHeld.length,
      devices: baselineStats.devices + anchorsHeld.filter((h) => receipts.get(h)?.device?.chain_index === 0).length,
      transactions: baselineStats.transactions + new Set(anchorsHeld.map((h) => receipts.get(h)?.ledger?.tx_hash?.toLowerCase())).size,
    };
    let statsNow: StatTotals | undefined;
    await waitFor('the statistics to converge', 20_000, async () => {
      statsNow = await readStats(service).catch(() => undefined);
      return statsNow && JSON.stringify(statsNow) === JSON.stringify(expectedStats) ? true : undefined;
    }, 250).catch(() => undefined);
    if (JSON.stringify(statsNow) !== JSON.stringify(expectedStats)) {
      violations.stats.push(`GET /api/v1/stats totals ${JSON.stringify(statsNow)} after 20 s, expected ${JSON.stringify(expectedStats)} (the fresh service's ${JSON.stringify(baselineStats)} plus what the run holds)`);
    }

    for (const [event, inflight] of inFlightAt) {
      const settled = inflight.map((r) => r.settledAt).filter((x): x is number => x !== undefined);
      if (event.readyAt !== undefined && settled.length === inflight.length && settled.length > 0) event.recoveryMs = Math.max(0, Math.max(...settled) - event.readyAt);
    }
    const interruptedRecords = records.filter((r) => r.interruptions.length > 0);
    // Measured now: a restarted service may answer before the harness's health poll sees it ready.
    for (const r of interruptedRecords) {
      const ready = readyAfterKill(r.interruptions.at(-1) as number);
      if (r.settledAt !== undefined && ready !== undefined) r.settleAfterRestartMs = Math.max(0, r.settledAt - ready);
    }
    const settleTimes = interruptedRecords.map((r) => r.settleAfterRestartMs).filter((x): x is number => x !== undefined).sort((a, b) => a - b);
    if (orphanTxs.length) log(`note: ${orphanTxs.length} hashes are on the ledger without verified evidence: ${orphanTxs.slice(0, 5).join(', ')}${orphanTxs.length > 5 ? ', …' : ''}`);
    const report: CrashReport = {
      seed,
      devices: options.devices,
      photos: options.photos,
      dataDir,
      logFile,
      faults,
      hashes: records.length,
      requestsSent,
      interrupted: interruptedRecords.length,
      settled200: records.filter((r) => r.how === '200').length,
      settled409Anchored: records.filter((r) => r.how === '409-anchored').length,
      unsettled: records.filter((r) => r.settledAt === undefined).length,
      rejected: records.filter((r) => r.rejected).length,
      maxSettleAfterRestartMs: settleTimes.at(-1) ?? null,
      p50SettleAfterRestartMs: settleTimes.length ? (settleTimes[Math.floor((settleTimes.length - 1) / 2)] as number) : null,
      ledgerAnchorTransactions: ledger.anchorTxCount,
      ledgerWithoutEvidence: orphanTxs,
      duplicates,
      rootsTwice,
      readProbes,
      crashPoints: pointOutcomes,
      forks,
      forkProbes: { sent: probes.length, refused: probes.filter((p) => p.status >= 400 && p.status < 500).length, accepted: probes.filter((p) => p.status === 200).length },
      charged,
      anchorsHeld: held(),
      violations,
      durationMs: Date.now() - t0,
    };
    return report;
  } finally {
    process.off('exit', killOnExit);
    await service.kill().catch(() => undefined);
    if (!options.keepDataDir && !process.env.CRASH_KEEP) await rm(work, { recursive: true, force: true }).catch(() => undefined);
    else log(`kept ${work}`);
  }
}

// ─── optional faults (for the lead to wire once the database runs as a child process) ──────────

/** SIGSTOP the database child for `durationMs`, then SIGCONT it. */
export async function stopDatabase(service: Service, durationMs: number): Promise<string> {
  const targets = service.findChild(/dynalite|dynamo/i);
  if (targets.length === 0) return 'skipped: no child process of the service mentions dynalite (the database runs inside the service process)';
  for (const p of targets) process.kill(p.pid, 'SIGSTOP');
  await sleep(durationMs);
  for (const p of targets) {
    try {
      process.kill(p.pid, 'SIGCONT');
    } catch {
      // it died meanwhile
    }
  }
  return `stopped ${targets.map((p) => p.pid).join(', ')} for ${durationMs} ms`;
}

/** How many bytes the service log holds now. */
function readLogLength(_options: CrashRunOptions, service: Service): number {
  try {
    return readFileSync(service.options.logFile).length;
  } catch {
    return 0;
  }
}

/** SIGKILL the database child (dynalite); the service's supervisor restarts it on the same data. */
export function killDatabase(service: Service): string {
  const targets = service.findChild(/dynalite|dynamo-child/i);
  if (targets.length === 0) return 'skipped: no child process of the service mentions dynalite';
  for (const p of targets) process.kill(p.pid, 'SIGKILL');
  return `killed database ${targets.map((p) => p.pid).join(', ')}`;
}

/** decisions.md "Faults of the parts": while the database does not answer, public reads answer 503 within 5 s. */
export const READ_DEADLINE_MS = 5_000;

/** One public read made while a part was down: what it answered and how long it took. */
export interface ReadProbe {
  path: string;
  status: number;
  ms: number;
  contentType: string;
}

/**
 * Public reads, one of each kind every 500 ms for `durationMs`, each with a client timeout twice
 * the contract's deadline (so a hang is measured, not waited for forever): verify and receipt of
 * anchored hashes, the v1 statistics, the verify page.
 */
export async function probeReadsWhile(service: Service, anchored: string[], durationMs: number): Promise<ReadProbe[]> {
  const out: ReadProbe[] = [];
  const end = Date.now() + durationMs;
  const pending: Promise<void>[] = [];
  await sleep(Math.min(500, durationMs / 4)); // the freeze has begun
  for (let i = 0; Date.now() < end - 200; i++) {
    const h = anchored[i % Math.max(1, anchored.length)] ?? '0'.repeat(64);
    for (const p of [`/api/v2/evidence/verify/${h}`, `/api/v2/evidence/receipt/${h}`, '/api/v1/stats', `/verify/${h}`]) {
      pending.push(
        (async () => {
          const t = Date.now();
          let status = 0;
          let contentType = '';
          try {
            const res = await fetch(`${service.base}${p}`, { signal: AbortSignal.timeout(READ_DEADLINE_MS * 2) });
            await res.arrayBuffer();
            status = res.status;
            contentType = res.headers.get('content-type') ?? '';
          } catch {
            status = 0; // no answer within twice the deadline
          }
          out.push({ path: p.replace(/[0-9a-f]{64}/, '{h}'), status, ms: Date.now() - t, contentType });
        })(),
      );
    }
    await sleep(500);
  }
  await Promise.all(pending);
  return out;
}

/** "verify 503 ×12 (max 3012 ms), stats 200 ×12 (max 4 ms)…" */
export function summariseProbes(probes: ReadProbe[]): string {
  const groups = new Map<string, ReadProbe[]>();
  for (const p of probes) groups.set(`${p.path} ${p.status || 'no answer'}`, [...(groups.get(`${p.path} ${p.status || 'no answer'}`) ?? []), p]);
  return [...groups].map(([k, ps]) => `${k} ×${ps.length} (max ${Math.max(...ps.map((p) => p.ms))} ms)`).join(', ');
}

/** SIGKILL the ledger node child (hardhat). */
export function killLedger(service: Service): string {
  const targets = service.findChild(/hardhat/i);
  if (targets.length === 0) return 'skipped: no child process of the service mentions hardhat';
  for (const p of targets) process.kill(p.pid, 'SIGKILL');
  return `killed ledger node ${targets.map((p) => p.pid).join(', ')}`;
}

// ─── public reads ───────────────────────────────────────────────────────────────────────────────

interface VerifyResult {
  status: number;
  verified: boolean;
  registered_at?: string;
  chain_index?: number;
  ledger_tx?: string;
}

interface Receipt {
  image_hash: string;
  ledger?: { tx_hash?: string; merkle?: { root?: string } };
  device?: { public_key_hex?: string; chain_index?: number };
}

function parseProblem(text: string): Problem {
  try {
    return JSON.parse(text) as Problem;
  } catch {
    return {};
  }
}

/** A GET or POST that retries network errors and 5xx (a public read during a restart) for up to 60 s. */
async function fetchRetry(url: string, init: RequestInit = {}, deadlineMs = 60_000): Promise<{ status: number; text: string }> {
  const end = Date.now() + deadlineMs;
  let last = '';
  for (;;) {
    try {
      const res = await fetch(url, { ...init, signal: AbortSignal.timeout(20_000) });
      const text = await res.text();
      if (res.status < 500 || Date.now() > end) return { status: res.status, text };
      last = `${res.status} ${text.slice(0, 200)}`;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() > end) throw new Error(`${url}: ${last}`);
    await sleep(250);
  }
}

async function verifyHash(service: Service, h: string): Promise<VerifyResult> {
  const res = await fetchRetry(`${service.base}/api/v2/evidence/verify/${h}`, {}, 10_000);
  const body = parseProblem(res.text) as Partial<VerifyResult>;
  return { ...body, status: res.status, verified: res.status === 200 && body.verified === true };
}

interface StatTotals {
  registered: number;
  anchored: number;
  devices: number;
  transactions: number;
}

/** The all-time totals of GET /api/v1/stats, in a fixed key order. */
async function readStats(service: Service): Promise<StatTotals> {
  const res = await fetchRetry(`${service.base}/api/v1/stats`, {}, 10_000);
  if (res.status !== 200) throw new Error(`stats: ${res.status} ${res.text.slice(0, 200)}`);
  const t = (JSON.parse(res.text) as { totals?: Partial<StatTotals> }).totals ?? {};
  return { registered: Number(t.registered ?? 0), anchored: Number(t.anchored ?? 0), devices: Number(t.devices ?? 0), transactions: Number(t.transactions ?? 0) };
}

/** A fresh account through the public register endpoint, upgraded to Pro with the admin token. */
export async function setUpAccount(service: Service): Promise<{ accountId: string; apiKey: string; email: string; password: string; token: string }> {
  const email = `crash-${randomBytes(6).toString('hex')}@example.test`;
  const password = 'correct horse battery staple';
  const reg = await fetchRetry(`${service.base}/api/v2/account/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  if (reg.status !== 200) throw new Error(`register: ${reg.status} ${reg.text}`);
  const body = JSON.parse(reg.text) as { account_id: string; api_key: string; token: string };
  const tier = await fetchRetry(`${service.base}/api/v2/admin/accounts/${body.account_id}/tier`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${service.adminToken}` },
    body: JSON.stringify({ tier: 'pro' }),
  });
  if (tier.status !== 200) throw new Error(`set tier: ${tier.status} ${tier.text}`);
  return { accountId: body.account_id, apiKey: body.api_key, email, password, token: body.token };
}

async function readUsed(service: Service, account: { email: string; password: string; token: string }): Promise<number> {
  let res = await fetchRetry(`${service.base}/api/v2/account/usage`, { headers: { authorization: `Bearer ${account.token}` } }, 10_000);
  if (res.status === 401) {
    const login = await fetchRetry(`${service.base}/api/v2/account/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: account.email, password: account.password }),
    });
    account.token = (JSON.parse(login.text) as { token: string }).token;
    res = await fetchRetry(`${service.base}/api/v2/account/usage`, { headers: { authorization: `Bearer ${account.token}` } }, 10_000);
  }
  if (res.status !== 200) throw new Error(`usage: ${res.status} ${res.text}`);
  return (JSON.parse(res.text) as { used: number }).used;
}

interface ChainRead {
  verdict: string;
  detail: string;
  entries: { chain_index: number; image_hash: string; state: string }[];
}

async function readChain(service: Service, publicKeyHex: string): Promise<ChainRead | undefined> {
  const entries: ChainRead['entries'] = [];
  const verdicts: string[] = [];
  const details: string[] = [];
  let cursor: string | null = null;
  do {
    const url = `${service.base}/api/v1/chain/all/${publicKeyHex}?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await fetchRetry(url);
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw new Error(`chain/all: ${res.status} ${res.text.slice(0, 200)}`);
    const page = JSON.parse(res.text) as {
      entries: ChainRead['entries'];
      next_cursor: string | null;
      integrity: { verdict: string; gaps: unknown[]; broken_links: unknown[] };
    };
    entries.push(...page.entries);
    verdicts.push(page.integrity.verdict);
    if (page.integrity.verdict !== 'complete') details.push(JSON.stringify({ gaps: page.integrity.gaps, broken_links: page.integrity.broken_links }));
    cursor = page.next_cursor;
  } while (cursor);
  return { verdict: verdicts.every((v) => v === 'complete') ? 'complete' : (verdicts.find((v) => v !== 'complete') ?? '?'), detail: details.join('; '), entries };
}

/** What the chain holds of the service's evidence, read block by block over JSON-RPC. */
export interface LedgerRead {
  /** Direct anchors: transaction → the image hash it carries. */
  txs: Map<string, string>;
  /** Batches: transaction → the Merkle root it carries. */
  batchTxs: Map<string, string>;
  /** Image hash → every transaction that carries it, directly or in a batch whose sealed leaves hold it. */
  byImageHash: Map<string, string[]>;
  /** Merkle root → every transaction that carries it. */
  byRoot: Map<string, string[]>;
  anchorTxCount: number;
}

const BATCH_PREFIX_HEX = Buffer.from('MERKLE-SHA256:', 'ascii').toString('hex');

/**
 * Every anchor transaction of the local chain (direct: image_hash || server_hash; batched:
 * "MERKLE-SHA256:" || root), with the image hashes of each batch from `sealed` (root → image
 * hashes, as the batches table stores them: see readSeals).
 */
export async function readLedger(rpcUrl: string, sealed: Map<string, string[]> = new Map()): Promise<LedgerRead> {
  const provider = new JsonRpcProvider(rpcUrl, Network.from(31337), { staticNetwork: true });
  try {
    const latest = await provider.getBlockNumber();
    const txs = new Map<string, string>();
    const batchTxs = new Map<string, string>();
    const byImageHash = new Map<string, string[]>();
    const byRoot = new Map<string, string[]>();
    const add = (m: Map<string, string[]>, k: string, v: string) => m.set(k, [...(m.get(k) ?? []), v]);
    const numbers = Array.from({ length: latest + 1 }, (_, i) => i);
    await pool(numbers, 8, async (n) => {
      const block = await provider.getBlock(n, true);
      if (!block) throw new Error(`block ${n} missing`);
      for (const tx of block.prefetchedTransactions) {
        const data = tx.data.toLowerCase().slice(2);
        const hash = tx.hash.toLowerCase();
        if (data.length === 128) {
          // image_hash (32 bytes) || server_hash (32 bytes)
          txs.set(hash, data.slice(0, 64));
          add(byImageHash, data.slice(0, 64), hash);
        } else if (data.length === BATCH_PREFIX_HEX.length + 64 && data.startsWith(BATCH_PREFIX_HEX)) {
          const root = data.slice(BATCH_PREFIX_HEX.length);
          batchTxs.set(hash, root);
          add(byRoot, root, hash);
        }
      }
    });
    for (const [root, list] of byRoot) for (const h of sealed.get(root) ?? []) for (const tx of list) add(byImageHash, h, tx);
    return { txs, batchTxs, byImageHash, byRoot, anchorTxCount: txs.size + batchTxs.size };
  } finally {
    provider.destroy();
  }
}

/**
 * The sealed batches, root → image hashes, read straight from the local DynamoDB (the batches
 * table's seal items: `images` is the leaves' image hashes, 32 bytes each) with the plain SDK, as an
 * operator would dump the table: the only record of which hashes a batch root covers.
 */
export async function readSeals(endpoint: string, table = 'evidence-local-batches'): Promise<Map<string, string[]>> {
  const db = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 3 });
  const out = new Map<string, string[]>();
  try {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await db.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start, ConsistentRead: true }));
      for (const item of page.Items ?? []) {
        const root = item.root?.S;
        const images = item.images?.B;
        if (item.sk?.S !== 'seal' || !root || !images) continue;
        const list = Array.from({ length: images.length / 32 }, (_, i) => Buffer.from(images.subarray(i * 32, i * 32 + 32)).toString('hex'));
        out.set(root, [...(out.get(root) ?? []), ...list]);
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return out;
  } finally {
    db.destroy();
  }
}

async function pool<T>(items: T[], width: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++] as T;
        await run(item);
      }
    }),
  );
}

/** The report as a table of lines (for the bench and for test diagnostics). */
export function formatReport(r: CrashReport): string {
  const rows: [string, string][] = [
    ['seed', String(r.seed)],
    ['devices × photos', `${r.devices} × ${r.photos} (${r.hashes} hashes sent)`],
    ['faults', r.faults.map((f) => `${f.kind}${f.kind === 'kill' ? ` ${f.n}` : ''} (${f.inFlight} in flight${f.recoveryMs !== undefined ? `, all settled ${f.recoveryMs} ms after it ended` : ''})`).join(', ') || 'none'],
    ['requests sent', String(r.requestsSent)],
    ['interrupted', String(r.interrupted)],
    ['settled 200 / 409-anchored', `${r.settled200} / ${r.settled409Anchored}`],
    ['unsettled / refused', `${r.unsettled} / ${r.rejected}`],
    ['settle after restart max / p50', `${r.maxSettleAfterRestartMs ?? '-'} ms / ${r.p50SettleAfterRestartMs ?? '-'} ms`],
    ['ledger anchor transactions', String(r.ledgerAnchorTransactions)],
    ['on ledger without evidence', String(r.ledgerWithoutEvidence.length)],
    ['duplicates (hash on ledger > 1×)', String(r.duplicates)],
    ['Merkle roots on ledger > 1×', String(r.rootsTwice)],
    ['public reads while frozen', r.readProbes.length ? summariseProbes(r.readProbes) : '-'],
    ['forks', String(r.forks)],
    ['fork probes sent / refused / accepted', `${r.forkProbes.sent} / ${r.forkProbes.refused} / ${r.forkProbes.accepted}`],
    ['charged vs anchors held', `${r.charged ?? '?'} vs ${r.anchorsHeld}`],
    ['duration', `${r.durationMs} ms`],
  ];
  for (const [name, list] of Object.entries(r.violations)) rows.push([`violations: ${name}`, String(list.length)]);
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}
