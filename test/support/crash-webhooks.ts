/**
 * Webhooks in a crash experiment (CrashRunOptions.webhooks, issue 37): a receiver as a user writes
 * it (test/webhooks/support.ts, on `standardwebhooks`) subscribed through the public API before the
 * run, and the verdict on what reached it once the run is over (docs/webhooks.md "Never lost"):
 *  - every photo that verifies had its `evidence.anchored` event delivered, verified;
 *  - every fact (an event type of one image hash) reached the receiver under one `webhook-id`
 *    only: a change the feed read again after a kill makes no second event;
 *  - the endpoint holds one delivery per event (read from the webhooks table itself, as the
 *    verdict reads the sealed batches: GET …/deliveries lists only the newest 50); an event that
 *    did not arrive is reported with its delivery's state and attempts, or as never made;
 *  - every request verified with the endpoint's secret.
 * At least once is the promise: the same `webhook-id` may arrive twice after a kill.
 */
import { DynamoDBClient, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
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
export async function judgeWebhooks(watch: WebhookWatch, service: Service, anchored: string[], deadline: number): Promise<{ violations: string[]; received: number; events: number }> {
  const { receiver } = watch;
  const delivered = (h: string) => receiver.received.some((r) => r.verified && r.payload?.type === 'evidence.anchored' && r.payload.data.image_hash === h);
  await waitFor('every anchored photo’s event at the receiver', Math.max(5_000, deadline - Date.now()), () => (anchored.every(delivered) ? true : undefined), 250).catch(() => undefined);
  const violations: string[] = [];
  const deliveries = await readDeliveries(`http://127.0.0.1:${service.ports.dynamo}`, watch.webhookId).catch((error: unknown) => {
    violations.push(`the webhooks table could not be read: ${(error as Error).message}`);
    return [];
  });
  const byEvent = new Map<string, StoredDelivery[]>();
  for (const d of deliveries) byEvent.set(d.event_id, [...(byEvent.get(d.event_id) ?? []), d]);
  for (const [event, list] of byEvent) if (list.length > 1) violations.push(`event ${event} has ${list.length} deliveries to one endpoint`);
  for (const h of anchored.filter((x) => !delivered(x))) {
    const mine = deliveries.filter((d) => d.event_type === 'evidence.anchored' && d.image_hash === h);
    const state = mine.length === 0 ? 'no delivery was ever made' : mine.map((d) => `delivery ${d.delivery_id} ${d.state}, attempts [${d.attempts.join(', ')}], next ${d.next_attempt_at ?? '-'}`).join('; ');
    violations.push(`${h} verifies, but its evidence.anchored event never reached the receiver (${state})`);
  }
  for (const r of receiver.received.filter((x) => !x.verified)) violations.push(`a request with webhook-id ${String(r.headers['webhook-id'])} did not verify with the endpoint's secret`);
  const idsOf = new Map<string, Set<string>>();
  for (const r of receiver.received.filter((x) => x.verified && x.payload)) {
    const fact = `${r.payload!.type} of ${String(r.payload!.data.image_hash)}`;
    idsOf.set(fact, (idsOf.get(fact) ?? new Set()).add(String(r.headers['webhook-id'])));
  }
  for (const [fact, ids] of idsOf) if (ids.size > 1) violations.push(`${fact} reached the receiver under ${ids.size} webhook-ids: ${[...ids].join(', ')}`);
  return { violations, received: receiver.received.length, events: idsOf.size };
}

interface StoredDelivery {
  delivery_id: string;
  event_id: string;
  event_type: string;
  image_hash: string | undefined;
  state: string;
  attempts: number[];
  next_attempt_at: string | undefined;
}

/** Every delivery to the endpoint, straight from the local webhooks table (`pk = wh#<webhook_id>`). */
async function readDeliveries(endpoint: string, webhookId: string, table = 'evidence-local-webhooks'): Promise<StoredDelivery[]> {
  const db = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 3 });
  const out: StoredDelivery[] = [];
  try {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await db.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start, ConsistentRead: true }));
      for (const raw of page.Items ?? []) {
        const item = unmarshall(raw) as Record<string, unknown>;
        if (item.pk !== `wh#${webhookId}`) continue;
        const body = JSON.parse(String(item.body ?? '{}')) as { data?: { image_hash?: string } };
        out.push({
          delivery_id: String(item.delivery_id),
          event_id: String(item.event_id),
          event_type: String(item.event_type),
          image_hash: body.data?.image_hash,
          state: String(item.state),
          attempts: ((item.attempts as { status: number }[] | undefined) ?? []).map((a) => a.status),
          next_attempt_at: typeof item.next_attempt_at === 'string' ? item.next_attempt_at : undefined,
        });
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return out;
  } finally {
    db.destroy();
  }
}
