/**
 * A measured alternative, not what `npm start` does (BENCHMARKS.md, "API workers"): the API served
 * by several processes, node:cluster workers (bench/servers/api-worker.ts) sharing one listening
 * port, the primary handing them connections in turn. A worker that dies is forked again. In a
 * stack the primary would keep everything that must run once: the child processes, the chain
 * replay, the ML-DSA key registration and the reconciler.
 *
 * What stays correct with several processes: every counter, quota and claim lives in DynamoDB
 * behind conditional writes (built for concurrent Lambdas); the ledger sender of each worker
 * allocates nonces from the shared DynamoDB counter and retries "nonce too high" while another
 * process's lower nonce is on its way (lib/ledger/sender.ts). In-process caches only ever hold
 * immutable data. What does not: limits kept in process memory count per worker.
 */
import cluster, { type Worker } from 'node:cluster';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DownReason } from '../../lib/health.js';

export interface ApiWorkers {
  pids(): number[];
  /** Tells every worker a part's state (health answers `restarting` from every process). */
  partState(part: string, reason: DownReason | undefined): void;
  stop(): Promise<void>;
}

const workerFile = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'servers', 'api-worker.ts');

/** Forks `count` API workers on host:port; resolves when every one listens. */
export async function startApiWorkers(options: { count: number; port: number; host: string; say?: (line: string) => void }): Promise<ApiWorkers> {
  cluster.setupPrimary({ exec: workerFile, execArgv: process.execArgv, silent: false });
  const env = { API_WORKER_PORT: String(options.port), API_WORKER_HOST: options.host };
  const workers = new Set<Worker>();
  const states = new Map<string, DownReason>();
  let stopping = false;

  const fork = (): Promise<Worker> =>
    new Promise((resolve, reject) => {
      const worker = cluster.fork(env);
      workers.add(worker);
      for (const [part, reason] of states) worker.send({ type: 'part-state', part, reason });
      const onExit = (code: number | null, signal: string | null) => reject(new Error(`API worker ${worker.process.pid} exited during start-up (${signal ?? `code ${code}`})`));
      worker.once('exit', onExit);
      worker.on('message', (m: { type?: string }) => {
        if (m?.type !== 'listening') return;
        worker.off('exit', onExit);
        worker.once('exit', (code, signal) => {
          workers.delete(worker);
          if (stopping) return;
          options.say?.(`restarted  api worker: pid ${worker.process.pid} exited (${signal ? `signal ${signal}` : `code ${code}`})`);
          fork().catch((error: unknown) => options.say?.(`restart    api worker failed: ${error instanceof Error ? error.message : String(error)}`));
        });
        resolve(worker);
      });
    });

  await Promise.all(Array.from({ length: options.count }, fork));
  return {
    pids: () => [...workers].map((w) => w.process.pid ?? -1),
    partState(part, reason) {
      if (reason) states.set(part, reason);
      else states.delete(part);
      for (const w of workers) if (w.isConnected()) w.send({ type: 'part-state', part, reason: reason ?? null });
    },
    async stop() {
      stopping = true;
      await Promise.all(
        [...workers].map(
          (w) =>
            new Promise<void>((resolve) => {
              if (w.isDead()) return resolve();
              const timer = setTimeout(() => w.process.kill('SIGKILL'), 10_000);
              w.once('exit', () => {
                clearTimeout(timer);
                resolve();
              });
              w.process.kill('SIGTERM');
            }),
        ),
      );
    },
  };
}
