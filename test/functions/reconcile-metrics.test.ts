import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useStack } from '../support/stack.js';

await useStack();
process.env.POWERTOOLS_DEV = 'true';
process.env.POWERTOOLS_METRICS_DISABLED = 'false';
const { handler } = await import('../../functions/jobs/reconcile.js');

/**
 * Runs `fn` and returns the EMF documents Powertools printed meanwhile. In Lambda it writes them to
 * stdout through a console of its own; POWERTOOLS_DEV (set above, before the import; with
 * POWERTOOLS_METRICS_DISABLED=false, since dev mode turns metrics off) makes it use
 * the global console, which the test can listen to.
 */
async function emfDuring(fn: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const original = console.log;
  console.log = (...args: unknown[]) => void lines.push(args.map(String).join(' '));
  try {
    await fn();
  } finally {
    console.log = original;
  }
  return lines.flatMap((l) => {
    try {
      const doc = JSON.parse(l) as Record<string, unknown>;
      return doc._aws ? [doc] : [];
    } catch {
      return [];
    }
  });
}

describe('the scheduled reconciler', () => {
  it('publishes the metrics its alarms watch as EMF: oldest pending anchor age and the low-balance flag', async () => {
    const docs = await emfDuring(() => handler({ fullScan: false }));
    assert.equal(docs.length, 1, 'one EMF document per run');
    const doc = docs[0] as Record<string, unknown> & { _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] } };
    const [directive] = doc._aws.CloudWatchMetrics;
    assert.equal(directive?.Namespace, 'EvidenceAnchoring');
    assert.deepEqual(directive?.Dimensions, [['service']]);
    assert.equal(doc.service, 'evidence-anchoring');
    const names = directive?.Metrics.map((m) => m.Name) ?? [];
    for (const name of ['OldestPendingAnchorAgeSeconds', 'WalletBalanceBelowLow', 'AnchorsWaiting']) assert.ok(names.includes(name), name);
    assert.equal(typeof doc.OldestPendingAnchorAgeSeconds, 'number');
    // The test wallet holds 10^6 coins: not low.
    assert.equal(doc.WalletBalanceBelowLow, 0);
  });
});
