/**
 * What the webhooks cost in DynamoDB requests when nothing happens and per change-feed drain
 * (docs/cost.md "Webhooks"), counted at the document client: every command the store sends.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { secretBoxOf } from '../../lib/deps/webhooks.js';
import { WebhookTable } from '../../lib/store/webhook-table.js';
import { WebhookDispatcher } from '../../lib/webhooks/dispatcher.js';
import { recordWebhookEvents } from '../../lib/webhooks/outbox.js';
import { useStack } from '../support/stack.js';

await useStack();

/** The real client, counting the commands sent through it by name. */
function countingDb(): { db: DynamoDBDocumentClient; counts: Record<string, number> } {
  const real = getDb();
  const counts: Record<string, number> = {};
  const db = new Proxy(real, {
    get(target, prop, receiver) {
      if (prop === 'send') {
        return (command: { constructor: { name: string } }, ...rest: unknown[]) => {
          counts[command.constructor.name] = (counts[command.constructor.name] ?? 0) + 1;
          return (target.send as (...a: unknown[]) => unknown).call(target, command, ...rest);
        };
      }
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  return { db, counts };
}

describe('webhooks: DynamoDB requests', () => {
  it('an idle worker tick is one Query of the due index; a minute of npm start (1 s ticks) is 60, nothing else', async () => {
    const config = getConfig();
    const { db, counts } = countingDb();
    // A clock in 2000: nothing is due then, whatever other test files left on the shared index.
    const worker = new WebhookDispatcher({ store: new WebhookTable(db, config.tables.webhooks), sealer: secretBoxOf(config), schedule: [1], send: async () => ({ status: 200 }), clock: () => new Date('2000-01-01T00:00:00Z') });
    for (let i = 0; i < 60; i++) assert.deepEqual(await worker.tick(), { handed: 0, oldestDueMs: undefined });
    assert.deepEqual(counts, { QueryCommand: 60 });
  });

  it('the outbox: a drain whose changes carry no webhook event sends no request', async () => {
    const config = getConfig();
    const { db, counts } = countingDb();
    const store = new WebhookTable(db, config.tables.webhooks);
    assert.equal(await recordWebhookEvents(store, [], { publicBaseUrl: 'http://x', explorerTxUrl: 'http://x/{tx_hash}' }), 0);
    assert.deepEqual(counts, {});
  });
});
