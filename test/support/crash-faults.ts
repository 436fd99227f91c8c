/**
 * The faults of one part (crash-harness.ts): freeze or kill the database, kill the ledger node,
 * and the public reads probed meanwhile (decisions.md "Faults of the parts").
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CrashRunOptions } from './crash-report.js';
import type { Service } from './crash-service.js';

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
export function readLogLength(_options: CrashRunOptions, service: Service): number {
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
