import { getReconcileDeps } from '../../lib/deps/anchoring.js';
import { reconcileAnchors, type ReconcileReport } from '../../lib/evidence/reconcile.js';

/**
 * Scheduled every minute (infra/functions.json): settles every anchor an interrupted invocation
 * left unfinished, records late receipts, re-sends what the ledger node lacks and ends abandoned
 * quota holds (lib/evidence/reconcile.ts). It finds its work through the sparse pending_tx index;
 * in the first minute of each hour (or with `{ "fullScan": true }`) it scans the items themselves,
 * which catches an entry the index lost. Two runs at once are safe (every move is a conditional
 * write); `npm start` runs the same function on a timer locally.
 */
export async function handler(event?: { fullScan?: boolean }): Promise<ReconcileReport> {
  const fullScan = event?.fullScan ?? new Date().getUTCMinutes() === 0;
  return reconcileAnchors(await getReconcileDeps(), { fullScan });
}
