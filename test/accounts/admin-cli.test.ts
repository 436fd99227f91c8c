import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runAdmin, type CliIo } from '../../lib/cli/admin.js';
import { loadConfig } from '../../lib/config.js';
import { createAccountDeps } from '../../lib/deps/accounts.js';
import { freePort } from '../../lib/local/net.js';
import { createDocumentClient } from '../../lib/store/dynamo.js';
import { useStack } from '../support/stack.js';
import { frozenClock, registerDirect, testDeps } from './support.js';

// At module level, not in a `before` hook (see test/functions/lambda-handler.test.ts).
await useStack();

function capture(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (l) => stdout.push(l), err: (l) => stderr.push(l) };
}

// Sweeps run with a clock in 2001 so that they cannot touch other test files' counters.
const deps = testDeps({ clock: frozenClock('2001-01-01T00:00:00.000Z') });
const run = (argv: string[], io: CliIo) => runAdmin(argv, io, () => deps);

describe('admin CLI', () => {
  it('prints the usage and exits 2 without a command', async () => {
    const io = capture();
    assert.equal(await run([], io), 2);
    assert.match(io.stderr.join('\n'), /set-tier <email\|account_id> <tier>/);
  });

  it('exits 2 for an unknown command or a wrong number of arguments', async () => {
    assert.equal(await run(['frobnicate'], capture()), 2);
    assert.equal(await run(['set-tier', 'x@example.com'], capture()), 2);
    assert.equal(await run(['show'], capture()), 2);
  });

  it('exits 2 for an unknown tier, naming the known ones', async () => {
    const io = capture();
    assert.equal(await run(['set-tier', 'x@example.com', 'platinum'], io), 2);
    assert.match(io.stderr[0] ?? '', /free, starter, pro, enterprise/);
  });

  it('sets the tier of an account named by e-mail', async () => {
    const registration = await registerDirect(testDeps());
    const io = capture();
    assert.equal(await run(['set-tier', registration.email.toUpperCase(), 'pro'], io), 0);
    assert.deepEqual(JSON.parse(io.stdout[0] ?? ''), {
      account_id: registration.account_id,
      tier: 'pro',
      email: registration.email,
      previous_tier: 'free',
    });
    assert.equal((await testDeps().accounts.get(registration.account_id)).tier, 'pro');
  });

  it('exits 1 for an account that does not exist', async () => {
    const io = capture();
    assert.equal(await run(['set-tier', 'acc_nobody', 'pro'], io), 1);
    assert.match(io.stderr[0] ?? '', /No account "acc_nobody"/);
  });

  it('shows an account by id with its keys and usage, without secrets', async () => {
    const registration = await registerDirect(testDeps());
    const io = capture();
    assert.equal(await run(['show', registration.account_id], io), 0);
    const shown = JSON.parse(io.stdout[0] ?? '') as Record<string, unknown>;
    assert.equal(shown.email, registration.email);
    assert.equal((shown.keys as unknown[]).length, 1);
    assert.equal((shown.usage as { used: number }).used, 0);
    assert.doesNotMatch(io.stdout[0] ?? '', /password|scrypt|key_hash/);
    assert.equal(io.stdout[0]?.includes(registration.api_key), false);
  });

  it('resets quotas, all ended windows or one account, and exits 0', async () => {
    const registration = await registerDirect(testDeps());
    const sweep = capture();
    assert.equal(await run(['reset-quotas'], sweep), 0);
    assert.equal(typeof JSON.parse(sweep.stdout[0] ?? '').expired_counters_deleted, 'number');
    const one = capture();
    assert.equal(await run(['reset-quotas', registration.email], one), 0);
    assert.equal(JSON.parse(one.stdout[0] ?? '').account_reset, registration.account_id);
  });

  it('names what it talked to, and the variables to match, when the database cannot be reached', async () => {
    // The configuration of a stack on other ports than the one running: nothing listens there.
    const port = await freePort();
    const config = loadConfig({ DATA_DIR: '/tmp/evidence-admin-elsewhere', DYNAMODB_PORT: String(port), DYNAMODB_DEADLINE_MS: '300', DYNAMODB_ATTEMPT_TIMEOUT_MS: '100' });
    const db = createDocumentClient({ region: 'local', endpoint: config.aws.dynamoEndpoint, attemptTimeoutMs: 100, deadlineMs: 300 });
    const elsewhere = createAccountDeps({ config, db });
    const io = capture();
    try {
      assert.equal(await runAdmin(['show', 'x@example.com'], io, () => elsewhere), 1);
    } finally {
      db.destroy();
    }
    const said = io.stderr.join('\n');
    assert.match(said, new RegExp(`DynamoDB at http://127\\.0\\.0\\.1:${port}\\b`));
    assert.match(said, /DATA_DIR \/tmp\/evidence-admin-elsewhere/);
    assert.match(said, /same variables \(DYNAMODB_PORT or DYNAMODB_ENDPOINT, LEDGER_RPC_PORT, DATA_DIR\)/);
  });
});
