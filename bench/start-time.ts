/**
 * How long `npm start` takes, as a user types it (npm and its prestart included), on free ports:
 * START_RUNS times a first start on a fresh DATA_DIR (keys, tables, the PQ key's registration)
 * followed by a warm start on the same directory. For each: the wall time to the `ready` line,
 * to the first 200 from GET /api/v1/health, and the `ready in … ms` the start printed (from the
 * start of its node process). The machine's load average is printed with them: on a shared
 * machine it decides most of the number.
 *
 *   npx tsx bench/start-time.ts            # START_RUNS=3
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../lib/local/net.js';

const root = path.resolve(import.meta.dirname, '..');
const runs = Number(process.env.START_RUNS ?? 3);

interface Timing {
  readyMs: number;
  healthyMs: number;
  printedMs: number;
  tables: string;
}

async function healthy(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).status === 200;
  } catch {
    return false;
  }
}

/** One `npm start` on `dataDir`, stopped with Ctrl-C (SIGINT to its group) once healthy. */
async function startOnce(dataDir: string): Promise<Timing> {
  const [port, dynamoPort, rpcPort] = [await freePort(), await freePort(), await freePort()];
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? os.homedir(),
    DATA_DIR: dataDir,
    PORT: String(port),
    DYNAMODB_PORT: String(dynamoPort),
    LEDGER_RPC_PORT: String(rpcPort),
    LOG_LEVEL: 'warn',
  };
  const t0 = performance.now();
  const child = spawn('npm', ['start'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  try {
    let readyMs = 0;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`npm start exited:\n${out}`);
      if (/^ready in \d+ ms/m.test(out)) {
        readyMs = performance.now() - t0;
        break;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    while (!(await healthy(`http://127.0.0.1:${port}/api/v1/health`))) await new Promise((r) => setTimeout(r, 10));
    const healthyMs = performance.now() - t0;
    return {
      readyMs,
      healthyMs,
      printedMs: Number(/^ready in (\d+) ms/m.exec(out)?.[1]),
      tables: /\(dynalite, pid \d+, ([^)]+)\)/.exec(out)?.[1] ?? '?',
    };
  } finally {
    try {
      process.kill(-(child.pid ?? 0), 'SIGINT');
    } catch {
      // already gone
    }
    await exited;
  }
}

const line = (what: string, t: Timing) =>
  `${what.padEnd(8)} ready line ${(t.readyMs / 1000).toFixed(2)} s, health 200 ${(t.healthyMs / 1000).toFixed(2)} s, printed ${(t.printedMs / 1000).toFixed(2)} s (${t.tables})`;

for (let i = 1; i <= runs; i++) {
  const parent = mkdtempSync(path.join(os.tmpdir(), 'bench-start-'));
  const dataDir = path.join(parent, 'data');
  try {
    const load = os.loadavg()[0]?.toFixed(1);
    console.log(line(`first ${i}`, await startOnce(dataDir)), `load ${load}`);
    console.log(line(`warm ${i}`, await startOnce(dataDir)), `load ${os.loadavg()[0]?.toFixed(1)}`);
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
}
