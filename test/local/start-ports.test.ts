/**
 * `npm start` with a busy port (issue 26, "local start fails fast and cleanly"): each port it
 * binds (PORT, DYNAMODB_PORT, LEDGER_RPC_PORT) is taken in turn by another server, and the start
 * must stop before anything starts: one line on stderr naming the variable, exit code 1, nothing
 * printed on stdout, no DATA_DIR written (no secrets, no dynalite data, no chain journal, so no
 * registration on the chain), no process left that carries its DATA_DIR, the other ports still
 * free. How long it took is reported (a diagnostic), not asserted. A port taken later, between
 * the check and a part's own bind, still gives the one line, and the parts already started stop.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../lib/config.js';
import { startDynamoProcess } from '../../lib/local/dynamo-process.js';
import { freePort, PortInUseError, probePort } from '../../lib/local/net.js';
import { checkPorts, localPlan, portInUseLine, type PlannedPort } from '../../lib/local/preflight.js';
import { listenLocalApi } from '../../lib/local/server.js';
import { processAlive } from '../support/processes.js';

const root = path.resolve(import.meta.dirname, '..', '..');
const VARIABLES = ['PORT', 'DYNAMODB_PORT', 'LEDGER_RPC_PORT'] as const;
type Variable = (typeof VARIABLES)[number];

const cleanups: (() => void)[] = [];
after(() => {
  for (const cleanup of cleanups.reverse()) cleanup();
});

/** Another program on 127.0.0.1:port (closed after the file). */
async function occupy(port: number): Promise<Server> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  cleanups.push(() => server.close());
  return server;
}

/** A user's shell: free ports, a DATA_DIR that does not exist yet (not the test stack's variables). */
async function userEnv(): Promise<{ env: Record<string, string>; ports: Record<Variable, number>; dataDir: string }> {
  const parent = await mkdtemp(path.join(os.tmpdir(), 'evidence-start-ports-'));
  cleanups.push(() => rmSync(parent, { recursive: true, force: true }));
  const dataDir = path.join(parent, 'data');
  const ports = { PORT: await freePort(), DYNAMODB_PORT: await freePort(), LEDGER_RPC_PORT: await freePort() };
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? os.homedir(),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
  };
  return { env, ports, dataDir };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs a command to its exit; `onStdout` sees each chunk of its output as it comes. */
function run(command: string, args: string[], env: Record<string, string>, onStdout?: (text: string) => void): Promise<Run> {
  const t0 = performance.now();
  const child = spawn(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  cleanups.push(() => {
    try {
      process.kill(-(child.pid ?? 0), 'SIGKILL');
    } catch {
      // already gone
    }
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    onStdout?.(stdout);
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr, ms: Math.round(performance.now() - t0) })));
}

/** `npm start`'s entry, without npm (package.json "start"). */
const startEntry = (env: Record<string, string>, onStdout?: (text: string) => void) =>
  run(process.execPath, ['--import', 'tsx', 'lib/local/start.ts'], env, onStdout);

/** Pids of the processes (ours) whose environment holds `DATA_DIR=<dir>`: a child of npm start carries it. */
function processesWithDataDir(dir: string): number[] {
  const needle = Buffer.from(`DATA_DIR=${dir}\0`);
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`).includes(needle)) pids.push(Number(entry));
    } catch {
      // gone, or not ours
    }
  }
  return pids;
}

const busyLine = (variable: Variable, port: number) => `port ${port} (${variable}) on 127.0.0.1 is already in use; set ${variable} to a free port`;

describe('npm start with a busy port', () => {
  for (const variable of VARIABLES) {
    it(`stops before anything starts when ${variable} is taken: one line naming it, exit code 1`, async (t) => {
      const { env, ports, dataDir } = await userEnv();
      await occupy(ports[variable]);
      const result = await startEntry(env);
      t.diagnostic(`${variable} busy: npm start's entry exited ${result.code} after ${result.ms} ms (spawn to exit)`);
      assert.equal(result.code, 1, result.stderr);
      assert.deepEqual(result.stderr.split('\n').filter(Boolean), [busyLine(variable, ports[variable])]);
      assert.equal(result.stdout, '', 'no part may have said it started');
      assert.equal(existsSync(dataDir), false, 'nothing may be written: no secrets, no tables, no chain journal');
      assert.deepEqual(processesWithDataDir(dataDir), [], 'no dynalite or Hardhat child may be left');
      for (const other of VARIABLES.filter((v) => v !== variable)) {
        assert.equal(await probePort(ports[other], '127.0.0.1'), null, `nothing may listen on ${other}`);
      }
    });
  }

  it('says the same through npm, with npm\'s own lines on stdout only', async (t) => {
    const { env, ports, dataDir } = await userEnv();
    await occupy(ports.PORT);
    const result = await run('npm', ['start'], env);
    t.diagnostic(`PORT busy: \`npm start\` (prestart included) exited ${result.code} after ${result.ms} ms`);
    assert.notEqual(result.code, 0);
    assert.deepEqual(result.stderr.split('\n').filter(Boolean), [busyLine('PORT', ports.PORT)]);
    assert.doesNotMatch(result.stdout, /^(data|dynamodb|ledger|api) /m);
    assert.equal(existsSync(dataDir), false);
  });

  it('names both variables when two of them hold the same port, before anything starts', async () => {
    const { env, ports, dataDir } = await userEnv();
    const result = await startEntry({ ...env, LEDGER_RPC_PORT: String(ports.DYNAMODB_PORT) });
    assert.equal(result.code, 1);
    assert.deepEqual(result.stderr.split('\n').filter(Boolean), [
      `DYNAMODB_PORT and LEDGER_RPC_PORT are both ${ports.DYNAMODB_PORT}; set LEDGER_RPC_PORT to another free port`,
    ]);
    assert.equal(existsSync(dataDir), false);
  });

  it('still says one line when the API port is taken after the check, and stops the parts it started', async (t) => {
    const { env, ports, dataDir } = await userEnv();
    // Taken as soon as npm start reports its data directory: after the check, seconds before the
    // API binds (it binds last, once dynalite, the node and the chain registration are done).
    let taken: Promise<Server> | undefined;
    const result = await startEntry(env, (stdout) => {
      if (!taken && /^data /m.test(stdout)) taken = occupy(ports.PORT);
    });
    assert.ok(taken, result.stdout);
    await taken;
    t.diagnostic(`PORT taken after the check: exited ${result.code} after ${result.ms} ms`);
    assert.equal(result.code, 1, result.stderr);
    assert.deepEqual(result.stderr.split('\n').filter(Boolean), [busyLine('PORT', ports.PORT)]);
    // The children it had started are stopped with it.
    const pids = [/\(dynalite, pid (\d+),/, /\(hardhat, pid (\d+),/].map((re) => Number(re.exec(result.stdout)?.[1]));
    assert.ok(pids.every((pid) => pid > 0), result.stdout);
    assert.deepEqual(pids.filter(processAlive), [], 'no child may outlive npm start');
    assert.deepEqual(processesWithDataDir(dataDir), []);
  });
});

describe('the parts and the plan', () => {
  it('plans the children\'s ports only for the parts npm start runs itself', () => {
    const env = { PORT: '4100', DYNAMODB_PORT: '4101', LEDGER_RPC_PORT: '4102', DATA_DIR: '/tmp/x' };
    const variables = (extra: Record<string, string>) => localPlan(loadConfig({ ...env, ...extra }), { ...env, ...extra }).ports.map((p) => `${p.variable}=${p.port}`);
    assert.deepEqual(variables({}), ['PORT=4100', 'DYNAMODB_PORT=4101', 'LEDGER_RPC_PORT=4102']);
    assert.deepEqual(variables({ DYNAMODB_ENDPOINT: 'http://127.0.0.1:9999' }), ['PORT=4100', 'LEDGER_RPC_PORT=4102']);
    assert.deepEqual(variables({ LEDGER_RPC_URL: 'http://127.0.0.1:9998' }), ['PORT=4100', 'DYNAMODB_PORT=4101']);
    assert.deepEqual(localPlan(loadConfig({ ...env, HOST: '127.0.0.2' }), env).ports[0], { variable: 'PORT', port: 4100, host: '127.0.0.2' });
  });

  it('finds nothing in the way of free ports', async () => {
    const ports: PlannedPort[] = [
      { variable: 'PORT', port: await freePort(), host: '127.0.0.1' },
      { variable: 'DYNAMODB_PORT', port: await freePort(), host: '127.0.0.1' },
    ];
    assert.equal(await checkPorts(ports), null);
  });

  it('dynalite\'s child and the API server report a port taken under them as PortInUseError', async () => {
    const port = await freePort();
    await occupy(port);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'evidence-start-ports-dynamo-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const dynamo = await startDynamoProcess({ port, logFile: path.join(dir, 'dynamodb.log') }).then(
      () => assert.fail('dynalite started on a busy port'),
      (error: unknown) => error,
    );
    assert.ok(dynamo instanceof PortInUseError, String(dynamo));
    assert.equal(dynamo.port, port);
    const api = await listenLocalApi({ fetch: () => new Response('') }, { port, hostname: '127.0.0.1' }).then(
      () => assert.fail('the API listened on a busy port'),
      (error: unknown) => error,
    );
    assert.ok(api instanceof PortInUseError, String(api));
    const planned: PlannedPort[] = [{ variable: 'DYNAMODB_PORT', port, host: '127.0.0.1' }];
    assert.equal(portInUseLine(dynamo, planned), busyLine('DYNAMODB_PORT', port));
  });
});
