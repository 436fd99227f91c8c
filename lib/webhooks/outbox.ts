/**
 * The outbox (docs/webhooks.md "Never lost"): for every event of a batch of evidence-table changes,
 * one delivery per active endpoint of the event's account that subscribed to its type.
 *
 * Where the fact is written (the evidence item's anchored, final or record write) is where the
 * event is recorded too: the change itself, in the table's stream (AWS, 24 h retention) or the
 * embedded store's change feed (`npm start`), is part of that same write. This module turns the
 * changes into delivery items; the consumer acknowledges a batch (the feed trims it, Lambda moves
 * its checkpoint) only after every delivery of it is written, so a kill at any point leaves the
 * changes to be read again, and writing a delivery again finds it there (its key is derived from
 * the endpoint and the event). Nothing is lost, nothing is made twice.
 */
import type { ItemChange } from '../evidence/derived.js';
import { type EventLinks, webhookEventsOf } from './events.js';
import type { Delivery, WebhookEndpoint, WebhookEvent, WebhookStore } from './records.js';

/** The delivery id of `event` to an endpoint: its time (sortable, fixed width) and the event's id. */
export function deliveryIdOf(event: Pick<WebhookEvent, 'id' | 'timestamp'>): string {
  const at = new Date(event.timestamp);
  const stamp = Number.isNaN(at.getTime()) ? '00000000000000000' : at.toISOString().replace(/[^0-9]/g, '');
  return `dlv_${stamp}_${event.id.replace(/^msg_/, '')}`;
}

/** The body every attempt of the event sends: `{ type, timestamp, data }` (Standard Webhooks). */
export function eventBody(event: WebhookEvent): string {
  return JSON.stringify({ type: event.type, timestamp: event.timestamp, data: event.data });
}

/** The delivery of `event` to `endpoint`, due at once. */
export function newDelivery(event: WebhookEvent, endpoint: WebhookEndpoint, nowIso: string): Omit<Delivery, 'v'> {
  return {
    delivery_id: deliveryIdOf(event),
    webhook_id: endpoint.webhook_id,
    account_id: event.account_id,
    event_id: event.id,
    event_type: event.type,
    body: eventBody(event),
    created_at: new Date(event.timestamp).toString() === 'Invalid Date' ? nowIso : event.timestamp,
    state: 'pending',
    attempts: [],
    next_attempt_at: nowIso,
  };
}

/**
 * Writes the deliveries of the changes' events; how many were made now (a redelivered change makes
 * none). Throws when the store fails: the consumer must then read the batch again.
 */
export async function recordWebhookEvents(store: WebhookStore, changes: ItemChange[], links: EventLinks, now: () => Date = () => new Date()): Promise<number> {
  const events = changes.flatMap((change) => webhookEventsOf(change, links));
  if (events.length === 0) return 0;
  const byAccount = new Map<string, WebhookEvent[]>();
  for (const event of events) byAccount.set(event.account_id, [...(byAccount.get(event.account_id) ?? []), event]);
  let made = 0;
  await Promise.all(
    [...byAccount].map(async ([accountId, accountEvents]) => {
      const { endpoints } = await store.getEndpoints(accountId);
      const active = endpoints.filter((e) => e.status === 'active');
      if (active.length === 0) return;
      const nowIso = now().toISOString();
      for (const event of accountEvents) {
        for (const endpoint of active) {
          if (!endpoint.events.includes(event.type)) continue;
          if (await store.createDelivery({ ...newDelivery(event, endpoint, nowIso), v: 1 })) made++;
        }
      }
    }),
  );
  return made;
}
