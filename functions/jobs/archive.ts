import { getArchiveDeps } from '../../lib/deps/archive-job.js';
import { type ArchivePassReport, runArchivePass } from '../../lib/evidence/archive.js';

/**
 * Scheduled every minute (infra/functions.json): the RFC 4998 archive job (lib/evidence/archive.ts).
 * It groups the anchored hashes that wait for an evidence record (the evidence table's sparse
 * archive_due index: only those) under one archive timestamp, and renews the chains whose
 * renewal is due (the archive table's renewal_due index, read up to now: only those) or whose
 * last timestamp a TSA leaf signed that the TSA history lists as retired (one page of that index
 * per run, as far as that leaf's records reach, until looked through), so a run costs what is
 * due, not what the tables hold. Two runs at once are safe (every write is
 * conditional; a group is found again by its root); `npm start` runs the same pass on a timer.
 * `{ "backfill": true }` (an operator's invocation) first reads the evidence table itself and puts
 * every anchored item in no group on the index: the anchors made before the archive existed.
 */
export async function handler(event?: { backfill?: boolean }): Promise<ArchivePassReport> {
  const deps = await getArchiveDeps();
  if (event?.backfill !== true) return runArchivePass(deps);
  // The operator's backfill (docs/runbook.md "Evidence records"): every anchored item in no group
  // goes back on the index, 1,000 items read per step until the table's end; then one pass groups.
  let enqueued = 0;
  for (let restart = true; ; restart = false) {
    const step = await deps.store.sweepUngrouped({ items: 1000, restart });
    enqueued += step.enqueued;
    if (step.complete) break;
  }
  return { ...(await runArchivePass(deps)), swept: { enqueued, complete: true } };
}
