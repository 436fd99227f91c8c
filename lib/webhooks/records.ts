/**
 * What the webhooks table holds (docs/webhooks.md), and the port the domain stores it through
 * (lib/store/webhook-table.ts implements it). Types only.
 *
 * - The endpoints of one account live in ONE item (at most 5, a few hundred bytes each), written
 *   as a versioned move (conditional on the version read): the limit of 5 holds under concurrent
 *   creates, and a disable by the delivery worker never overwrites a delete.
 * - A delivery is one item per (endpoint, event), keyed deterministically from both, so that
 *   writing it again (a redelivered change of the evidence table) finds it there and changes
 *   nothing. While it waits for an attempt it is on the sparse `due` index (`due_shard`,
 *   `next_attempt_at`); delivered or failed, it leaves the index.
 */

/** The events a receiver may subscribe to. */
export const WEBHOOK_EVENT_TYPES = ['evidence.anchored', 'evidence.final', 'evidence.record'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Why an endpoint was disabled: it answered 410 Gone, or every attempt failed for 5 days. */
export type DisabledReason = 'gone' | 'failing';

export interface WebhookEndpoint {
  webhook_id: string;
  url: string;
  events: WebhookEventType[];
  /** The signing secret, sealed (lib/crypto/secret-box.ts): never stored nor logged in clear. */
  secret_sealed: string;
  status: 'active' | 'disabled';
  disabled_reason?: DisabledReason | undefined;
  disabled_at?: string | undefined;
  created_at: string;
  /** Since when every attempt to it failed (cleared by a success): 5 days of it disable the endpoint. */
  failing_since?: string | undefined;
}

/** The endpoints of one account as read, with the version a write must be conditional on (0: none yet). */
export interface AccountEndpoints {
  account_id: string;
  endpoints: WebhookEndpoint[];
  v: number;
}

/** One event as a receiver gets it: the body is `{ type, timestamp, data }`, its id the `webhook-id` header. */
export interface WebhookEvent {
  /** `msg_` + 32 hex: derived from the account, the type and the hash, so the same fact is the same event. */
  id: string;
  account_id: string;
  type: WebhookEventType;
  /** ISO 8601: when the fact became true (the anchor's time, the final receipt's, the record's). */
  timestamp: string;
  data: Record<string, unknown>;
}

export interface DeliveryAttempt {
  at: string;
  /** The HTTP status answered, or 0 when none came (refused, timed out, connection failed). */
  status: number;
  /** Why it failed, in a few words (never the answer's body). */
  error?: string | undefined;
}

export type DeliveryState = 'pending' | 'delivered' | 'failed';

export interface Delivery {
  delivery_id: string;
  webhook_id: string;
  account_id: string;
  event_id: string;
  event_type: WebhookEventType;
  /** The exact body every attempt sends (and signs): fixed when the delivery is made. */
  body: string;
  /** The event's time (deterministic: the sort key of the endpoint's deliveries); `webhook-timestamp` is each attempt's own time. */
  created_at: string;
  state: DeliveryState;
  attempts: DeliveryAttempt[];
  /** While pending: when the next attempt is due (ISO 8601). */
  next_attempt_at?: string | undefined;
  /** Why it failed for good: the schedule ran out, the endpoint was disabled or deleted. */
  failed_reason?: string | undefined;
  /** Moves on with every write: the condition of the next. */
  v: number;
}

/** The port: lib/store/webhook-table.ts. Every write is conditional on what it was computed from. */
export interface WebhookStore {
  /** The account's endpoints, strongly consistent. */
  getEndpoints(accountId: string): Promise<AccountEndpoints>;
  /** Writes the account's endpoints if their version is still `read.v`; false when it moved (read again and decide again). */
  putEndpoints(read: AccountEndpoints, endpoints: WebhookEndpoint[]): Promise<boolean>;
  /** Makes the delivery unless it exists (a redelivered change): true when it was made now. */
  createDelivery(delivery: Delivery): Promise<boolean>;
  getDelivery(webhookId: string, deliveryId: string): Promise<Delivery | undefined>;
  /** The endpoint's deliveries, newest first. */
  listDeliveries(webhookId: string, limit: number): Promise<Delivery[]>;
  /** Pending deliveries whose next attempt is due at `nowIso` or before, oldest first. */
  dueDeliveries(nowIso: string, limit: number): Promise<Delivery[]>;
  /** Writes the delivery if its version is still `read.v` (the write sets v + 1); false otherwise. */
  updateDelivery(read: Delivery, next: Omit<Delivery, 'v'>): Promise<boolean>;
}
