/**
 * Child processes of the benchmark: the API and the bare server (long-lived, announce readiness
 * with one `READY <json>` line on stdout) and one-shot workers (the load generator, the stage and
 * cold-start measurements) whose last stdout line is their JSON result. Every child runs TypeScript
 * through tsx, like `npm start`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../lib/local/net.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');


function spawnTsx(script: string, env: Record<string, string>, args: string[] = []): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, script), ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export interface Server {
  pid: number;
  info: Record<string, unknown>;
  stop(): Promise<void>;
}

/** Starts a long-lived child and resolves with its READY payload. */
export function startServer(script: string, env: Record<string, string>, timeoutMs = 60_000): Promise<Server> {
  const child = spawnTsx(script, env);
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} did not become ready in ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    let buffer = '';
    child.stdout?.on('data', (d: Buffer) => {
      buffer += d.toString();
      const m = /^READY (.*)$/m.exec(buffer);
      if (!m) return;
      clearTimeout(timer);
      child.stdout?.removeAllListeners('data');
      child.stdout?.resume();
      resolve({
        pid: child.pid ?? -1,
        info: JSON.parse(m[1] ?? '{}') as Record<string, unknown>,
        stop: () =>
          new Promise<void>((done) => {
            process.off('exit', killOnExit);
            if (child.exitCode !== null || child.signalCode !== null) return done();
            child.once('exit', () => done());
            child.kill('SIGTERM');
            setTimeout(() => child.kill('SIGKILL'), 20_000).unref();
          }),
      });
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited before it was ready (${signal ?? code})\n${stderr}`));
    });
  });
}

/** Runs a one-shot child to completion; its last stdout line is parsed as JSON. */
export function runWorker<T>(
  script: string,
  env: Record<string, string>,
  options: { echoStderr?: boolean; args?: string[]; onLine?: (line: string) => void } = {},
): Promise<T> {
  const child = spawnTsx(script, env, options.args ?? []);
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let stdout = '';
  let stderr = '';
  let pending = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
    if (!options.onLine) return;
    pending += d.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) options.onLine(line);
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-8000);
    if (options.echoStderr) process.stderr.write(d);
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code, signal) => {
      process.off('exit', killOnExit);
      const last = stdout.trim().split('\n').pop() ?? '';
      if (code !== 0) return reject(new Error(`${script} failed (${signal ?? code})\n${stderr}`));
      try {
        resolve(JSON.parse(last) as T);
      } catch {
        reject(new Error(`${script} printed no JSON result\n${stdout.slice(-2000)}\n${stderr}`));
      }
    });
  });
}
export { freePort };
