/**
 * Webhooks in a crash experiment (CrashRunOptions.webhooks, issue 37): a receiver as a user writes
 * it (test/webhooks/support.ts, on `standardwebhooks`) subscribed through the public API before the
 * run, and the verdict on what reached it once the run is over (docs/webhooks.md "Never lost"):
 *  - every photo that verifies had its `evidence.anchored` event delivered, verified;
 *  - every fact (an event type of one image hash) reached the receiver under one `webhook-id`
 *    only: a change the feed read again after a kill makes no second event;
 *  - the endpoint holds one delivery per event (GET …/deliveries; it lists the newest 50, so a
 *    longer run is judged on those);
 *  - every request verified with the endpoint's secret.
 * At least once is the promise: the same `webhook-id` may arrive twice after a kill.
 */
import { Receiver } from '../webhooks/support.js';
import { fetchRetry } from './crash-reads.js';
import type { Service } from './crash-service.js';
import { waitFor } from './wait.js';

export interface WebhookWatch {
  receiver: Receiver;
  webhookId: string;
}

const EVENTS = ['evidence.anchored', 'evidence.final'];

/** Starts a receiver and subscribes it for `account` (JWT), to the anchored and final events. */
export async function subscribeReceiver(service: Service, account: { token: string }): Promise<WebhookWatch> {
  const receiver = new Receiver();
  const url = await receiver.start();
  const res = await fetchRetry(`${service.base}/api/v2/account/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${account.token}` },
    body: JSON.stringify({ url, events: EVENTS }),
  });
  if (res.status !== 200) throw new Error(`subscribing the receiver: ${res.status} ${res.text}`);
  const body = JSON.parse(res.text) as { webhook_id: string; secret: string };
  receiver.secret = body.secret;
  return { receiver, webhookId: body.webhook_id };
}

/** The verdict: violations (empty: every promise held), and what the receiver got. */
export async function judgeWebhooks(
  watch: WebhookWatch,
  service: Service,
  account: { token: string },
  anchored: string[],
  deadline: number,
): Promise<{ violations: string[]; received: number; events: number }> {
  const { receiver } = watch;
  const delivered = (h: string) => receiver.received.some((r) => r.verified && r.payload?.type === 'evidence.anchored' && r.payload.data.image_hash === h);
  await waitFor('every anchored photo’s event at the receiver', Math.max(5_000, deadline - Date.now()), () => (anchored.every(delivered) ? true : undefined), 250).catch(() => undefined);
  const violations: string[] = [];
  for (const h of anchored.filter((x) => !delivered(x))) violations.push(`${h} verifies, but its evidence.anchored event never reached the receiver`);
  for (const r of receiver.received.filter((x) => !x.verified)) violations.push(`a request with webhook-id ${String(r.headers['webhook-id'])} did not verify with the endpoint's secret`);
  const idsOf = new Map<string, Set<string>>();
  for (const r of receiver.received.filter((x) => x.verified && x.payload)) {
    const fact = `${r.payload!.type} of ${String(r.payload!.data.image_hash)}`;
    idsOf.set(fact, (idsOf.get(fact) ?? new Set()).add(String(r.headers['webhook-id'])));
  }
  for (const [fact, ids] of idsOf) if (ids.size > 1) violations.push(`${fact} reached the receiver under ${ids.size} webhook-ids: ${[...ids].join(', ')}`);
  const res = await fetchRetry(`${service.base}/api/v2/account/webhooks/${watch.webhookId}/deliveries`, { headers: { authorization: `Bearer ${account.token}` } });
  if (res.status !== 200) violations.push(`GET …/deliveries answered ${res.status}`);
  else {
    const perEvent = new Map<string, number>();
    for (const d of (JSON.parse(res.text) as { deliveries: { event_id: string }[] }).deliveries) perEvent.set(d.event_id, (perEvent.get(d.event_id) ?? 0) + 1);
    for (const [event, n] of perEvent) if (n > 1) violations.push(`event ${event} has ${n} deliveries to one endpoint`);
  }
  return { violations, received: receiver.received.length, events: idsOf.size };
}
