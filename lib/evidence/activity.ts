/**
 * An account's recent evidence (GET /api/v2/account/evidence, the dashboard's "Recent evidence"):
 * derived from the items that record what the account obtained, never written for its own sake.
 * Registrations, stand-alone timestamps and signatures, and anchors each carry the account and a
 * time (`account_id`, `activity_at`), which put them on the evidence table's sparse index
 * by_account (lib/store/evidence-table.ts recentActivity). A convenience list, not a proof.
 */

/** What an account obtained for a hash, in the order the list shows them. */
export const ACTIVITY_KINDS = ['registered', 'timestamped', 'signed', 'anchored'] as const;
export type ActivityKind = (typeof ACTIVITY_KINDS)[number];

/** One hash of an account's recent evidence. */
export interface ActivityEntry {
  image_hash: string;
  /** Every proof the account obtained for the hash, in ACTIVITY_KINDS order. */
  proofs: ActivityKind[];
  /** When the account last obtained one. */
  at: string;
}

/** Where an account's recent evidence is read from (lib/store/activity-index.ts). */
export interface ActivityRepository {
  /** The account's hashes, most recent first, at most `limit`. */
  recent(accountId: string, limit: number): Promise<ActivityEntry[]>;
}
