/**
 * `npm test`: starts the embedded parts once (in-memory dynalite, an automining Hardhat node,
 * secrets in a temp dir), then runs Node's test runner over every test file with the stack's
 * addresses in the environment, and stops the stack. A test file can also run on its own
 * (`node --import tsx --test test/x.test.ts`): it then starts a private stack.
 */
import { spawn } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { startTestStack } from './support/stack.js';

// npm scripts run Node 24 (as Lambda's nodejs24.x), but the CLI may run on an older Node: the SDK's notice that its
// releases after January 2027 need Node 22 is not repeated on every start.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const root = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
// A directory argument stands for the test files under it (`npm test -- test/evidence`).
const files = args.length > 0 ? (await Promise.all(args.map(async (a) => ((await stat(a).catch(() => null))?.isDirectory() ? findTests(path.resolve(a)) : [a])))).flat() : await findTests(path.join(root, 'test'));
if (files.length === 0) throw new Error('no test files found under test/');

const stack = await startTestStack();
let code = 1;
try {
  code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${process.env.TEST_CONCURRENCY ?? '2'}`, ...files], {
      cwd: root,
      // The CLI's default trust file ($XDG_CONFIG_HOME/evidence/trust.json) is the run's own, never
      // the user's: a trust file left by trying the README must not change what a test sees.
      env: { ...process.env, XDG_CONFIG_HOME: path.join(stack.env.DATA_DIR ?? root, 'config'), ...stack.env },
      stdio: 'inherit',
    });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.once('SIGINT', forward);
    process.once('SIGTERM', forward);
    child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
  });
} finally {
  await stack.stop();
}
process.exit(code);

async function findTests(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.test.ts'))
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
    .sort();
}
