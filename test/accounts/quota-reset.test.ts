import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { handler } from '../../functions/jobs/quota-reset.js';
import { runQuotaReset, UnknownAccountError } from '../../lib/accounts/quota-reset.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { useStack } from '../support/stack.js';
import { frozenClock, registerDirect, testDeps } from './support.js';

// At module level, not in a `before` hook (see test/functions/lambda-handler.test.ts).
await useStack();

// The sweep runs with a clock in 2001 so that, on a stack shared with other test files, it can
// only ever delete the counters this file wrote with expiries in 2000.
const SWEEP_NOW = '2001-01-01T00:00:00.000Z';
const ENDED = Date.parse('2000-12-01T00:00:00Z') / 1000;
const RUNNING = Date.parse('2001-02-01T00:00:00Z') / 1000;

async function put(pk: string, count: number, expires_at: number) {
  await getDb().send(new PutCommand({ TableName: getConfig().tables.counters, Item: { pk, count, expires_at } }));
}

async function exists(pk: string): Promise<boolean> {
  const out = await getDb().send(new GetCommand({ TableName: getConfig().tables.counters, Key: { pk }, ConsistentRead: true }));
  return out.Item !== undefined;
}

describe('quota reset job', () => {
  it('deletes the limit counters of ended windows and keeps running windows and other counters', async () => {
    const id = `acc_sweep_${Date.now()}`;
    await put(`quota#${id}#2000-11`, 50, ENDED);
    await put(`rate#${id}#2000-11-30T23:59`, 10, ENDED);
    await put(`ip#10.9.9.9#2000-11-30T23:59`, 3, ENDED);
    await put(`quota#${id}#2001-01`, 7, RUNNING);
    await put(`stats#${id}#2000-11`, 1, ENDED);
    const deps = testDeps({ clock: frozenClock(SWEEP_NOW) });

    const result = await runQuotaReset({ deps });

    assert.ok(result.expired_counters_deleted >= 3);
    assert.equal(await exists(`quota#${id}#2000-11`), false);
    assert.equal(await exists(`rate#${id}#2000-11-30T23:59`), false);
    assert.equal(await exists(`ip#10.9.9.9#2000-11-30T23:59`), false);
    assert.equal(await exists(`quota#${id}#2001-01`), true);
    assert.equal(await exists(`stats#${id}#2000-11`), true);
  });

  it('is idempotent: a second run finds nothing more to do and changes nothing', async () => {
    const id = `acc_twice_${Date.now()}`;
    await put(`quota#${id}#2000-11`, 50, ENDED);
    await put(`quota#${id}#2001-01`, 7, RUNNING);
    const deps = testDeps({ clock: frozenClock(SWEEP_NOW) });

    await runQuotaReset({ deps });
    const second = await runQuotaReset({ deps });

    assert.equal(second.expired_counters_deleted, 0);
    assert.equal(await exists(`quota#${id}#2000-11`), false);
    assert.equal(await exists(`quota#${id}#2001-01`), true);
  });

  it('resets the current month of one account named by e-mail', async () => {
    const deps = testDeps();
    const registration = await registerDirect(deps);
    await deps.limits.reserveQuota(registration.account_id, 'free');
    await deps.limits.reserveQuota(registration.account_id, 'free');

    const result = await runQuotaReset({ account: registration.email, deps });

    assert.equal(result.account_reset, registration.account_id);
    assert.equal((await deps.limits.usage(registration.account_id, 'free')).used, 0);
  });

  it('refuses to reset an account that does not exist', async () => {
    await assert.rejects(runQuotaReset({ account: 'acc_missing', deps: testDeps() }), UnknownAccountError);
  });

  it('runs as an EventBridge scheduled handler and reports what it did', async () => {
    const result = await handler({ id: 'evt-1', time: new Date().toISOString(), 'detail-type': 'Scheduled Event' });
    assert.equal(typeof result.expired_counters_deleted, 'number');
  });
});
