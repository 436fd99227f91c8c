import type { ArchiveSettings } from '../evidence/archive.js';
import type { ArchiveStore } from '../evidence/archive-store.js';
import { ArchiveTable } from '../store/archive-table.js';
import { getConfig, getDb } from './core.js';
import { lazy } from './lazy.js';

/**
 * The RFC 4998 evidence records' store (the archive table and the evidence items' membership):
 * light, for GET /api/v2/evidence/evidence-record/{image_hash}. The archive job's dependencies,
 * which bring the TSA, are in lib/deps/archive-job.ts.
 */
export const getArchiveStore: () => ArchiveStore = /* @__PURE__ */ lazy(
  () => new ArchiveTable(getDb(), { archive: getConfig().tables.archive, evidence: getConfig().tables.evidence }),
);

/** The archive's settings (lib/config.ts `archive`). */
export function getArchiveSettings(): ArchiveSettings {
  const { archive } = getConfig();
  return {
    groupAfterMs: archive.groupAfterMs,
    maxGroupSize: archive.maxGroupSize,
    renewBeforeMs: archive.renewBeforeMs,
    renewalsPerPass: 200,
    hashAlgorithm: archive.hashAlgorithm,
  };
}
