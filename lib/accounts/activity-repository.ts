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

/**
 * An account's recent evidence (lib/store/activity-table.ts): one entry per (account, hash).
 * Noting is idempotent: a retried request, or two at once, leave the same entry.
 */
export interface ActivityRepository {
  /** Adds `kind` to the account's entry for the hash and moves its time forward. */
  note(accountId: string, imageHash: string, kind: ActivityKind, at: string): Promise<void>;
  /** The account's hashes, most recent first. */
  recent(accountId: string, limit: number): Promise<ActivityEntry[]>;
}
