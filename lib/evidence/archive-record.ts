/**
 * An anchored photo's evidence record as the archive keeps it (archive.ts): the record served
 * (its group's chain, or an own record after a hash-tree renewal), the group chain the hash-tree
 * renewal builds on (archive-rehash.ts), and when a chain is renewed next (the pass and the
 * hash-tree renewal both set it).
 */
import { type ArchiveTimeStampChain, type ErsHash, algorithmsOf, encodeEvidenceRecord, lastChainHolds, parseArchiveTimeStamp, parseEvidenceRecord } from '../crypto/ers.js';
import { DomainError } from '../errors.js';
import { log } from '../log.js';
import type { ArchiveSettings } from './archive.js';
import type { ArchiveMembership, ArchiveStore } from './archive-store.js';

/** A renewal is not retried sooner than this when the TSA's own certificate is inside the margin already. */
export const RENEW_RETRY_MS = 24 * 3600_000;

/** The algorithm of the first hash tree: that of the image hash. */
export const FIRST_ALGORITHM: ErsHash = 'SHA-256';

/** When a chain whose last token is `tsaNotAfter`'s is renewed next: the margin before it, or (inside the margin) a day on, with a warning. */
export function renewAt(tsaNotAfter: Date, settings: ArchiveSettings, now: Date): string {
  const due = tsaNotAfter.getTime() - settings.renewBeforeMs;
  if (due <= now.getTime()) {
    log.warn('archive: the TSA certificate expires within the renewal margin; rotate the TSA key (the chain is renewed again in a day)', {
      tsa_not_after: tsaNotAfter.toISOString(),
    });
    return new Date(now.getTime() + RENEW_RETRY_MS).toISOString();
  }
  return new Date(due).toISOString();
}

/**
 * The DER EvidenceRecord of an anchored image hash: the group's record (its SHA-256 chain, the
 * last good one: nothing an account offers changes it), or, for `select`, the own record whose last
 * chain holds that digest of the data (a hash-tree renewal made from it), when there is one. 404
 * `evidence_not_found` when the hash is not anchored; 404 `evidence_record_pending` when it is,
 * but its group is not made yet (within about a minute of the anchor).
 */
export async function evidenceRecordOf(
  store: ArchiveStore,
  imageHash: string,
  select?: { algorithm: ErsHash; digest: Uint8Array },
): Promise<{ der: Uint8Array; anchoredAt?: string }> {
  const [member, own] = await Promise.all([store.membership(imageHash), select ? store.getOwnRecord(imageHash) : undefined]);
  if (!member.anchored) throw new DomainError('not_found', 'evidence_not_found', `No anchored evidence for ${imageHash}.`);
  const anchoredAt = member.anchored_at ? { anchoredAt: member.anchored_at } : {};
  if (own && select && own.algorithm === select.algorithm && lastChainHolds(parseEvidenceRecord(own.record).chains, select.algorithm, select.digest)) {
    return { der: own.record, ...anchoredAt };
  }
  const group = await groupChainOf(store, imageHash, member);
  if (!group) {
    throw new DomainError('not_found', 'evidence_record_pending', `${imageHash} is anchored; its evidence record is made within about a minute of the anchor. Try again shortly.`);
  }
  return { der: encodeEvidenceRecord({ digestAlgorithms: algorithmsOf([group.chain]), chains: [group.chain] }), ...anchoredAt };
}

/** A member's chain in its group (the reduced hash tree, the group's token and renewals), and its last certificate's notAfter; undefined before it joined one. */
export async function groupChainOf(store: ArchiveStore, imageHash: string, known?: ArchiveMembership): Promise<{ chain: ArchiveTimeStampChain; tsaNotAfter: string } | undefined> {
  const member = known ?? (await store.membership(imageHash));
  const group = member.group && member.path ? await store.getGroup(member.group) : undefined;
  if (!group || !member.path) return undefined;
  const chain: ArchiveTimeStampChain = [
    { digestAlgorithm: group.algorithm, reducedHashtree: member.path, timeStamp: group.timeStamp },
    ...group.renewals.map(parseArchiveTimeStamp),
  ];
  return { chain, tsaNotAfter: group.tsa_not_after };
}
