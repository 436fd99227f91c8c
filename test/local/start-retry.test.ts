import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StoreUnavailableError } from '../../lib/errors.js';
import { LedgerUnavailableError } from '../../lib/ledger/errors.js';
import { isTransientOutage, retryStartStep } from '../../lib/local/start-retry.js';

describe('a start-up step that meets an outage', () => {
  it('is tried again after a database or node outage, and its result is returned', async () => {
    const outages = [new StoreUnavailableError('TimeoutError'), new LedgerUnavailableError('The ledger node did not answer', 'timeout')];
    const lines: string[] = [];
    let calls = 0;
    const result = await retryStartStep(
      'the tables',
      async () => {
        calls++;
        const outage = outages.shift();
        if (outage) throw outage;
        return 'ready';
      },
      { firstPauseMs: 1, onRetry: (line) => lines.push(line) },
    );
    assert.equal(result, 'ready');
    assert.equal(calls, 3);
    assert.equal(lines.length, 2);
    assert.match(lines[0] ?? '', /^the tables: The database cannot be reached right now; trying again in 1 ms \(1 of 5\)$/);
    assert.match(lines[1] ?? '', /in 2 ms \(2 of 5\)$/);
  });

  it('fails at once on what is not an outage (a refused transaction, a misconfigured signer, a bug)', async () => {
    for (const error of [new LedgerUnavailableError('refused', 'rejected'), new LedgerUnavailableError('wrong chain', 'misconfigured'), new TypeError('a bug')]) {
      let calls = 0;
      await assert.rejects(
        retryStartStep('the replay', async () => {
          calls++;
          throw error;
        }, { firstPauseMs: 1 }),
        (e) => e === error,
      );
      assert.equal(calls, 1, String(error));
      assert.equal(isTransientOutage(error), false);
    }
  });

  it('gives up after its tries with the last outage', async () => {
    let calls = 0;
    const last = new LedgerUnavailableError('unreachable', 'unreachable');
    await assert.rejects(
      retryStartStep('the registration', async () => {
        calls++;
        throw calls < 3 ? new StoreUnavailableError('x') : last;
      }, { attempts: 3, firstPauseMs: 1 }),
      (e) => e === last,
    );
    assert.equal(calls, 3);
  });
});
