/**
 * Public statistics (GET /api/v1/stats): what is counted, and the port the evidence domain records
 * its events through. The store keeps them in counters, never in scans (lib/store/stats-counters.ts:
 * all-time totals and UTC-hour buckets; "last 24 h" is the current hour and the 23 before it). The
 * counters hold numbers only: no account, key, device or hash.
 */

/** What the statistics count. */
export const STAT_FIELDS = ['registered', 'anchored', 'devices', 'transactions'] as const;
export type StatField = (typeof STAT_FIELDS)[number];
export type StatTotals = Record<StatField, number>;

/** Increments of one event: each present, positive field is added. */
export type StatsDelta = Partial<StatTotals>;

/** What the evidence domain needs to record an event: best-effort, never throws. */
export interface StatsPort {
  record(delta: StatsDelta): Promise<void>;
}

/** The statistics as GET /api/v1/stats answers them. */
export interface StatsSnapshot {
  totals: StatTotals;
  last_24h: StatTotals;
  /** Start of the oldest hour counted in last_24h (ISO 8601 UTC). */
  last_24h_since: string;
  as_of: string;
}
