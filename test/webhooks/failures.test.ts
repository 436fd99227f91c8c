/**
 * Webhook failures over time, on the test stack's real parts (docs/webhooks.md "Retries"):
 * - an endpoint that failed every attempt for 5 days is disabled (`failing`), with the worker's
 *   clock injected so that days pass in a test, and one that failed for less is not;
 * - a request Node's client refuses synchronously is a failed attempt (status 0, why), retried on
 *   the schedule, never a rejection that leaves the delivery claimed, taken again every lease.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, describe, it } from 'node:test';
import { app as createApp } from '../../functions/v2/account-webhooks-create.js';
import { app as listApp } from '../../functions/v2/account-webhooks-list.js';
import { app as deliveriesApp } from '../../functions/v2/account-webhook-deliveries.js';
import { app as anchorApp } from '../../functions/v2/evidence-anchor.js';
import type { Config } from '../../lib/config.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { createWebhookDispatcher, secretBoxOf } from '../../lib/deps/webhooks.js';
import { WebhookTable } from '../../lib/store/webhook-table.js';
import { sendWebhook } from '../../lib/net/webhook-http.js';
import { WebhookDispatcher } from '../../lib/webhooks/dispatcher.js';
import { drainChangeFeed } from '../support/change-feed.js';
import { createAccount, Device } from '../support/client.js';
import { useStack } from '../support/stack.js';
import { waitFor } from '../support/wait.js';
import { Receiver } from './support.js';

await useStack();

const HOOKS = '/api/v2/account/webhooks';
const DAY = 24 * 3600_000;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const receivers: Receiver[] = [];
after(() => Promise.all(receivers.map((r) => r.stop())));

async function subscribe(token: string, url: string): Promise<string> {
  const res = await createApp.request(HOOKS, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(token) }, body: JSON.stringify({ url, events: ['evidence.anchored'] }) });
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { webhook_id: string }).webhook_id;
}

async function anchor(apiKey: string): Promise<void> {
  const res = await anchorApp.request('/api/v2/evidence/anchor', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(new Device().next()) });
  assert.equal(res.status, 200, await res.clone().text());
}

type DeliveryView = { state: string; attempts: { at: string; status: number; error?: string }[]; next_attempt_at: string | null; failed_reason: string | null };
async function deliveriesOf(token: string, webhookId: string): Promise<DeliveryView[]> {
  const res = await deliveriesApp.request(`${HOOKS}/${webhookId}/deliveries`, { headers: bearer(token) });
  assert.equal(res.status, 200);
  return ((await res.json()) as { deliveries: DeliveryView[] }).deliveries;
}

async function endpointOf(token: string, webhookId: string) {
  const res = await listApp.request(HOOKS, { headers: bearer(token) });
  const { webhooks } = (await res.json()) as { webhooks: { webhook_id: string; status: string; disabled_reason: string | null; disabled_at: string | null }[] };
  return webhooks.find((w) => w.webhook_id === webhookId);
}

/** Ticks `worker` (the change feed drained first) until `done` holds: conditions, not sleeps. */
function runUntil<T>(what: string, worker: WebhookDispatcher, done: () => Promise<T | undefined>): Promise<T> {
  return waitFor(
    what,
    60_000,
    async () => {
      await drainChangeFeed();
      await worker.tick();
      await worker.idle();
      return done();
    },
    150,
  );
}

describe('webhook failures over time', () => {
  it('disables an endpoint that failed every attempt for 5 days (failing), not one that failed for 4', async () => {
    const account = await createAccount('pro');
    const down = new Receiver(() => 503);
    receivers.push(down);
    const webhookId = await subscribe(account.token, await down.start());
    // Days pass on the worker's clock (injected); the schedule waits a day between attempts.
    let offset = 0;
    const config: Config = { ...getConfig(), webhooks: { ...getConfig().webhooks, retryScheduleSeconds: [86_400, 86_400, 86_400, 86_400, 86_400, 86_400, 86_400] } };
    const worker = createWebhookDispatcher({ config, clock: () => new Date(Date.now() + offset) });
    await anchor(account.apiKey);
    await runUntil('the first attempt', worker, async () => ((await deliveriesOf(account.token, webhookId))[0]?.attempts.length === 1 ? true : undefined));
    // Every 1.2 days (past the 1-day wait and its jitter) an attempt fails; up to 4.8 days the endpoint stays active.
    for (let n = 1; n <= 4; n++) {
      offset = n * 1.2 * DAY;
      await runUntil(`attempt ${n + 1}`, worker, async () => ((await deliveriesOf(account.token, webhookId))[0]?.attempts.length === n + 1 ? true : undefined));
      assert.equal((await endpointOf(account.token, webhookId))?.status, 'active', `failing for ${n * 1.2} days is not yet 5`);
    }
    // At 6 days the endpoint has failed every attempt for more than 5: disabled, `failing`.
    offset = 5 * 1.2 * DAY;
    const disabled = await runUntil('disabled', worker, async () => {
      const e = await endpointOf(account.token, webhookId);
      return e?.status === 'disabled' ? e : undefined;
    });
    assert.equal(disabled.disabled_reason, 'failing');
    assert.ok(Date.parse(disabled.disabled_at ?? '') - Number(down.received[0]?.headers['webhook-timestamp']) * 1000 >= 5 * DAY, 'disabled after 5 days of failures');
    assert.deepEqual(
      down.received.map((r) => r.headers['webhook-id']),
      Array(6).fill(down.received[0]?.headers['webhook-id']),
      'six attempts of the one event',
    );
    // Disabled: nothing more is sent, even when the delivery comes due again.
    offset += 2 * DAY;
    await runUntil('the delivery failed', worker, async () => ((await deliveriesOf(account.token, webhookId))[0]?.state === 'failed' ? true : undefined));
    assert.equal(down.received.length, 6);
    assert.match((await deliveriesOf(account.token, webhookId))[0]?.failed_reason ?? '', /endpoint disabled \(failing\)/);
  });

  it('a request Node refuses synchronously is a failed attempt: the sender resolves, the delivery is retried on the schedule', async () => {
    // Node's client does throw synchronously for such a request (the header value here):
    assert.throws(() => http.request('http://127.0.0.1:9/', { method: 'POST', headers: { 'x-bad': 'a\nb' } }), { code: 'ERR_INVALID_CHAR' });
    const policy = { allowLoopback: true, requireHttps: false };
    const outcome = await sendWebhook('http://127.0.0.1:9/hook', { 'x-bad': 'a\nb' }, '{}', { policy });
    assert.deepEqual(outcome, { status: 0, error: 'request refused (ERR_INVALID_CHAR)' });

    // The worker with that sender: each attempt fails and is recorded, the next one on the schedule, then the delivery fails.
    const account = await createAccount('pro');
    const r = new Receiver();
    receivers.push(r);
    const webhookId = await subscribe(account.token, await r.start());
    const config: Config = { ...getConfig(), webhooks: { ...getConfig().webhooks, retryScheduleSeconds: [0.2, 0.2] } };
    const worker = new WebhookDispatcher({
      store: new WebhookTable(getDb(), config.tables.webhooks),
      sealer: secretBoxOf(config),
      schedule: config.webhooks.retryScheduleSeconds,
      send: (url, headers, body) => sendWebhook(url, { ...headers, 'x-bad': 'a\nb' }, body, { policy }),
    });
    await anchor(account.apiKey);
    const failed = await runUntil('the delivery failed after its schedule', worker, async () => {
      const d = (await deliveriesOf(account.token, webhookId))[0];
      return d?.state === 'failed' ? d : undefined;
    });
    assert.deepEqual(
      failed.attempts.map((a) => [a.status, a.error]),
      Array(3).fill([0, 'request refused (ERR_INVALID_CHAR)']),
    );
    assert.equal(failed.failed_reason, 'no 2xx in 3 attempts');
    assert.equal(r.received.length, 0);
  });
});
