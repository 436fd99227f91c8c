import type { Config } from '../config.js';
import { kmsSecretBox, localSecretBox, type SecretBox } from '../crypto/secret-box.js';
import { type Resolve, refusedTarget, type TargetPolicy } from '../net/address-policy.js';
import { sendWebhook, systemResolve } from '../net/webhook-http.js';
import { log } from '../log.js';
import { WebhookTable } from '../store/webhook-table.js';
import { type DispatchEvent, WebhookDispatcher } from '../webhooks/dispatcher.js';
import { WebhookService } from '../webhooks/endpoints.js';
import type { WebhookStore } from '../webhooks/records.js';
import { recordWebhookEvents } from '../webhooks/outbox.js';
import type { ItemChange } from '../evidence/derived.js';
import { getConfig, getDb } from './core.js';
import { getKmsClient } from './kms.js';
import { lazy } from './lazy.js';

/**
 * The webhooks' part of the composition root (docs/webhooks.md): the table, the sealed secrets,
 * the target policy, the sender and the domain's service and worker built on them. Used by the
 * account webhook endpoints (functions/v2/account-webhooks-*.ts), the outbox of the evidence
 * table's changes (functions/jobs/webhook-outbox.ts; `npm start`'s change feed) and the delivery
 * worker (functions/jobs/webhook-deliver.ts; `npm start`'s timer).
 */
export interface WebhookDeps {
  config: Config;
  store: WebhookStore;
  service: WebhookService;
}

export type WebhookDepsProvider = () => WebhookDeps;

/** The policy of the configuration: deployed stages (WEBHOOK_ALLOW_PRIVATE_TARGETS=false) refuse loopback and http. */
export function targetPolicyOf(config: Config): TargetPolicy {
  return { allowLoopback: config.webhooks.allowPrivateTargets, requireHttps: !config.webhooks.allowPrivateTargets };
}

/** Sealed secrets: KMS in AWS, the local key file with `npm start`. */
export function secretBoxOf(config: Config): SecretBox {
  return config.deployment === 'aws' ? kmsSecretBox(getKmsClient, config.webhooks.secretsKmsKeyId) : localSecretBox(config.webhooks.secretsKeyFile);
}

/** DNS lookups at subscription have a deadline like every other dependency call. */
const RESOLVE_DEADLINE_MS = 5000;

function resolveWithDeadline(resolve: Resolve): Resolve {
  return (host) =>
    Promise.race([
      resolve(host),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('DNS deadline')), RESOLVE_DEADLINE_MS).unref()),
    ]);
}

export interface WebhookDepsOptions {
  config: Config;
  store?: WebhookStore;
  resolve?: Resolve;
}

export function createWebhookDeps(options: WebhookDepsOptions): WebhookDeps {
  const { config } = options;
  const store = options.store ?? new WebhookTable(getDb(), config.tables.webhooks);
  const policy = targetPolicyOf(config);
  const resolve = resolveWithDeadline(options.resolve ?? systemResolve);
  const service = new WebhookService(store, secretBoxOf(config), (url) => refusedTarget(url, policy, resolve));
  return { config, store, service };
}

export const getWebhookDeps: WebhookDepsProvider = /* @__PURE__ */ lazy(() => createWebhookDeps({ config: getConfig() }));

/** Logs each outcome (ids and statuses only: never a secret, a body or an answer). */
function reportToLog(event: DispatchEvent): void {
  if (event.kind === 'disabled') log.warn('webhook endpoint disabled', { webhook_id: event.webhook_id, reason: event.reason });
  else if (event.kind !== 'delivered') log.info(`webhook delivery ${event.kind}`, { webhook_id: event.webhook_id, delivery_id: event.delivery_id, status: event.status, attempt: event.attempt, error: event.error });
}

/** The delivery worker over the configuration (the scheduled function, `npm start`'s timer, tests). */
export function createWebhookDispatcher(
  options: { config?: Config; store?: WebhookStore; resolve?: Resolve; report?: (event: DispatchEvent) => void; timeoutMs?: number; clock?: () => Date } = {},
): WebhookDispatcher {
  const config = options.config ?? getConfig();
  const store = options.store ?? new WebhookTable(getDb(), config.tables.webhooks);
  const policy = targetPolicyOf(config);
  return new WebhookDispatcher({
    store,
    sealer: secretBoxOf(config),
    schedule: config.webhooks.retryScheduleSeconds,
    ...(options.clock ? { clock: options.clock } : {}),
    send: (url, headers, body) => sendWebhook(url, headers, body, { policy, ...(options.resolve ? { resolve: options.resolve } : {}), ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}) }),
    report: (event) => {
      reportToLog(event);
      options.report?.(event);
    },
  });
}

/**
 * The outbox of the evidence table's changes (lib/webhooks/outbox.ts): the webhook-outbox stream
 * function in AWS, and every drain of the local change feed (lib/local/change-feed.ts).
 */
export const getWebhookOutbox: () => (changes: ItemChange[]) => Promise<number> = /* @__PURE__ */ lazy(() => {
  const config = getConfig();
  const store = new WebhookTable(getDb(), config.tables.webhooks);
  const links = { publicBaseUrl: config.publicBaseUrl, explorerTxUrl: config.ledger.explorerTxUrl };
  return (changes: ItemChange[]) => recordWebhookEvents(store, changes, links);
});
