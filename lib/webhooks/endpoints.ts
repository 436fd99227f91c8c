/**
 * An account's webhook endpoints and their deliveries (POST/GET/DELETE /api/v2/account/webhooks…;
 * docs/webhooks.md). At most 5 endpoints per account; an account sees only its own (another's is
 * 404, as an unknown one). The signing secret is made here, shown once in the answer to the
 * create, and stored only sealed (SecretSealer: AES-256-GCM under a KMS-protected key in AWS).
 */
import { randomBytes } from 'node:crypto';
import { conflictError, invalid, notFoundError } from '../errors.js';
import { randomBase62 } from '../accounts/random.js';
import type { AccountEndpoints, Delivery, DisabledReason, WebhookEndpoint, WebhookEventType, WebhookStore } from './records.js';
import { WEBHOOK_EVENT_TYPES } from './records.js';

export const MAX_ENDPOINTS = 5;
/** The most deliveries GET …/deliveries lists (the newest). */
export const MAX_LISTED_DELIVERIES = 50;

/** Seals and opens the signing secrets; the context binds a sealed secret to its endpoint. */
export interface SecretSealer {
  seal(secret: string, context: { webhook_id: string; account_id: string }): Promise<string>;
  open(sealed: string, context: { webhook_id: string; account_id: string }): Promise<string>;
}

/** Whether a URL may be a target (lib/net/address-policy.ts): undefined, or why not. Resolves the host. */
export type TargetCheck = (url: string) => Promise<string | undefined>;

/** An endpoint as the API shows it: never its secret. */
export interface EndpointView {
  webhook_id: string;
  url: string;
  events: WebhookEventType[];
  status: 'active' | 'disabled';
  disabled_reason: DisabledReason | null;
  disabled_at: string | null;
  created_at: string;
}

export interface DeliveryView {
  delivery_id: string;
  event_id: string;
  event_type: WebhookEventType;
  created_at: string;
  state: Delivery['state'];
  attempts: Delivery['attempts'];
  next_attempt_at: string | null;
  failed_reason: string | null;
}

const WRITE_TRIES = 5;

export function endpointView(e: WebhookEndpoint): EndpointView {
  return {
    webhook_id: e.webhook_id,
    url: e.url,
    events: e.events,
    status: e.status,
    disabled_reason: e.disabled_reason ?? null,
    disabled_at: e.disabled_at ?? null,
    created_at: e.created_at,
  };
}

export function deliveryView(d: Delivery): DeliveryView {
  return {
    delivery_id: d.delivery_id,
    event_id: d.event_id,
    event_type: d.event_type,
    created_at: d.created_at,
    state: d.state,
    attempts: d.attempts,
    next_attempt_at: d.state === 'pending' ? (d.next_attempt_at ?? null) : null,
    failed_reason: d.failed_reason ?? null,
  };
}

/**
 * Moves the account's endpoints from the version read to `change(read)`'s; read again and decided
 * again when another write moved them meanwhile. `change` returns undefined to write nothing.
 */
export async function moveEndpoints<T>(
  store: WebhookStore,
  accountId: string,
  change: (read: AccountEndpoints) => { endpoints: WebhookEndpoint[]; result: T } | undefined,
): Promise<T | undefined> {
  for (let i = 0; i < WRITE_TRIES; i++) {
    const read = await store.getEndpoints(accountId);
    const next = change(read);
    if (!next) return undefined;
    if (await store.putEndpoints(read, next.endpoints)) return next.result;
  }
  throw conflictError('concurrent_change', 'The endpoints changed concurrently too often; try again.', {}, 1);
}

export class WebhookService {
  constructor(
    private readonly store: WebhookStore,
    private readonly sealer: SecretSealer,
    private readonly checkTarget: TargetCheck,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** Subscribes `url` to `events`: the endpoint and its secret (`whsec_` + base64 of 32 random bytes), shown this once. */
  async create(accountId: string, url: string, events: readonly string[]): Promise<EndpointView & { secret: string }> {
    const types = [...new Set(events)];
    const unknown = types.filter((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
    if (types.length === 0 || unknown.length > 0) {
      throw invalid('invalid_events', `events must list one or more of ${WEBHOOK_EVENT_TYPES.join(', ')}${unknown.length ? `; unknown: ${unknown.join(', ')}` : ''}.`);
    }
    const refused = await this.checkTarget(url);
    if (refused) throw invalid('webhook_url_refused', `The URL cannot be a webhook target: ${refused}.`);
    const current = await this.store.getEndpoints(accountId);
    if (current.endpoints.length >= MAX_ENDPOINTS) throw limitReached();
    const webhookId = `wh_${randomBase62(20)}`;
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const endpoint: WebhookEndpoint = {
      webhook_id: webhookId,
      url,
      events: types as WebhookEventType[],
      secret_sealed: await this.sealer.seal(secret, { webhook_id: webhookId, account_id: accountId }),
      status: 'active',
      created_at: this.clock().toISOString(),
    };
    const made = await moveEndpoints(this.store, accountId, (read) => {
      if (read.endpoints.length >= MAX_ENDPOINTS) throw limitReached();
      return { endpoints: [...read.endpoints, endpoint], result: endpoint };
    });
    return { ...endpointView(made ?? endpoint), secret };
  }

  async list(accountId: string): Promise<EndpointView[]> {
    return (await this.store.getEndpoints(accountId)).endpoints.map(endpointView);
  }

  /** Deletes the endpoint; its pending deliveries fail at their next attempt (endpoint deleted). */
  async remove(accountId: string, webhookId: string): Promise<void> {
    await moveEndpoints(this.store, accountId, (read) => {
      if (!read.endpoints.some((e) => e.webhook_id === webhookId)) throw webhookNotFound();
      return { endpoints: read.endpoints.filter((e) => e.webhook_id !== webhookId), result: true };
    });
  }

  /** The endpoint's newest deliveries. */
  async deliveries(accountId: string, webhookId: string): Promise<DeliveryView[]> {
    await this.ownEndpoint(accountId, webhookId);
    return (await this.store.listDeliveries(webhookId, MAX_LISTED_DELIVERIES)).map(deliveryView);
  }

  /**
   * Sends the delivery again now: it is due at once (again pending if it had failed; a delivered
   * one is sent once more, with the same `webhook-id`). 409 `webhook_disabled` on a disabled endpoint.
   */
  async retry(accountId: string, webhookId: string, deliveryId: string): Promise<DeliveryView> {
    const endpoint = await this.ownEndpoint(accountId, webhookId);
    if (endpoint.status !== 'active') throw conflictError('webhook_disabled', `The endpoint is disabled (${endpoint.disabled_reason ?? 'disabled'}): create a new one to receive deliveries again.`);
    for (let i = 0; i < WRITE_TRIES; i++) {
      const read = await this.store.getDelivery(webhookId, deliveryId);
      if (!read || read.account_id !== accountId) throw notFoundError('delivery_not_found', 'No delivery of that id on this endpoint.');
      const { v: _v, failed_reason: _f, ...rest } = read;
      const next = { ...rest, state: 'pending' as const, next_attempt_at: this.clock().toISOString() };
      if (await this.store.updateDelivery(read, next)) return deliveryView({ ...next, v: read.v + 1 });
    }
    throw conflictError('concurrent_change', 'The delivery changed concurrently too often; try again.', {}, 1);
  }

  private async ownEndpoint(accountId: string, webhookId: string): Promise<WebhookEndpoint> {
    const endpoint = (await this.store.getEndpoints(accountId)).endpoints.find((e) => e.webhook_id === webhookId);
    if (!endpoint) throw webhookNotFound();
    return endpoint;
  }
}

const limitReached = () => conflictError('webhook_limit_reached', `An account holds at most ${MAX_ENDPOINTS} webhook endpoints: delete one first.`);
const webhookNotFound = () => notFoundError('webhook_not_found', 'No webhook endpoint of that id on this account.');
