import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { getLedgerSender, getReconcileDeps } from '../../lib/deps/anchoring.js';
import { reconcileAnchors, type ReconcileReport } from '../../lib/evidence/reconcile.js';
import { describeError, log } from '../../lib/log.js';

/**
 * The custom metrics the alarms of infra/serverless-resources.cjs watch, as CloudWatch embedded
 * metric format (EMF) lines in this function's log: Powertools for AWS Lambda writes them, so no
 * PutMetricData call (nor its IAM grant) is needed. Namespace and the `service` dimension match
 * the alarms.
 */
const metrics = new Metrics({ namespace: 'EvidenceAnchoring', serviceName: 'evidence-anchoring' });

/**
 * Scheduled every minute (infra/functions.json): settles every anchor an interrupted invocation
 * left unfinished, records late receipts, re-sends what the ledger node lacks and ends abandoned
 * quota holds (lib/evidence/reconcile.ts). It finds its work through the sparse indexes only
 * (pending_tx of the evidence table, open_holds of the counters), so a run costs what the work
 * left costs, not what the tables hold (docs/decisions.md "Cost"). An operator can
 * invoke it with `{ "fullScan": true }` to read every evidence item once (the runbook's
 * check after a restore). Two runs at once are safe (every move is a conditional
 * write); `npm start` runs the same function on a timer locally. Each run publishes the age of the
 * oldest anchor still waiting for its transaction and whether the wallet is below its low-balance
 * threshold (every minute: the wallet alarm treats silence as an alarm).
 */
export async function handler(event?: { fullScan?: boolean }): Promise<ReconcileReport> {
  const fullScan = event?.fullScan === true;
  try {
    const [report, wallet] = await Promise.all([
      reconcileAnchors(await getReconcileDeps(), { fullScan }),
      getLedgerSender()
        .then((sender) => sender.walletStatus())
        .catch((error: unknown) => {
          log.warn('reconcile: wallet balance unreadable; no balance metric this run', describeError(error));
          return undefined;
        }),
    ]);
    metrics.addMetric('OldestPendingAnchorAgeSeconds', MetricUnit.Seconds, Math.round(report.oldestWaitingMs / 1000));
    metrics.addMetric('AnchorsWaiting', MetricUnit.Count, report.waiting);
    metrics.addMetric('AnchorsFinished', MetricUnit.Count, report.finished);
    metrics.addMetric('ReconcileFailures', MetricUnit.Count, report.failed);
    if (wallet) metrics.addMetric('WalletBalanceBelowLow', MetricUnit.Count, wallet.lowBalance ? 1 : 0);
    return report;
  } finally {
    metrics.publishStoredMetrics();
  }
}
