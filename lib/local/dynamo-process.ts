import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PortInUseError } from './net.js';

/**
 * dynalite in a child process of its own (lib/local/dynamo-child.mjs), as `npm start` runs it:
 * the database then uses another core than the API and can be stopped and started on its own
 * (the supervisor in start.ts restarts it on the same port and data directory).
 */
export interface DynamoProcess {
  endpoint: string;
  port: number;
  pid: number;
  /** Settles when the process has exited, with how it ended (`code 1`, `signal SIGKILL`). */
  exited: Promise<string>;
  /** SIGTERM (dynalite closes its store), SIGKILL after 5 s; waits for the exit. */
  stop(): Promise<void>;
}

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..', '..');

export async function startDynamoProcess(options: { port: number; dir?: string; logFile: string; startTimeoutMs?: number }): Promise<DynamoProcess> {
  mkdirSync(path.dirname(options.logFile), { recursive: true, mode: 0o700 });
  const logFd = openSync(options.logFile, 'a', 0o600);
  let child;
  try {
    // node:sqlite (the items' store, dynalite-store.mjs) is stable enough for us and says so once per start: not in the log.
    child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', path.join(here, 'dynamo-child.mjs')], {
      cwd: repoRoot,
      env: { ...process.env, DYNAMO_CHILD_PORT: String(options.port), DYNAMO_CHILD_DIR: options.dir ?? '' },
      // Its own process group: Ctrl-C reaches only `npm start`, which then stops the parts in order.
      detached: true,
      stdio: ['ignore', logFd, logFd, 'ipc'],
    });
  } finally {
    closeSync(logFd); // the child holds its own copy
  }
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => resolve(signal ? `signal ${signal}` : `code ${code}`));
    child.once('error', (error) => resolve(`spawn error ${error.message}`));
  });
  // Also stop it when this process exits normally (its parent watch covers crashes and SIGKILL).
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  void exited.then(() => process.off('exit', killOnExit));

  const timeoutMs = options.startTimeoutMs ?? 30_000;
  let timer: NodeJS.Timeout | undefined;
  try {
    const port = await Promise.race([
      new Promise<number>((resolve, reject) => {
        child.on('message', (m: { type?: string; port?: number; code?: string; message?: string }) => {
          if (m.type === 'ready' && typeof m.port === 'number') resolve(m.port);
          else if (m.type === 'failed' && m.code === 'EADDRINUSE') reject(new PortInUseError(options.port, '127.0.0.1', 'the embedded DynamoDB (dynalite)'));
          else if (m.type === 'failed') reject(new Error(`Cannot start the embedded DynamoDB (dynalite): ${m.message ?? 'unknown error'}`));
        });
      }),
      exited.then((how) => {
        throw new Error(`The embedded DynamoDB (dynalite) exited during start-up (${how}); see ${options.logFile}`);
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`The embedded DynamoDB (dynalite) was not ready within ${timeoutMs} ms (log: ${options.logFile})`)), timeoutMs);
      }),
    ]);
    // The channel stays open (the child exits when it closes) but does not keep this process alive.
    child.channel?.unref();
    let stopping: Promise<void> | null = null;
    return {
      endpoint: `http://127.0.0.1:${port}`,
      port,
      pid: child.pid ?? -1,
      exited,
      stop() {
        stopping ??= (async () => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.kill('SIGTERM');
          const t = setTimeout(() => child.kill('SIGKILL'), 5000);
          await exited;
          clearTimeout(t);
        })();
        return stopping;
      },
    };
  } catch (error) {
    child.kill('SIGKILL');
    await exited;
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
