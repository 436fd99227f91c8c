import { getArchiveDeps } from '../../lib/deps/archive-job.js';
import { type ArchivePassReport, runArchivePass } from '../../lib/evidence/archive.js';

/**
 * Scheduled every minute (infra/functions.json): the RFC 4998 archive job (lib/evidence/archive.ts).
 * It groups the anchored hashes that wait for an evidence record (the evidence table's sparse
 * archive_due index: only those) under one archive timestamp, and renews the chains whose
 * renewal is due (the archive table's renewal_due index, read up to now: only those), so a run
 * costs what is due, not what the tables hold. Two runs at once are safe (every write is
 * conditional; a group is found again by its root); `npm start` runs the same pass on a timer.
 */
export async function handler(): Promise<ArchivePassReport> {
  return runArchivePass(await getArchiveDeps());
}
