import { getLedgerSender } from '../../lib/deps/anchoring.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { finishPendingAnchors, type FinishReport } from '../../lib/evidence/finish-pending.js';
import { log } from '../../lib/log.js';

/**
 * Scheduled every minute (infra/functions.json): finishes anchors whose ledger receipt had not
 * arrived when their request answered. `npm start` runs the same function on a timer locally.
 */
export async function handler(): Promise<FinishReport> {
  const report = await finishPendingAnchors({ repo: getEvidenceRepo(), ledger: await getLedgerSender() });
  if (report.checked > 0 || report.resent > 0) log.info('finish-pending', { ...report });
  return report;
}
