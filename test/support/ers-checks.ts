import path from 'node:path';
import type { ArchiveStore } from '../../lib/evidence/archive-store.js';
import { main as evidenceCli } from '../../lib/cli/evidence.js';

/**
 * What the RFC 4998 evidence-record tests check a record with, besides our verifier and
 * BouncyCastle (test/support/ers-check.ts): the offline CLI (`evidence verify --evidence-record`),
 * and a count of the archive store's calls (each one DynamoDB request).
 */

/** `evidence verify <args…>` in process, with no trust file (the root is given with --root): its exit code and output. */
export async function evidenceVerify(dir: string, ...args: string[]): Promise<{ code: number; out: string }> {
  const out: string[] = [];
  const code = await evidenceCli(['verify', ...args], { out: (l) => out.push(l), err: () => {} }, { EVIDENCE_TRUST_FILE: path.join(dir, 'no-trust.json') });
  return { code, out: out.join('\n') };
}

/** Counts the store's calls (each one DynamoDB request). */
export function counting(store: ArchiveStore): { store: ArchiveStore; calls: Record<string, number> } {
  const calls: Record<string, number> = {};
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls[String(prop)] = (calls[String(prop)] ?? 0) + 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, calls };
}

export const total = (calls: Record<string, number>) => Object.values(calls).reduce((a, b) => a + b, 0);
