import { createArchiveStamper } from '../crypto/ers-stamper.js';
import { tsaCertificateEntry } from '../crypto/tsa/history.js';
import type { ArchiveDeps } from '../evidence/archive.js';
import type { RetiredTsaCertificate } from '../evidence/archive-retirement.js';
import { getTsa } from './anchoring.js';
import { getArchiveSettings, getArchiveStore } from './archive.js';
import { getConfig } from './core.js';
import { getTsaHistory } from './key-registry.js';

/** What the archive job (functions/jobs/archive.ts, and its local twin in `npm start`) needs: the store, the TSA, the settings, the TSA's retirements. */
export async function getArchiveDeps(): Promise<ArchiveDeps> {
  const [tsa, retiredTsa] = await Promise.all([getTsa(), retiredTsaLeaves()]);
  return {
    store: getArchiveStore(),
    stamper: createArchiveStamper(tsa, getConfig().tsa.timeoutMs),
    settings: getArchiveSettings(),
    retiredTsa,
  };
}

/**
 * The classic TSA leaves the TSA history lists as retired (its archive timestamps are the classic
 * TSA's), planned retirements included: their records are renewed under the current key
 * (lib/evidence/archive-retirement.ts). Read once per process with the history (getTsaHistory):
 * a rotation reaches the job at the next start (`npm start`) or deployment (AWS). Each entry is
 * described again from its certificate, so a history edited by hand cannot misname one.
 */
async function retiredTsaLeaves(): Promise<RetiredTsaCertificate[]> {
  const history = await getTsaHistory();
  return history.retired
    .filter((e) => e.kind === 'classic' && e.role === 'leaf')
    .map((e) => {
      const entry = tsaCertificateEntry(e.pem, e.kind, e.role, new Date(e.retired_at as string));
      return { sha256: entry.sha256, notAfter: new Date(entry.not_after), retiredAt: new Date(entry.retired_at as string) };
    });
}
