import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { getDerivedStores, itemChangeOf, type StreamRecord } from '../../lib/deps/derived.js';
import { applyChanges } from '../../lib/evidence/derived.js';
import { describeError, log } from '../../lib/log.js';

/** The custom metrics the alarms of infra/serverless-resources.cjs watch (EMF lines, as functions/jobs/reconcile.ts). */
const metrics = new Metrics({ namespace: 'EvidenceAnchoring', serviceName: 'evidence-anchoring' });

/**
 * The event of the evidence table's stream as Lambda delivers it with a tumbling window
 * (infra/serverless-functions.cjs): the batch's records of one shard, in order, and the shard.
 * The window's state is not used (every batch is applied at once); it is answered empty, as the
 * tumbling-window protocol asks.
 */
export interface EvidenceStreamEvent {
  Records?: StreamRecord[];
  shardId?: string;
  isFinalInvokeForWindow?: boolean;
}

/**
 * Derived data from the evidence table's changes (docs/decisions.md "Derived data",
 * lib/evidence/derived.ts): the public statistics and the device-chain links' anchored marks.
 * Exactly once per shard and sequence number, however often Lambda delivers a batch (its
 * statistics items record the last change counted per shard). A failure throws: Lambda delivers
 * the batch again (bisecting it), until the stream's retention ends; the failure destination and
 * the iterator-age alarm tell the operators (docs/runbook.md "Derived data behind").
 */
export async function handler(event: EvidenceStreamEvent): Promise<{ state: Record<string, string>; batchItemFailures: [] }> {
  const records = event.Records ?? [];
  if (records.length === 0) return { state: {}, batchItemFailures: [] };
  // The shard comes with the tumbling window; without one (an invocation by hand), the stream's ARN stands for it.
  const shard = event.shardId ?? String((records[0] as { eventSourceARN?: string }).eventSourceARN ?? 'stream');
  try {
    const applied = await applyChanges(getDerivedStores(), shard, records.map(itemChangeOf));
    metrics.addMetric('DerivedChanges', MetricUnit.Count, records.length);
    metrics.addMetric('DerivedStatsEvents', MetricUnit.Count, applied.stats);
    metrics.addMetric('DerivedLinkMarks', MetricUnit.Count, applied.links);
    return { state: {}, batchItemFailures: [] };
  } catch (error) {
    // The batch's first and last sequence numbers: what docs/runbook.md "Derived data behind" reads from the stream to save it.
    const from = records[0]?.dynamodb?.SequenceNumber;
    const to = records.at(-1)?.dynamodb?.SequenceNumber;
    log.warn('evidence stream: a batch was not applied; Lambda delivers it again', { shard, records: records.length, from, to, ...describeError(error) });
    throw error;
  } finally {
    metrics.publishStoredMetrics();
  }
}
