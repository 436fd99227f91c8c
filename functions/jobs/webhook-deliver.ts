import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { createWebhookDispatcher } from '../../lib/deps/webhooks.js';
import { describeError, log } from '../../lib/log.js';

/** The custom metrics the webhook alarms watch (infra/serverless-resources.cjs; EMF lines, as functions/jobs/reconcile.ts). */
const metrics = new Metrics({ namespace: 'EvidenceAnchoring', serviceName: 'evidence-anchoring' });

/** How long one run looks at the due index (it runs every minute; the last attempts then finish within their 15 s). */
const RUN_MS = 45_000;
const TICK_MS = 1000;

/**
 * The delivery worker (docs/webhooks.md "Delivery", lib/webhooks/dispatcher.ts): every minute, for
 * 45 s, once a second, the due deliveries of the webhooks table's sparse `due` index are handed to
 * one runner per endpoint and sent. Survives a crash of any run: a delivery is claimed under a
 * lease before it is sent, so what a dead run held is due again when the lease ends. Runs may
 * overlap (each claim is conditional). Publishes the failed deliveries and how late the oldest
 * due delivery is, which the alarms watch.
 */
export async function handler(): Promise<{ handed: number }> {
  let failed = 0;
  let delivered = 0;
  let lateMs = 0;
  const dispatcher = createWebhookDispatcher({
    report: (event) => {
      if (event.kind === 'failed') failed++;
      if (event.kind === 'delivered') delivered++;
    },
  });
  const start = Date.now();
  let handed = 0;
  try {
    while (Date.now() - start < RUN_MS) {
      const tick = await dispatcher.tick(RUN_MS - (Date.now() - start)).catch((error: unknown) => {
        log.warn('webhook deliveries: the due index was not read now', describeError(error));
        return { handed: 0, oldestDueMs: undefined };
      });
      handed += tick.handed;
      if (tick.oldestDueMs !== undefined) lateMs = Math.max(lateMs, Date.now() - tick.oldestDueMs);
      await new Promise((resolve) => setTimeout(resolve, TICK_MS));
    }
    await dispatcher.idle();
    return { handed };
  } finally {
    metrics.addMetric('WebhookDeliveriesFailed', MetricUnit.Count, failed);
    metrics.addMetric('WebhookDeliveriesDelivered', MetricUnit.Count, delivered);
    metrics.addMetric('WebhookOldestDueAgeSeconds', MetricUnit.Seconds, Math.round(lateMs / 1000));
    metrics.publishStoredMetrics();
  }
}
