/**
 * Windowed counters (lib/store/counter-table.ts): one per subject and window, `{ pk, count,
 * expires_at }`, where `pk` names the window (e.g. `quota#<account>#2026-11`) and `expires_at`
 * (epoch seconds) is the end of the window. A counter whose `expires_at` has passed reads as absent.
 * Each write is atomic on one counter.
 */
/**
 * One step of a safety sweep (decisions.md "Cost"): read this many items of the table itself, from
 * its beginning (`restart`: the first step of a sweep) or from where the last step stopped.
 */
export interface SweepStep {
  items: number;
  restart: boolean;
}

export interface CounterRepository {
  /**
   * Adds one unless the counter reached `limit`: the new count, or undefined when the limit was
   * reached (nothing written); N concurrent calls at `limit - 1` → exactly one succeeds. With
   * `holdId`, the unit is also recorded as held by that id, in the same write, and is added once
   * even when the write is sent again (lib/accounts/quota-holds.ts).
   */
  increment(pk: string, limit: number, expiresAt: number, holdId?: string): Promise<number | undefined>;
  /** Takes one off the counter (never below zero); a missing counter stays missing. */
  decrement(pk: string): Promise<void>;
  /** Ends the hold `holdId` once: `refund` gives its unit back, otherwise it stays counted. True for the call that ended it. */
  endHold(pk: string, holdId: string, refund: boolean): Promise<boolean>;
  /**
   * Counters under `prefix` that have holds not yet ended: their keys and hold ids. The cost
   * follows the counters with holds, not the table (decisions.md "Cost"). With `sweep`, one
   * segment of the table itself is read as well (the local net under the index), and `swept`
   * tells whether the segment reached the end of the table.
   */
  listHolds(prefix: string, sweep?: SweepStep): Promise<{ holds: { pk: string; holds: string[] }[]; swept?: boolean }>;
  /** The current count (strongly consistent); 0 for a missing counter or one whose window has ended. */
  read(pk: string, nowEpochSeconds: number): Promise<number>;
  /** Deletes one counter (whatever its state). */
  remove(pk: string): Promise<void>;
  /**
   * Deletes every counter whose key starts with one of `prefixes` and whose window ended at or
   * before `nowEpochSeconds` (re-checked at each deletion); how many it deleted. Safe to run again and concurrently.
   */
  removeExpired(prefixes: readonly string[], nowEpochSeconds: number): Promise<number>;
}
