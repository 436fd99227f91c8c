/**
 * The delivery worker (docs/webhooks.md "Delivery"): takes the due deliveries from the store's
 * sparse `due` index, signs each as Standard Webhooks says and sends it, then records the attempt
 * and what follows (delivered; tried again on the schedule; failed; the endpoint disabled).
 * In AWS the scheduled function functions/jobs/webhook-deliver.ts runs it; with `npm start` the
 * local stack ticks it every second (lib/local/stack.ts).
 *
 * Isolation: the deliveries of one endpoint are sent by one runner (a few at a time), and the
 * runners of different endpoints run side by side (at most `maxEndpoints` per process). A slow
 * endpoint (each attempt may take up to the sender's 15 s) holds only its own runner. Each tick
 * tops up every runner's queue with its endpoint's due deliveries, claiming them, as many as the
 * runner sends in about {@link FILL_MS} at the pace its endpoint has answered so far (1 for an
 * endpoint that takes 15 s, up to {@link QUEUE_MAX} for a fast one), and defers the rest a few
 * seconds: a backlog never stands at the head of the index in front of other endpoints'
 * deliveries, and a fast endpoint is sent tens a second (a Pro account's anchors make 7 events a
 * second at its rate limit, with the final receipts).
 *
 * At least once: a delivery is claimed (its next attempt moved past a lease, conditional on the
 * version read) before it is sent, and its outcome is written conditional on the claim. A worker
 * that dies with a delivery in flight leaves it claimed; it is due again when the lease ends, and
 * is sent again with the same `webhook-id` (receivers deduplicate by it).
 */
import { createHmac } from 'node:crypto';
import { type SecretSealer, moveEndpoints } from './endpoints.js';
import type { Delivery, DeliveryAttempt, WebhookEndpoint, WebhookStore } from './records.js';
import { failedTooLong, nextAttemptAt, verdictOf } from './schedule.js';

/** Sends one signed request (lib/net/webhook-http.ts): address checks, 15 s deadline, no redirects, a few KB read. */
export type WebhookSend = (url: string, headers: Record<string, string>, body: string) => Promise<Omit<DeliveryAttempt, 'at'>>;

export interface DispatcherDeps {
  store: WebhookStore;
  sealer: SecretSealer;
  send: WebhookSend;
  /** Seconds between attempts (WEBHOOK_RETRY_SCHEDULE; schedule.ts). */
  schedule: readonly number[];
  clock?: () => Date;
  random?: () => number;
  /** What happened, for the logs and metrics: never a secret or a body. */
  report?: (event: DispatchEvent) => void;
}

export type DispatchEvent =
  | { kind: 'delivered' | 'retry' | 'failed'; webhook_id: string; delivery_id: string; status: number; attempt: number; error?: string | undefined }
  | { kind: 'disabled'; webhook_id: string; reason: 'gone' | 'failing' };

/** How long a claimed delivery stays off the index: longer than an attempt's 15 s deadline plus its writes. */
export const CLAIM_LEASE_MS = 30_000;
/** A claim with less than this left is renewed before its attempt starts. */
const RENEW_BELOW_MS = 20_000;
/** How far a tick pushes the due deliveries of a busy endpoint. */
export const DEFER_MS = 5_000;
/** How much sending a runner's queue holds: what its endpoint's pace sends in this long. */
const FILL_MS = 15_000;
/**
 * Attempts a runner has in flight at once to its endpoint: one after the other, a receiver that
 * answers in 40 ms (with the attempt's reads and writes) takes 25 a second, fewer than an account
 * anchoring at 10 a second makes with its final receipts (measured: `npm run chaos`, 2,863 events
 * in 136 s). Standard Webhooks promises no order; receivers order by the payload's timestamp.
 */
const PARALLEL = 4;
/** Most deliveries one runner holds. */
const QUEUE_MAX = 50;
/** The pace assumed of an endpoint not answered yet (5 deliveries in a queue). */
const FIRST_PACE_MS = (FILL_MS * PARALLEL) / 5;
const PAGE = 100;

/** One endpoint's runner: its claimed deliveries, sent PARALLEL at a time. */
interface Runner {
  queue: Delivery[];
  /** The delivery ids queued or being sent. */
  ids: Set<string>;
}

/** The Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the secret's bytes. */
export function signatureOf(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

export class WebhookDispatcher {
  private readonly runners = new Map<string, Runner>();
  private readonly running = new Map<string, Promise<void>>();
  /** Milliseconds per attempt of each endpoint so far (a moving average): how much its queue holds. */
  private readonly pace = new Map<string, number>();
  private readonly secrets = new Map<string, string>();
  private readonly clock: () => Date;
  private readonly random: () => number;

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly maxEndpoints = 32,
  ) {
    this.clock = deps.clock ?? (() => new Date());
    this.random = deps.random ?? Math.random;
  }

  /** Endpoints whose runner is sending now. */
  get busy(): number {
    return this.running.size;
  }

  /**
   * One look at the due index: tops up each endpoint's runner with its due deliveries (starting one
   * where there is none, up to the bound), claimed, as many as its queue holds; defers the rest.
   * Returns how many deliveries it handed to runners, and when the oldest due one was due (epoch
   * ms; how late the worker is: an alarm watches it). Does not wait for the runners (idle() does).
   */
  async tick(stopAfterMs = Number.POSITIVE_INFINITY): Promise<{ handed: number; oldestDueMs: number | undefined }> {
    const now = this.clock();
    const due = await this.deps.store.dueDeliveries(now.toISOString(), PAGE);
    const byEndpoint = new Map<string, Delivery[]>();
    for (const d of due) byEndpoint.set(d.webhook_id, [...(byEndpoint.get(d.webhook_id) ?? []), d]);
    let handed = 0;
    const writes: Promise<unknown>[] = [];
    const deferred = (deliveries: Delivery[]) => writes.push(...deliveries.map((d) => this.moveTo(d, now.getTime() + DEFER_MS)));
    for (const [webhookId, deliveries] of byEndpoint) {
      const runner = this.runners.get(webhookId);
      if (!runner && this.runners.size >= this.maxEndpoints) {
        deferred(deliveries);
        continue;
      }
      // Queued ones whose lease ran out while they waited are still the runner's (it renews them).
      const fresh = runner ? deliveries.filter((d) => !runner.ids.has(d.delivery_id)) : deliveries;
      const room = Math.max(0, this.capacity(webhookId) - (runner?.ids.size ?? 0));
      const mine = fresh.slice(0, room);
      deferred(fresh.slice(room));
      handed += mine.length;
      writes.push(this.handTo(webhookId, mine, now.getTime() + stopAfterMs));
    }
    await Promise.allSettled(writes);
    const oldest = due[0]?.next_attempt_at;
    return { handed, oldestDueMs: oldest ? Date.parse(oldest) : undefined };
  }

  /** Waits until every runner is done. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  /** How many deliveries the endpoint's runner holds: what it sends in FILL_MS at its pace so far. */
  private capacity(webhookId: string): number {
    return Math.min(QUEUE_MAX, Math.max(1, Math.floor((FILL_MS * PARALLEL) / (this.pace.get(webhookId) ?? FIRST_PACE_MS))));
  }

  /** Claims the deliveries (one lease each) and queues them on the endpoint's runner, starting it when there is none. */
  private async handTo(webhookId: string, deliveries: Delivery[], stopAtMs: number): Promise<void> {
    const claimed = (await Promise.all(deliveries.map((d) => this.claim(d)))).filter((d): d is Delivery => d !== undefined);
    if (claimed.length === 0) return;
    const existing = this.runners.get(webhookId);
    const runner = existing ?? { queue: [], ids: new Set<string>() };
    for (const d of claimed) {
      if (runner.ids.has(d.delivery_id)) continue;
      runner.ids.add(d.delivery_id);
      runner.queue.push(d);
    }
    if (existing) return;
    this.runners.set(webhookId, runner);
    const run = this.run(webhookId, runner, stopAtMs).finally(() => {
      this.runners.delete(webhookId);
      this.running.delete(webhookId);
    });
    this.running.set(webhookId, run);
  }

  /** A claim: the delivery's next attempt moved past a lease, conditional on the version read. */
  private async claim(d: Delivery): Promise<Delivery | undefined> {
    const next = { ...strip(d), next_attempt_at: new Date(this.clock().getTime() + CLAIM_LEASE_MS).toISOString() };
    return (await this.deps.store.updateDelivery(d, next).catch(() => false)) ? { ...next, v: d.v + 1 } : undefined;
  }

  /**
   * Sends the runner's queue, PARALLEL at a time, until it is empty (ticks top it up meanwhile); a
   * claim whose lease would end before its attempt could is renewed first (so a dead worker's
   * deliveries are due again within one lease, and a live one's never are).
   */
  private async run(webhookId: string, runner: Runner, stopAtMs: number): Promise<void> {
    await Promise.all(Array.from({ length: PARALLEL }, () => this.sendQueue(webhookId, runner, stopAtMs)));
  }

  /** One of a runner's PARALLEL loops: takes the next queued delivery until none is left. */
  private async sendQueue(webhookId: string, runner: Runner, stopAtMs: number): Promise<void> {
    for (let d = runner.queue.shift(); d; d = runner.queue.shift()) {
      try {
        // Past the stop (the Lambda's time is running out): the rest come back when their lease ends.
        if (this.clock().getTime() >= stopAtMs) return;
        if (Date.parse(d.next_attempt_at ?? '') - this.clock().getTime() < RENEW_BELOW_MS) {
          const renewed = await this.claim(d);
          if (!renewed) continue;
          d = renewed;
        }
        const started = performance.now();
        await this.attempt(d).catch(() => undefined);
        const ms = performance.now() - started;
        const pace = this.pace.get(webhookId);
        if (this.pace.size > 1000 && pace === undefined) this.pace.clear();
        this.pace.set(webhookId, pace === undefined ? ms : pace * 0.8 + ms * 0.2);
      } finally {
        runner.ids.delete(d.delivery_id);
      }
    }
  }

  private async attempt(claimed: Delivery): Promise<void> {
    const { endpoints } = await this.deps.store.getEndpoints(claimed.account_id);
    const endpoint = endpoints.find((e) => e.webhook_id === claimed.webhook_id);
    if (!endpoint || endpoint.status !== 'active') {
      await this.finish(claimed, { state: 'failed', failed_reason: endpoint ? `endpoint disabled (${endpoint.disabled_reason ?? 'disabled'})` : 'endpoint deleted' });
      return;
    }
    const secret = await this.secretOf(claimed.account_id, endpoint);
    const at = this.clock();
    const timestamp = Math.floor(at.getTime() / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'evidence-anchoring-webhooks/1',
      'webhook-id': claimed.event_id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureOf(secret, claimed.event_id, timestamp, claimed.body),
    };
    // A sender that throws made a failed attempt: it is recorded and retried on the schedule, so the
    // delivery is never left claimed, to be taken again every lease forever.
    const outcome = await Promise.resolve()
      .then(() => this.deps.send(endpoint.url, headers, claimed.body))
      .catch((error: unknown) => ({ status: 0, error: `send failed (${error instanceof Error ? error.message.slice(0, 120) : 'unknown'})` }));
    const attempt: DeliveryAttempt = { at: at.toISOString(), status: outcome.status, ...(outcome.error ? { error: outcome.error } : {}) };
    const attempts = [...claimed.attempts, attempt].slice(-20);
    const verdict = verdictOf(attempt);
    const failedSoFar = claimed.attempts.filter((a) => verdictOf(a) !== 'delivered').length + 1;
    const report = (kind: 'delivered' | 'retry' | 'failed') =>
      this.deps.report?.({ kind, webhook_id: endpoint.webhook_id, delivery_id: claimed.delivery_id, status: attempt.status, attempt: attempts.length, error: attempt.error });
    if (verdict === 'delivered') {
      await this.finish(claimed, { state: 'delivered', attempts });
      report('delivered');
      if (endpoint.failing_since) await this.markEndpoint(claimed.account_id, endpoint.webhook_id, (e) => ({ ...e, failing_since: undefined }));
      return;
    }
    if (verdict === 'gone') {
      await this.finish(claimed, { state: 'failed', attempts, failed_reason: 'the endpoint answered 410 Gone: disabled' });
      report('failed');
      await this.disable(claimed.account_id, endpoint.webhook_id, 'gone');
      return;
    }
    const next = nextAttemptAt(this.deps.schedule, failedSoFar, at.getTime(), this.random());
    if (next === undefined) {
      await this.finish(claimed, { state: 'failed', attempts, failed_reason: `no 2xx in ${attempts.length} attempts` });
      report('failed');
    } else {
      await this.finish(claimed, { state: 'pending', attempts, next_attempt_at: new Date(next).toISOString() });
      report('retry');
    }
    const since = endpoint.failing_since ?? at.toISOString();
    if (failedTooLong(since, at.getTime())) await this.disable(claimed.account_id, endpoint.webhook_id, 'failing');
    else if (!endpoint.failing_since) await this.markEndpoint(claimed.account_id, endpoint.webhook_id, (e) => (e.failing_since ? undefined : { ...e, failing_since: since }));
  }

  private async secretOf(accountId: string, endpoint: WebhookEndpoint): Promise<string> {
    const known = this.secrets.get(endpoint.secret_sealed);
    if (known) return known;
    const secret = await this.deps.sealer.open(endpoint.secret_sealed, { webhook_id: endpoint.webhook_id, account_id: accountId });
    if (this.secrets.size > 1000) this.secrets.clear();
    this.secrets.set(endpoint.secret_sealed, secret);
    return secret;
  }

  /** Writes the delivery's outcome, conditional on the claim (a worker that outlived its lease changes nothing). */
  private async finish(claimed: Delivery, change: Partial<Delivery>): Promise<void> {
    const next = { ...strip(claimed), ...change };
    if (next.state !== 'pending') delete next.next_attempt_at;
    await this.deps.store.updateDelivery(claimed, next);
  }

  private async moveTo(d: Delivery, atMs: number): Promise<boolean> {
    return this.deps.store.updateDelivery(d, { ...strip(d), next_attempt_at: new Date(atMs).toISOString() }).catch(() => false);
  }

  private async disable(accountId: string, webhookId: string, reason: 'gone' | 'failing'): Promise<void> {
    const done = await this.markEndpoint(accountId, webhookId, (e) =>
      e.status === 'disabled' ? undefined : { ...e, status: 'disabled', disabled_reason: reason, disabled_at: this.clock().toISOString() },
    );
    if (done) this.deps.report?.({ kind: 'disabled', webhook_id: webhookId, reason });
  }

  /** Changes one endpoint of the account (a versioned move of the account's endpoints); false when nothing was written. */
  private async markEndpoint(accountId: string, webhookId: string, change: (e: WebhookEndpoint) => WebhookEndpoint | undefined): Promise<boolean> {
    const written = await moveEndpoints(this.deps.store, accountId, (read) => {
      const current = read.endpoints.find((e) => e.webhook_id === webhookId);
      const next = current && change(current);
      if (!next) return undefined;
      return { endpoints: read.endpoints.map((e) => (e.webhook_id === webhookId ? next : e)), result: true };
    });
    return written === true;
  }
}

function strip(d: Delivery): Omit<Delivery, 'v'> {
  const { v: _v, ...rest } = d;
  return rest;
}
