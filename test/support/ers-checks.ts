import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ArchiveStore } from '../../lib/evidence/archive-store.js';
import { main as evidenceCli } from '../../lib/cli/evidence.js';

/**
 * What the RFC 4998 evidence-record tests check a record with, besides our verifier: BouncyCastle
 * 1.72's org.bouncycastle.tsp.ers (test/interop/ErsCheck.java, run by java: the implementation
 * nobody here wrote), the offline CLI (`evidence verify --evidence-record`), and a count of the
 * archive store's calls (each one DynamoDB request).
 */

const run = promisify(execFile);
const BC_CLASSPATH = ['/usr/share/java/bcprov.jar', '/usr/share/java/bcpkix.jar', '/usr/share/java/bcutil.jar'];
const CHECK = path.resolve(import.meta.dirname, '..', 'interop', 'ErsCheck.java');

/**
 * The BouncyCastle check, working in `dir` (ErsCheck.java compiled there once, by javac: less CPU
 * on a shared machine than `java ErsCheck.java` on every run). The checker answers whether
 * BouncyCastle accepted the record with the photo, against the TSA root in `rootFile`, as of `at`
 * (default now), and what it printed.
 */
export function bouncyCastleChecker(dir: string): (record: Uint8Array, photo: Uint8Array, rootFile: string, at?: Date) => Promise<{ accepted: boolean; out: string }> {
  let compiled: Promise<string> | undefined;
  const compiledCheck = () => {
    compiled ??= (async () => {
      const out = path.join(dir, 'classes');
      try {
        await run('javac', ['-cp', BC_CLASSPATH.join(':'), '-d', out, CHECK], { timeout: 120_000 });
      } catch (error) {
        // Never skipped: without a JDK the check cannot run, and that is a failure (.ci/run installs it).
        if ((error as { code?: unknown }).code === 'ENOENT') assert.fail('javac is missing: install default-jdk-headless (.ci/run does)');
        throw error;
      }
      return out;
    })();
    return compiled;
  };
  return async (record, photo, rootFile, at) => {
    for (const jar of BC_CLASSPATH) assert.ok(existsSync(jar), `${jar} is missing: install libbcpkix-java (.ci/run does)`);
    const recordFile = path.join(dir, `r-${Math.random().toString(36).slice(2)}.ers`);
    const photoFile = `${recordFile}.photo`;
    await Promise.all([writeFile(recordFile, record), writeFile(photoFile, photo)]);
    const args = ['-cp', [await compiledCheck(), ...BC_CLASSPATH].join(':'), 'ErsCheck', recordFile, photoFile, rootFile, ...(at ? [at.toISOString()] : [])];
    try {
      const { stdout } = await run('java', args, { timeout: 120_000 });
      return { accepted: stdout.trim().endsWith('ACCEPTED'), out: stdout };
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string; code?: number | string };
      // Never skipped: without java the check cannot run, and that is a failure (.ci/run installs it).
      if (e.code === 'ENOENT') assert.fail('java is missing: install default-jdk-headless (.ci/run does)');
      assert.equal(e.code, 1, `the BouncyCastle check did not run: ${e.stderr ?? String(error)}`);
      return { accepted: false, out: e.stdout ?? '' };
    }
  };
}

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
