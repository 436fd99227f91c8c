import { createArchiveStamper } from '../crypto/ers-stamper.js';
import type { ArchiveDeps } from '../evidence/archive.js';
import { getTsa } from './anchoring.js';
import { getArchiveSettings, getArchiveStore } from './archive.js';
import { getConfig } from './core.js';

/** What the archive job (functions/jobs/archive.ts, and its local twin in `npm start`) needs: the store, the TSA, the settings. */
export async function getArchiveDeps(): Promise<ArchiveDeps> {
  const tsa = await getTsa();
  return {
    store: getArchiveStore(),
    stamper: createArchiveStamper(tsa, getConfig().tsa.timeoutMs),
    settings: getArchiveSettings(),
  };
}
