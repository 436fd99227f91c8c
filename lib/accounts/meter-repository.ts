import type { SweepStep } from './counter-repository.js';

/**
 * The account meter (lib/store/meter-table.ts, decisions.md "Limits"): one item per account and
 * UTC month, `meter#<account>#<YYYY-MM>`, that carries both limits of an API key's requests, so
 * that one conditional write checks and charges them together:
 * - the per-minute rate: the minute `m` the item counts and `n`, its requests so far;
 * - the monthly quota: `used`, the units of the month, every open hold included;
 * - the holds: one attribute per unit held (`h#<hold id>`, the epoch ms it was taken), ended
 *   exactly once (settled: the attribute goes, the unit stays; refunded: both go).
 */

/** One charge: a request's rate unit and, with `hold`, one quota unit held under that id. */
export interface MeterCharge {
  /** The meter item (`meter#<account>#<month>`). */
  pk: string;
  /** The UTC minute the request falls in (`2026-11-29T10:15`): its rate window. */
  minute: string;
  /** The minute's limit; null: no rate unit (a second hold taken by a request already counted). */
  rateLimit: number | null;
  /** Reserve one unit of the month under this hold id, unless `quotaLimit` units are used. */
  hold?: { id: string; quotaLimit: number; atMs: number };
  /** Holds that ended well (their operations completed), settled in the same write. */
  settle: readonly string[];
  /** The item's TTL (epoch seconds). */
  expiresAt: number;
  /** Which of the two forms to try first: the minute is a new one for the item (`true`), or the one it counts. */
  newMinute: boolean;
}

export interface MeterOutcome {
  rate: { allowed: boolean; count: number };
  /** With a hold: whether it was taken, and the units used this month (this one included). */
  quota?: { allowed: boolean; used: number };
  /** The minute the item counts now (the next charge's guess). */
  minute: string;
  /** The `settle` holds went out with this write (false: nothing was written; they stay to settle). */
  settled: boolean;
}

export interface MeterRepository {
  /**
   * Checks and charges in one conditional write: the rate unit unless the minute's `rateLimit` is
   * reached, and with `hold` the quota unit unless the month's limit is reached. A request the
   * rate refuses is charged nothing; one the quota refuses (rate allowed) is charged its rate unit
   * only, as every authenticated request is. A hold is added once, even when the write is sent again.
   */
  charge(charge: MeterCharge): Promise<MeterOutcome>;
  /** Ends a hold once: `refund` gives its unit back, otherwise it stays counted. True for the call that ended it. */
  endHold(pk: string, holdId: string, refund: boolean): Promise<boolean>;
  /** Settles holds of one meter whose operations completed (a hold already ended is left as it is). */
  settle(pk: string, holdIds: readonly string[]): Promise<void>;
  /**
   * Meters with holds not yet ended: their keys and hold ids, from the sparse index open_holds
   * (the cost follows the meters with holds, not the table). With `sweep`, one segment of the
   * table itself as well (the local net under the index); `swept` tells whether it reached the end.
   */
  listHolds(sweep?: SweepStep): Promise<{ holds: { pk: string; holds: string[] }[]; swept?: boolean }>;
  /** The units used this month (strongly consistent); 0 for a missing meter. */
  used(pk: string): Promise<number>;
  /** Deletes one meter (an operator's reset of the month). */
  remove(pk: string): Promise<void>;
}
