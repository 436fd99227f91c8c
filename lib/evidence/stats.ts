/**
 * Public statistics (GET /api/v1/stats): what is counted, derived from the evidence table's changes
 * (derived.ts). The store keeps them in counters, never in scans (lib/store/stats-counters.ts: one
 * item with the all-time totals and the totals of each UTC hour; "last 24 h" is the current hour and
 * the 23 before it). The
 * counters hold numbers only: no account, key, device or hash.
 */

/** What the statistics count. */
export const STAT_FIELDS = ['registered', 'anchored', 'devices', 'transactions'] as const;
export type StatField = (typeof STAT_FIELDS)[number];
export type StatTotals = Record<StatField, number>;

/** Increments of one event: each present, positive field is added. */
export type StatsDelta = Partial<StatTotals>;

/**
 * How an event outside the evidence table is counted (the ML-DSA-65 key's registration
 * transaction): once per `id`, however often it is recorded. Best-effort: never throws. Everything
 * else is counted from the evidence table's changes (derived.ts).
 */
export interface StatsPort {
  recordOnce(id: string, delta: StatsDelta): Promise<void>;
}

/** The statistics as GET /api/v1/stats answers them. */
export interface StatsSnapshot {
  totals: StatTotals;
  last_24h: StatTotals;
  /** Start of the oldest hour counted in last_24h (ISO 8601 UTC). */
  last_24h_since: string;
  as_of: string;
}

/** A change's contribution to the statistics (derived.ts), with the hour it counts in and its place in its shard. */
export interface StatsEvent {
  /** Its sequence number in its shard, fixed-width (comparable as text). */
  seq: string;
  hourStartMs: number;
  delta: StatsDelta;
}
