import { itemChangeOf, type StreamRecord } from '../../lib/deps/derived.js';
import { getWebhookOutbox } from '../../lib/deps/webhooks.js';
import { describeError, log } from '../../lib/log.js';

/**
 * The webhooks' outbox (docs/webhooks.md "Never lost", lib/webhooks/outbox.ts): the second
 * consumer of the evidence table's stream, beside the evidence-stream function. Each change that
 * makes an event true (anchored, final receipt recorded, first evidence record) becomes one
 * delivery per subscribed endpoint, written once (its key is derived from the endpoint and the
 * event). A failure throws: Lambda delivers the batch again (bisecting it) until the stream's
 * retention ends, then to the stream failure queue; the iterator-age alarm tells the operators first.
 */
export async function handler(event: { Records?: StreamRecord[] }): Promise<{ state: Record<string, string>; batchItemFailures: [] }> {
  const records = event.Records ?? [];
  if (records.length === 0) return { state: {}, batchItemFailures: [] };
  try {
    const made = await getWebhookOutbox()(records.map(itemChangeOf));
    if (made > 0) log.info('webhook outbox: deliveries made', { deliveries: made, changes: records.length });
    return { state: {}, batchItemFailures: [] };
  } catch (error) {
    log.warn('webhook outbox: a batch was not recorded; Lambda delivers it again', { records: records.length, ...describeError(error) });
    throw error;
  }
}
