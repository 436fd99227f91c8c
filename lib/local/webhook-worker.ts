import type { Config } from '../config.js';
import { createWebhookDispatcher } from '../deps/webhooks.js';
import { describeError, log } from '../log.js';

/**
 * The webhook-deliver function's local twin (functions/jobs/webhook-deliver.ts): `npm start` looks
 * at the due deliveries every WEBHOOK_INTERVAL_MS (1 s) and hands them to the dispatcher's
 * runners, one per endpoint (lib/webhooks/dispatcher.ts). A tick does not wait for the sends:
 * a slow receiver holds only its own runner. Returns the stop.
 */
export function startLocalWebhookWorker(config: Config): () => Promise<void> {
  const dispatcher = createWebhookDispatcher({ config });
  let ticking = false;
  const tick = async () => {
    if (ticking) return;
    ticking = true;
    try {
      await dispatcher.tick();
    } catch (error) {
      log.warn('webhook deliveries: the due index was not read now; tried again', describeError(error));
    } finally {
      ticking = false;
    }
  };
  const timer = setInterval(() => void tick(), config.webhooks.intervalMs);
  timer.unref();
  return async () => clearInterval(timer);
}
