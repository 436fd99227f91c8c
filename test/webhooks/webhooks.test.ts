/**
 * Webhooks end to end, in-process, on the test stack's real parts (dynalite, Hardhat) and real
 * HTTP receivers that verify with the `standardwebhooks` package (docs/webhooks.md): subscribe,
 * anchor, the evidence table's change feed makes the deliveries, the delivery worker sends them.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { app as createApp } from '../../functions/v2/account-webhooks-create.js';
import { app as listApp } from '../../functions/v2/account-webhooks-list.js';
import { app as deleteApp } from '../../functions/v2/account-webhooks-delete.js';
import { app as deliveriesApp } from '../../functions/v2/account-webhook-deliveries.js';
import { app as retryApp } from '../../functions/v2/account-webhook-retry.js';
import { app as anchorApp } from '../../functions/v2/evidence-anchor.js';
import { getConfig } from '../../lib/deps/core.js';
import { createWebhookDispatcher } from '../../lib/deps/webhooks.js';
import type { Config } from '../../lib/config.js';
import type { WebhookDispatcher } from '../../lib/webhooks/dispatcher.js';
import { drainChangeFeed } from '../support/change-feed.js';
import { createAccount, Device } from '../support/client.js';
import { useStack } from '../support/stack.js';
import { waitFor } from '../support/wait.js';
import { Receiver } from './support.js';

await useStack();

const HOOKS = '/api/v2/account/webhooks';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const json = (body: unknown, token: string) => ({ method: 'POST', headers: { 'content-type': 'application/json', ...bearer(token) }, body: JSON.stringify(body) });
const receivers: Receiver[] = [];
after(() => Promise.all(receivers.map((r) => r.stop())));

async function receiver(answer?: ConstructorParameters<typeof Receiver>[0]): Promise<{ r: Receiver; url: string }> {
  const r = new Receiver(answer);
  receivers.push(r);
  return { r, url: await r.start() };
}

async function subscribe(token: string, url: string, events = ['evidence.anchored', 'evidence.final', 'evidence.record']) {
  const res = await createApp.request(HOOKS, json({ url, events }, token));
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as { webhook_id: string; secret: string; status: string };
}

async function anchor(apiKey: string): Promise<string> {
  const device = new Device();
  const body = device.next();
  const res = await anchorApp.request('/api/v2/evidence/anchor', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });
  assert.equal(res.status, 200, await res.clone().text());
  return body.sha256_hash;
}

/** The worker with a short retry schedule (WEBHOOK_RETRY_SCHEDULE's effect) over the test stack. */
function worker(schedule = [0.2, 0.2]): WebhookDispatcher {
  const config: Config = { ...getConfig(), webhooks: { ...getConfig().webhooks, retryScheduleSeconds: schedule } };
  return createWebhookDispatcher({ config });
}

/** Drains the change feed and ticks the worker until `done` holds (conditions, not sleeps). */
async function runUntil<T>(what: string, dispatcher: WebhookDispatcher, done: () => T | undefined | Promise<T | undefined>): Promise<T> {
  return waitFor(what, 60_000, async () => {
    await drainChangeFeed();
    await dispatcher.tick();
    return done();
  }, 150);
}

async function deliveries(token: string, webhookId: string) {
  const res = await deliveriesApp.request(`${HOOKS}/${webhookId}/deliveries`, { headers: bearer(token) });
  assert.equal(res.status, 200);
  return ((await res.json()) as { deliveries: { delivery_id: string; event_id: string; event_type: string; state: string; attempts: { status: number }[]; next_attempt_at: string | null }[] }).deliveries;
}

describe('webhooks', () => {
  it('subscribes, shows the secret once, lists without it, and keeps other accounts out (404)', async () => {
    const alice = await createAccount('pro');
    const bob = await createAccount('pro');
    const { url } = await receiver();
    const made = await subscribe(alice.token, url, ['evidence.anchored']);
    assert.match(made.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(made.secret.slice(6), 'base64').length, 32);
    assert.equal(made.status, 'active');
    const listed = (await (await listApp.request(HOOKS, { headers: bearer(alice.token) })).json()) as { webhooks: Record<string, unknown>[] };
    assert.equal(listed.webhooks.length, 1);
    assert.equal(listed.webhooks[0]?.webhook_id, made.webhook_id);
    assert.ok(!JSON.stringify(listed).includes('whsec_'), 'the list shows no secret');
    assert.deepEqual(((await (await listApp.request(HOOKS, { headers: bearer(bob.token) })).json()) as { webhooks: unknown[] }).webhooks, []);
    for (const res of [
      await deliveriesApp.request(`${HOOKS}/${made.webhook_id}/deliveries`, { headers: bearer(bob.token) }),
      await deleteApp.request(`${HOOKS}/${made.webhook_id}`, { method: 'DELETE', headers: bearer(bob.token) }),
      await retryApp.request(`${HOOKS}/${made.webhook_id}/deliveries/dlv_x/retry`, { method: 'POST', headers: bearer(bob.token) }),
    ]) {
      assert.equal(res.status, 404);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
    }
    const del = await deleteApp.request(`${HOOKS}/${made.webhook_id}`, { method: 'DELETE', headers: bearer(alice.token) });
    assert.equal(del.status, 200);
    assert.equal((await deleteApp.request(`${HOOKS}/${made.webhook_id}`, { method: 'DELETE', headers: bearer(alice.token) })).status, 404);
  });

  it('holds at most 5 endpoints per account (409 webhook_limit_reached)', async () => {
    const carol = await createAccount('pro');
    const { url } = await receiver();
    const results = await Promise.all(Array.from({ length: 7 }, () => createApp.request(HOOKS, json({ url, events: ['evidence.final'] }, carol.token))));
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 409, 409]);
    const listed = (await (await listApp.request(HOOKS, { headers: bearer(carol.token) })).json()) as { webhooks: unknown[] };
    assert.equal(listed.webhooks.length, 5);
  });

  it('answers bad input with 400 problem+json, never a 5xx', async () => {
    const dave = await createAccount('pro');
    const bad: [unknown, string][] = [
      [{}, 'invalid_request'],
      [{ url: 'http://127.0.0.1:1/x' }, 'invalid_request'],
      [{ url: 'http://127.0.0.1:1/x', events: [] }, 'invalid_request'],
      [{ url: 'http://127.0.0.1:1/x', events: ['evidence.deleted'] }, 'invalid_events'],
      [{ url: 'not a url', events: ['evidence.final'] }, 'webhook_url_refused'],
      [{ url: 'ftp://example.com/x', events: ['evidence.final'] }, 'webhook_url_refused'],
      [{ url: 'http://user:pw@127.0.0.1/x', events: ['evidence.final'] }, 'webhook_url_refused'],
      [{ url: 'http://10.0.0.1/x', events: ['evidence.final'] }, 'webhook_url_refused'],
      [{ url: 'http://[::ffff:169.254.169.254]/x', events: ['evidence.final'] }, 'webhook_url_refused'],
      [{ url: 'http://127.0.0.1:1/x', events: ['evidence.final'], extra: 1 }, 'invalid_request'],
      [{ url: 'x'.repeat(3000), events: ['evidence.final'] }, 'invalid_request'],
    ];
    for (const [body, code] of bad) {
      const res = await createApp.request(HOOKS, json(body, dave.token));
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.equal(((await res.json()) as { code: string }).code, code, JSON.stringify(body));
    }
    const malformed = await createApp.request(HOOKS, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(dave.token) }, body: '{"url":' });
    assert.equal(malformed.status, 400);
    for (const path of [`${HOOKS}/${'x'.repeat(65)}/deliveries`, `${HOOKS}/wh_none/deliveries`]) {
      const res = await deliveriesApp.request(path, { headers: bearer(dave.token) });
      assert.ok(res.status === 400 || res.status === 404, `${path}: ${res.status}`);
    }
  });

  it('delivers evidence.anchored, signed as Standard Webhooks says, verified by the standardwebhooks package', async () => {
    const erin = await createAccount('pro');
    const { r, url } = await receiver();
    const hook = await subscribe(erin.token, url);
    r.secret = hook.secret;
    const hash = await anchor(erin.apiKey);
    const dispatcher = worker();
    const got = await runUntil('the anchored event at the receiver', dispatcher, () => r.received.find((x) => x.payload?.type === 'evidence.anchored' && x.payload.data.image_hash === hash));
    // The local chain mines at once and counts mined as final: the final receipt's event follows, with its block.
    const final = await runUntil('the final event at the receiver', dispatcher, () => r.received.find((x) => x.payload?.type === 'evidence.final' && x.payload.data.image_hash === hash));
    assert.equal(final.verified, true);
    assert.equal(typeof final.payload?.data.block_number, 'number');
    assert.notEqual(final.headers['webhook-id'], got.headers['webhook-id']);
    await dispatcher.idle();
    assert.equal(got.verified, true, 'standardwebhooks verifies the signature');
    assert.equal(got.payload?.type, 'evidence.anchored');
    assert.ok(!Number.isNaN(Date.parse(String(got.payload?.timestamp))));
    assert.match(String(got.headers['webhook-id']), /^msg_[0-9a-f]{32}$/);
    assert.match(String(got.headers['webhook-timestamp']), /^\d{10}$/);
    assert.match(String(got.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/);
    assert.match(String(got.payload?.data.tx_hash), /^0x[0-9a-f]{64}$/);
    assert.match(String(got.payload?.data.verify_url), new RegExp(`/api/v2/evidence/verify/${hash}$`));
    const listed = await waitFor('the delivery recorded as delivered', 30_000, async () => (await deliveries(erin.token, hook.webhook_id)).find((d) => d.event_id === got.headers['webhook-id'] && d.state === 'delivered'));
    assert.deepEqual(listed.attempts.map((a) => a.status), [200]);
    assert.equal(listed.next_attempt_at, null);
    // Sent again now, by hand: the same webhook-id, verified again.
    const res = await retryApp.request(`${HOOKS}/${hook.webhook_id}/deliveries/${listed.delivery_id}/retry`, { method: 'POST', headers: bearer(erin.token) });
    assert.equal(res.status, 200);
    const again = await runUntil('the delivery sent again', dispatcher, () => (r.received.filter((x) => x.headers['webhook-id'] === got.headers['webhook-id']).length >= 2 ? true : undefined));
    assert.equal(again, true);
    assert.ok(r.received.every((x) => x.verified));
  });

  it('retries a failing receiver on the schedule with the same webhook-id, and fails the delivery when the schedule runs out', async () => {
    const frank = await createAccount('pro');
    const { r, url } = await receiver((n) => (n <= 2 ? 500 : 200));
    const hook = await subscribe(frank.token, url, ['evidence.anchored']);
    r.secret = hook.secret;
    await anchor(frank.apiKey);
    const dispatcher = worker([0.2, 0.2, 0.2]);
    const delivered = await runUntil('delivered on the third attempt', dispatcher, async () => (await deliveries(frank.token, hook.webhook_id)).find((d) => d.state === 'delivered'));
    assert.deepEqual(delivered.attempts.map((a) => a.status), [500, 500, 200]);
    assert.equal(new Set(r.received.map((x) => x.headers['webhook-id'])).size, 1, 'one webhook-id on every attempt');
    assert.ok(r.received.every((x) => x.verified));

    // A receiver that never answers 2xx: the first attempt and one after each of the 3 waits, then failed.
    r.setAnswer(() => 503);
    await anchor(frank.apiKey);
    const failed = await runUntil('failed after the schedule', dispatcher, async () => (await deliveries(frank.token, hook.webhook_id)).find((d) => d.state === 'failed'));
    await dispatcher.idle();
    assert.deepEqual(failed.attempts.map((a) => a.status), [503, 503, 503, 503]);
    // Failures alone (less than 5 days) leave the endpoint active.
    const listed = (await (await listApp.request(HOOKS, { headers: bearer(frank.token) })).json()) as { webhooks: { status: string }[] };
    assert.equal(listed.webhooks[0]?.status, 'active');
  });

  it('disables the endpoint at once on 410 Gone; a retry is then 409 webhook_disabled', async () => {
    const gina = await createAccount('pro');
    const { r, url } = await receiver(() => 410);
    const hook = await subscribe(gina.token, url, ['evidence.anchored']);
    r.secret = hook.secret;
    await anchor(gina.apiKey);
    const dispatcher = worker();
    const failed = await runUntil('the 410 delivery failed', dispatcher, async () => (await deliveries(gina.token, hook.webhook_id)).find((d) => d.state === 'failed'));
    await dispatcher.idle();
    assert.deepEqual(failed.attempts.map((a) => a.status), [410]);
    const listed = (await (await listApp.request(HOOKS, { headers: bearer(gina.token) })).json()) as { webhooks: { status: string; disabled_reason: string | null }[] };
    assert.deepEqual([listed.webhooks[0]?.status, listed.webhooks[0]?.disabled_reason], ['disabled', 'gone']);
    const retry = await retryApp.request(`${HOOKS}/${hook.webhook_id}/deliveries/${failed.delivery_id}/retry`, { method: 'POST', headers: bearer(gina.token) });
    assert.equal(retry.status, 409);
    assert.equal(((await retry.json()) as { code: string }).code, 'webhook_disabled');
    // Nothing more is sent to it.
    await anchor(gina.apiKey);
    await drainChangeFeed();
    await dispatcher.tick();
    await dispatcher.idle();
    assert.equal(r.received.length, 1);
  });

  it('a fast receiver\'s backlog goes out in a few looks at the due index, not 5 a look', async () => {
    const hana = await createAccount('pro');
    const { r, url } = await receiver();
    const hook = await subscribe(hana.token, url, ['evidence.anchored']);
    r.secret = hook.secret;
    const anchored = await Promise.all(Array.from({ length: 40 }, () => anchor(hana.apiKey)));
    await drainChangeFeed();
    // Looks 6 s apart on the worker's clock (what it defers comes back after 5 s), each waiting for
    // its sends: how many looks the backlog takes, whatever the machine's speed.
    let offsetMs = 0;
    const config: Config = { ...getConfig(), webhooks: { ...getConfig().webhooks, retryScheduleSeconds: [0.2, 0.2] } };
    const dispatcher = createWebhookDispatcher({ config, clock: () => new Date(Date.now() + offsetMs) });
    let ticks = 0;
    while (r.received.length < anchored.length && ticks < 12) {
      await dispatcher.tick();
      await dispatcher.idle();
      ticks += 1;
      offsetMs += 6_000;
    }
    assert.equal(new Set(r.received.map((x) => x.payload?.data.image_hash)).size, anchored.length);
    // The first look hands 5 (the endpoint's pace is not known yet); once it answered fast, the rest at once.
    assert.ok(ticks <= 3, `${ticks} looks for ${anchored.length} deliveries (5 a look would take 8)`);
  });

  it('a slow receiver does not delay another account\'s deliveries', async () => {
    const slowAccount = await createAccount('pro');
    const fastAccount = await createAccount('pro');
    let release: () => void = () => undefined;
    const held = new Promise<number>((resolve) => (release = () => resolve(200)));
    const slow = await receiver(() => held);
    const fast = await receiver();
    const slowHook = await subscribe(slowAccount.token, slow.url, ['evidence.anchored']);
    const fastHook = await subscribe(fastAccount.token, fast.url, ['evidence.anchored']);
    slow.r.secret = slowHook.secret;
    fast.r.secret = fastHook.secret;
    const dispatcher = worker();
    await anchor(slowAccount.apiKey);
    await runUntil('the slow receiver holding its request', dispatcher, () => (slow.r.received.length > 0 ? true : undefined));
    // While the slow receiver holds its answer, the other account's event goes through.
    await anchor(fastAccount.apiKey);
    await runUntil('the other account\'s delivery', dispatcher, () => (fast.r.received.length > 0 ? true : undefined));
    assert.equal(fast.r.received[0]?.verified, true);
    release();
    await dispatcher.idle();
  });
});
