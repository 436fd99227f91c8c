/**
 * BouncyCastle 1.72's check of an RFC 4998 evidence record (test/interop/ErsCheck.java, Debian's
 * libbcpkix-java), the implementation nobody here wrote: compiled once per process with javac
 * (less CPU on a shared machine than `java ErsCheck.java` on every run), then run by java. Never
 * skipped: without a JDK or the jars the check cannot run, and that is a failure (.ci/run installs them).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const BC_CLASSPATH = ['/usr/share/java/bcprov.jar', '/usr/share/java/bcpkix.jar', '/usr/share/java/bcutil.jar'];
const CHECK = path.resolve(import.meta.dirname, '..', 'interop', 'ErsCheck.java');

let workDir: string | undefined;
function work(): string {
  if (!workDir) {
    const made = mkdtempSync(path.join(os.tmpdir(), 'ers-check-'));
    process.once('exit', () => rmSync(made, { recursive: true, force: true }));
    workDir = made;
  }
  return workDir;
}

let compiled: Promise<string> | undefined;
/** ErsCheck.java compiled once; its class directory. Start it early to overlap the compilation with other work. */
export function compiledErsCheck(): Promise<string> {
  compiled ??= (async () => {
    for (const jar of BC_CLASSPATH) assert.ok(existsSync(jar), `${jar} is missing: install libbcpkix-java (.ci/run does)`);
    const out = path.join(work(), 'classes');
    try {
      await run('javac', ['-cp', BC_CLASSPATH.join(':'), '-d', out, CHECK], { timeout: 120_000 });
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') assert.fail('javac is missing: install default-jdk-headless (.ci/run does)');
      throw error;
    }
    return out;
  })();
  return compiled;
}

/**
 * Runs the BouncyCastle check of `record` against the photo's bytes and the TSA root `rootPem`,
 * as of `at` (default: now, the relying party's time); its output and whether it accepted.
 */
export async function bouncyCastleErsCheck(record: Uint8Array, photo: Uint8Array, rootPem: string, at?: Date): Promise<{ accepted: boolean; out: string }> {
  const classes = await compiledErsCheck();
  const base = path.join(work(), `r-${Math.random().toString(36).slice(2)}`);
  const [recordFile, photoFile, rootFile] = [`${base}.ers`, `${base}.photo`, `${base}.root.pem`];
  await Promise.all([writeFile(recordFile, record), writeFile(photoFile, photo), writeFile(rootFile, rootPem)]);
  // A short run: the client compiler only and the serial collector start faster and take less CPU.
  const args = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-cp', [classes, ...BC_CLASSPATH].join(':'), 'ErsCheck', recordFile, photoFile, rootFile, ...(at ? [at.toISOString()] : [])];
  try {
    const { stdout } = await run('java', args, { timeout: 120_000 });
    return { accepted: stdout.trim().endsWith('ACCEPTED'), out: stdout };
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; code?: number | string };
    if (e.code === 'ENOENT') assert.fail('java is missing: install default-jdk-headless (.ci/run does)');
    assert.equal(e.code, 1, `the BouncyCastle check did not run: ${e.stderr ?? String(error)}`);
    return { accepted: false, out: e.stdout ?? '' };
  }
}
