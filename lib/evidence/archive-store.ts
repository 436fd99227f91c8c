import type { SweepStep } from '../accounts/counter-repository.js';
import type { ErsHash } from '../crypto/ers.js';

/**
 * What the RFC 4998 evidence records (lib/evidence/archive.ts) keep, behind this port (the store
 * implements it: lib/store/archive-table.ts, the `archive` table and two attributes of the
 * evidence item). Its state machines are ARCHIVE_GROUP, ARCHIVE_MEMBER, OWN_RECORD, DIGEST_OFFER
 * and TSA_RETIREMENT_SWEEP (lib/state-machines.ts).
 */

/** An anchored hash that is in no archive group yet (the evidence table's sparse archive_due index). */
export interface UngroupedHash {
  image_hash: string;
  anchored_at: string;
}

/**
 * One archive group: the hash tree over many image hashes that one RFC 3161 token covers (the
 * first archive timestamp of every member's record), and the timestamp renewals of that chain.
 * Shared by all its members: a member's record is its reduced hash tree (stored on its evidence
 * item) plus this.
 */
export interface ArchiveGroup {
  /** Hex of the tree's root. */
  id: string;
  /** Version (ARCHIVE_GROUP): every renewal is conditional on it and adds one. */
  v: number;
  algorithm: ErsHash;
  /** How many image hashes the tree holds. */
  size: number;
  /** DER of the first archive timestamp's RFC 3161 token (whose imprint is the root). */
  timeStamp: Uint8Array;
  /** DER of each later ArchiveTimeStamp of the chain (timestamp renewals), oldest first. */
  renewals: Uint8Array[];
  created_at: string;
  /** When its last timestamp is due for renewal (its TSA certificate's notAfter less the margin). */
  renew_at: string;
  /** notAfter of the TSA certificate of its last token (a renewal must reach past it to be worth making). */
  tsa_not_after: string;
}

/** A member as the evidence item holds it. */
export interface ArchiveMembership {
  /** The evidence item is anchored (otherwise there is no record to give). */
  anchored: boolean;
  /** Its group, once it joined one. */
  group?: string;
  /** Its reduced hash tree in that group: the lists of hashes, first list first. */
  path?: Uint8Array[][];
  anchored_at?: string;
  /** The account that anchored it (the only one that may offer its digests). */
  account_id?: string;
}

/**
 * The photo's digest with a new hash algorithm, offered by the account that anchored it, for a
 * hash-tree renewal (DIGEST_OFFER). `offered`: no renewal was made from the offer yet; `used`: the
 * record was renewed from `used_digest`, and a `digest` other than that one is a correction that
 * waits for the renewal to be redone ({@link waitingDigest}).
 */
export interface DigestOffer {
  image_hash: string;
  algorithm: ErsHash;
  /** The latest digest the account gave. */
  digest: Uint8Array;
  state: 'offered' | 'used';
  /** Version (DIGEST_OFFER): every move is conditional on it; undefined on an offer stored before offers had one. */
  v?: number;
  /** The digest the record was renewed from (used); absent on an offer used before it was kept: then `digest`. */
  used_digest?: Uint8Array;
  offered_at: string;
}

/** The digest an offer waits to have a renewal made (or redone) from; undefined when none waits. */
export function waitingDigest(offer: DigestOffer): Uint8Array | undefined {
  if (offer.state === 'offered') return offer.digest;
  const used = offer.used_digest ?? offer.digest;
  return Buffer.compare(Buffer.from(used), Buffer.from(offer.digest)) === 0 ? undefined : offer.digest;
}

/**
 * An evidence record of its own (after a hash-tree renewal, whose first hash list depends on the
 * member's own earlier chains): the whole record, renewed on its own schedule.
 */
export interface OwnRecord {
  image_hash: string;
  v: number;
  /** DER of the EvidenceRecord. */
  record: Uint8Array;
  renew_at: string;
  /** The algorithm of its last chain. */
  algorithm: ErsHash;
  /** notAfter of the TSA certificate of its last token. */
  tsa_not_after: string;
}

/** Something whose last chain is due for timestamp renewal. */
export type RenewalDue = { kind: 'group'; id: string } | { kind: 'record'; image_hash: string } | { kind: 'digest'; image_hash: string; algorithm: ErsHash };

/** One page of the renewal_due index, and where the next one starts (none: this page was the last). */
export interface RenewalPage {
  due: RenewalDue[];
  /** Opaque: give it back to read on. */
  next?: string;
}

/**
 * How far the archive job has looked through the renewal_due index for the records under one
 * retired TSA certificate (TSA_RETIREMENT_SWEEP, lib/evidence/archive-retirement.ts): on no
 * index itself, moved from the version read.
 */
export interface RetirementSweep {
  /** SHA-256 of the retired certificate's DER, hex (as the TSA history names it). */
  sha256: string;
  v: number;
  state: 'sweeping' | 'swept';
  /** Where the next page starts (sweeping). */
  cursor?: string;
}

export interface ArchiveStore {
  /** Anchored hashes in no group yet, oldest first (the evidence table's sparse index archive_due). */
  listUngrouped(limit: number): Promise<UngroupedHash[]>;
  /**
   * One step of a sweep over the evidence items themselves (at most `step.items` read): every
   * anchored item in no group is put on the archive_due index again (ARCHIVE_MEMBER.enqueue, the
   * same conditional write), which backfills the anchors made before the archive existed and an
   * index entry dynalite lost to a kill. Its cost grows with the table: an operator's tool, and
   * `npm start`'s once at start.
   */
  sweepUngrouped(step: SweepStep): Promise<{ enqueued: number; complete: boolean }>;
  /** The group, read strongly consistent; undefined when there is none. */
  getGroup(id: string): Promise<ArchiveGroup | undefined>;
  /** stamp (none → stamped): stores a new group unless one of that id exists; the group as stored. */
  putGroup(group: ArchiveGroup): Promise<ArchiveGroup>;
  /**
   * join (ungrouped → grouped): the evidence item names its group and its reduced hash tree, and
   * leaves the archive_due index, in one conditional write; an item already in a group only leaves
   * the index (it keeps its group).
   */
  join(imageHash: string, groupId: string, path: Uint8Array[][]): Promise<void>;
  /** A hash's membership, from its evidence item (eventually consistent: a public read). */
  membership(imageHash: string): Promise<ArchiveMembership>;
  /** Groups and own records whose renewal is due at `nowIso`, oldest due first. */
  listRenewalsDue(nowIso: string, limit: number): Promise<RenewalDue[]>;
  /**
   * One page of the renewal_due index up to `untilIso` (renew_at ≤ it), in its order, from where
   * `after` (a page's `next`) left off: the index read as far as a retired TSA certificate's
   * records reach, and no further.
   */
  listRenewalsUpTo(untilIso: string, limit: number, after?: string): Promise<RenewalPage>;
  /** The sweep of a retired TSA certificate's records, read strongly consistent; undefined before its first page. */
  getRetirementSweep(sha256: string): Promise<RetirementSweep | undefined>;
  /**
   * advance (none|sweeping → sweeping, with the next page's cursor) or finish (none|sweeping →
   * swept): conditional on the sweep as read (undefined: none yet); false when it had moved on.
   */
  moveRetirementSweep(sha256: string, read: RetirementSweep | undefined, to: { state: 'sweeping'; cursor: string } | { state: 'swept' }): Promise<boolean>;
  /** renew (stamped → stamped): appends a renewal to the group as read (its version); false when it had moved on. */
  appendGroupRenewal(group: ArchiveGroup, ats: Uint8Array, renewAt: string, tsaNotAfter: string): Promise<boolean>;
  /**
   * postpone (stamped → stamped, own → own): a renewal is due but the TSA's certificate reaches no
   * further than the chain's last one: renew_at moves on, from the version read.
   */
  postponeRenewal(due: RenewalDue & { kind: 'group' | 'record' }, version: number, renewAt: string): Promise<boolean>;
  /** The own record of a hash, if it has one. */
  getOwnRecord(imageHash: string): Promise<OwnRecord | undefined>;
  /**
   * rehash (none → own: `readVersion` undefined), renew or redo (own → own, `how`): stores a
   * record of its own (after a hash-tree renewal), or replaces it, conditional on the version
   * read; false when it had moved on.
   */
  putOwnRecord(record: OwnRecord, readVersion: number | undefined, how?: 'renew' | 'redo'): Promise<boolean>;
  /**
   * offer (none|offered → offered) or correct (used → used), as `read` was (undefined: none yet):
   * stores the latest digest, due for renewal at once, conditional on the state and version read;
   * false when the offer had moved on (read it again).
   */
  offerDigest(offer: Pick<DigestOffer, 'image_hash' | 'algorithm' | 'digest' | 'offered_at'>, read: DigestOffer | undefined): Promise<boolean>;
  /** The offer, read strongly consistent. */
  getDigestOffer(imageHash: string, algorithm: ErsHash): Promise<DigestOffer | undefined>;
  /**
   * use (offered → used) or redo (used → used): the record holds the renewal made from the
   * offer's digest as read; it is the record's `used_digest` from now on and nothing waits.
   * Conditional on the state and version read; false when it had moved on (a correction came).
   */
  markDigestUsed(offer: DigestOffer): Promise<boolean>;
  /** postpone (offered → offered) or hold (used → used): a digest that cannot be used yet is due again at `renewAt`, from the version read. */
  postponeDigest(offer: DigestOffer, renewAt: string): Promise<void>;
}
