/**
 * RFC 4998 evidence records of anchored photos: long-term proof that the photo existed, renewed
 * before what protects it weakens (README "Evidence records", docs/decisions.md "Evidence records").
 *
 * - The data object is the photo. Its hash with SHA-256 is the image hash, so the first archive
 *   timestamp's hash tree starts from the image hash itself, and a relying party checks the record
 *   against the photo file (§5.3). One data object per record: the signed statement (server_hash)
 *   is not in it (it is bound to the image hash by the ML-DSA signature and the ledger).
 * - Grouping (§4): the archive job reads the anchored hashes in no group yet (a sparse index fed
 *   by the anchor's own write), builds one SHA-256 hash tree over them, has its root time-stamped
 *   by the TSA once, stores the group, then gives each member its reduced hash tree. A member's
 *   record is its reduced hash tree plus the group's token and renewals.
 * - Timestamp renewal (§5.2): before the TSA certificate of a chain's last token reaches its
 *   notAfter (less a margin), a new archive timestamp covers the hashes of the chain's tokens; all
 *   groups due in a pass share one TSA call (one tree, one leaf group per chain).
 * - Hash-tree renewal (§5.2): when the hash algorithm is to be replaced, a new chain starts whose
 *   first tree covers H'(H'(photo) ‖ H'(earlier chains)). H'(photo) needs the photo, which the
 *   service never sees: its holder gives that digest ({@link renewHashTrees}). The result is a
 *   record of the member's own, renewed on its own from then on.
 *
 * Every step is a conditional single-item write (ARCHIVE_GROUP, ARCHIVE_MEMBER, OWN_RECORD in
 * lib/state-machines.ts): a crash anywhere leaves either nothing, a group its members do not name
 * yet (the next pass over the same hashes finds it by its root and stamps nothing again), or
 * members that name a stored group.
 */
import {
  type ArchiveTimeStamp,
  type ArchiveTimeStampChain,
  type ErsHash,
  algorithmsOf,
  buildHashTree,
  encodeArchiveTimeStamp,
  encodeArchiveTimeStampSequence,
  encodeEvidenceRecord,
  ersDigest,
  parseArchiveTimeStamp,
  parseEvidenceRecord,
} from '../crypto/ers.js';
import { DomainError, invalid } from '../errors.js';
import { describeError, log } from '../log.js';
import type { SweepStep } from '../accounts/counter-repository.js';
import type { ArchiveGroup, ArchiveStore, DigestOffer, OwnRecord } from './archive-store.js';

/** A time-stamping authority as the archive uses it: any imprint algorithm it accepts, the token checked. */
export interface ArchiveStamper {
  /**
   * An RFC 3161 TimeStampToken (DER) over `digest` (made with `alg`), checked against the TSA's
   * root, with its genTime and its TSA certificate's notAfter. Has a deadline.
   */
  stamp(alg: ErsHash, digest: Uint8Array): Promise<{ token: Uint8Array; genTime: Date; tsaNotAfter: Date }>;
  /** notAfter of the certificate the TSA signs with now (before any request). */
  currentNotAfter(): Promise<Date>;
}

export interface ArchiveSettings {
  /** A group is made once the oldest waiting hash has waited this long (or the group is full). */
  groupAfterMs: number;
  /** Most hashes in one group (and read from the index per pass). */
  maxGroupSize: number;
  /** A chain is renewed this long before its last token's TSA certificate expires. */
  renewBeforeMs: number;
  /** Most groups and own records renewed per pass. */
  renewalsPerPass: number;
  /**
   * The hash algorithm records are to use (ARCHIVE_HASH_ALGORITHM). SHA-256 (that of the image
   * hash): nothing to renew. Another: the account that anchored a photo may offer its digest with
   * it, and the job renews that record's hash tree (§5.2).
   */
  hashAlgorithm: ErsHash;
}

/** A renewal is not retried sooner than this when the TSA's own certificate is inside the margin already. */
const RENEW_RETRY_MS = 24 * 3600_000;

/** The algorithm of the first hash tree: that of the image hash. */
const FIRST_ALGORITHM: ErsHash = 'SHA-256';

export interface ArchiveDeps {
  store: ArchiveStore;
  stamper: ArchiveStamper;
  settings: ArchiveSettings;
  clock?: () => Date;
}

export interface ArchivePassReport {
  /** Hashes that joined a group this pass. */
  grouped: number;
  /** Groups stored this pass (0 or 1). */
  groups: number;
  /** Groups and own records whose chain got a timestamp renewal. */
  renewed: number;
  /** Records whose hash tree was renewed (from offered digests). */
  rehashed: number;
  /** RFC 3161 requests made. */
  stamps: number;
  /** Hashes still waiting (the group is not due yet). */
  waiting: number;
  /** With a sweep step: the anchored items it put back on the index, and whether it reached the table's end. */
  swept?: { enqueued: number; complete: boolean };
}

/** One pass of the archive job: the group of what waits, then the renewals that are due. */
export async function runArchivePass(deps: ArchiveDeps, options: { sweep?: SweepStep } = {}): Promise<ArchivePassReport> {
  const report: ArchivePassReport = { grouped: 0, groups: 0, renewed: 0, rehashed: 0, stamps: 0, waiting: 0 };
  if (options.sweep) {
    // A step of the sweep over the items themselves (backfill, lost index entries): before grouping,
    // so what it puts back on the index is grouped in this very pass.
    const swept = await deps.store.sweepUngrouped(options.sweep);
    report.swept = { enqueued: swept.enqueued, complete: swept.complete };
  }
  await groupWaiting(deps, report);
  await renewDue(deps, report);
  if (report.grouped + report.renewed + report.rehashed > 0) log.info('archive', { ...report });
  return report;
}

async function groupWaiting(deps: ArchiveDeps, report: ArchivePassReport): Promise<void> {
  const now = (deps.clock ?? (() => new Date()))();
  const waiting = await deps.store.listUngrouped(deps.settings.maxGroupSize);
  if (waiting.length === 0) return;
  const oldest = Math.min(...waiting.map((w) => Date.parse(w.anchored_at) || 0));
  if (waiting.length < deps.settings.maxGroupSize && now.getTime() - oldest < deps.settings.groupAfterMs) {
    report.waiting = waiting.length;
    return;
  }
  const hashes = [...new Set(waiting.map((w) => w.image_hash))].sort();
  const tree = buildHashTree(
    FIRST_ALGORITHM,
    hashes.map((h) => [Uint8Array.from(Buffer.from(h, 'hex'))]),
  );
  const id = Buffer.from(tree.root).toString('hex');
  // A retry over the same hashes (the previous pass died before its members joined) finds the group.
  let group = await deps.store.getGroup(id);
  if (!group) {
    const stamped = await deps.stamper.stamp(FIRST_ALGORITHM, tree.root);
    report.stamps++;
    group = await deps.store.putGroup({
      id,
      v: 1,
      algorithm: FIRST_ALGORITHM,
      size: hashes.length,
      timeStamp: stamped.token,
      renewals: [],
      created_at: now.toISOString(),
      renew_at: renewAt(stamped.tsaNotAfter, deps.settings, now),
      tsa_not_after: stamped.tsaNotAfter.toISOString(),
    });
    report.groups++;
  }
  const queue = hashes.map((h, i) => ({ h, i }));
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      await deps.store.join(next.h, id, tree.reduced(next.i));
      report.grouped++;
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

function renewAt(tsaNotAfter: Date, settings: ArchiveSettings, now: Date): string {
  const due = tsaNotAfter.getTime() - settings.renewBeforeMs;
  if (due <= now.getTime()) {
    log.warn('archive: the TSA certificate expires within the renewal margin; rotate the TSA key (the chain is renewed again in a day)', {
      tsa_not_after: tsaNotAfter.toISOString(),
    });
    return new Date(now.getTime() + RENEW_RETRY_MS).toISOString();
  }
  return new Date(due).toISOString();
}

/** A chain to renew: its algorithm, the tokens it holds, how far its last token's TSA certificate reaches, and how to store the renewal. */
interface DueChain {
  algorithm: ErsHash;
  tokens: Uint8Array[];
  tsaNotAfter: string;
  store(ats: ArchiveTimeStamp, renewAt: string, tsaNotAfter: string): Promise<boolean>;
  postpone(renewAt: string): Promise<boolean>;
}

async function renewDue(deps: ArchiveDeps, report: ArchivePassReport): Promise<void> {
  const now = (deps.clock ?? (() => new Date()))();
  const due = await deps.store.listRenewalsDue(now.toISOString(), deps.settings.renewalsPerPass);
  if (due.length === 0) return;
  const chains: DueChain[] = [];
  const offers: DigestOffer[] = [];
  await Promise.all(
    due.map(async (d) => {
      if (d.kind === 'digest') {
        const offer = await deps.store.getDigestOffer(d.image_hash, d.algorithm);
        if (offer?.state === 'offered') offers.push(offer);
      } else if (d.kind === 'group') {
        const group = await deps.store.getGroup(d.id);
        if (group && group.renew_at <= now.toISOString()) chains.push(groupChain(deps.store, group));
      } else {
        const own = await deps.store.getOwnRecord(d.image_hash);
        if (own && own.renew_at <= now.toISOString()) chains.push(ownChain(deps.store, own));
      }
    }),
  );
  if (chains.length > 0) await renewChains(deps, chains, now, report);
  if (offers.length > 0) await rehashOffered(deps, offers, now, report);
}

async function renewChains(deps: ArchiveDeps, chains: DueChain[], now: Date, report: ArchivePassReport): Promise<void> {
  // A renewal is worth a timestamp only when the TSA's certificate reaches past the chain's last
  // one: otherwise (the TSA key was not rotated in time) nothing is stamped and the chain waits a
  // day, instead of growing by a useless archive timestamp every pass.
  const reach = (await deps.stamper.currentNotAfter()).toISOString();
  const stale = chains.filter((c) => reach <= c.tsaNotAfter);
  if (stale.length > 0) {
    log.warn('archive: renewals are due but the TSA certificate reaches no further than theirs; rotate the TSA key (retried in a day)', { due: stale.length, tsa_not_after: reach });
    const later = new Date(now.getTime() + RENEW_RETRY_MS).toISOString();
    for (const c of stale) await c.postpone(later);
  }
  const useful = chains.filter((c) => reach > c.tsaNotAfter);
  for (const algorithm of new Set(useful.map((c) => c.algorithm))) {
    const mine = useful.filter((c) => c.algorithm === algorithm);
    // §5.2: the new archive timestamp covers the hashes of the chain's timestamps (all of them,
    // so that a verifier that checks each earlier one against the last finds it: BouncyCastle's
    // ERSEvidenceRecord.validate does); one leaf group per chain, one token for all.
    const tree = buildHashTree(algorithm, mine.map((c) => c.tokens.map((t) => ersDigest(algorithm, t))));
    const stamped = await deps.stamper.stamp(algorithm, tree.root);
    report.stamps++;
    const next = renewAt(stamped.tsaNotAfter, deps.settings, now);
    for (const [i, chain] of mine.entries()) {
      const ats: ArchiveTimeStamp = { digestAlgorithm: algorithm, reducedHashtree: tree.reduced(i), timeStamp: stamped.token };
      // A chain that moved on meanwhile (another pass renewed it) keeps that renewal; this one is dropped.
      if (await chain.store(ats, next, stamped.tsaNotAfter.toISOString())) report.renewed++;
    }
  }
}

/** Offers whose record is not made yet are looked at again this much later. */
const OFFER_RETRY_MS = 60_000;

/** The hash-tree renewals the due offers ask for: one TSA call for all, then each offer is used. */
async function rehashOffered(deps: ArchiveDeps, offers: DigestOffer[], now: Date, report: ArchivePassReport): Promise<void> {
  const ready: DigestOffer[] = [];
  for (const offer of offers) {
    if (offer.algorithm !== deps.settings.hashAlgorithm) {
      // The configuration moved on since the offer: it is kept, due again when the algorithm is configured.
      await deps.store.postponeDigest(offer, new Date(now.getTime() + deps.settings.renewBeforeMs).toISOString());
      continue;
    }
    const own = await deps.store.getOwnRecord(offer.image_hash);
    if (own?.algorithm === offer.algorithm) {
      await deps.store.markDigestUsed(offer);
      continue;
    }
    const member = await deps.store.membership(offer.image_hash);
    if (!own && !member.group) {
      await deps.store.postponeDigest(offer, new Date(now.getTime() + OFFER_RETRY_MS).toISOString());
      continue;
    }
    ready.push(offer);
  }
  if (ready.length === 0) return;
  const done = await renewHashTrees(
    deps,
    deps.settings.hashAlgorithm,
    ready.map((o) => ({ image_hash: o.image_hash, digest: o.digest })),
  );
  report.stamps++;
  report.rehashed += done.length;
  for (const offer of ready) if (done.includes(offer.image_hash)) await deps.store.markDigestUsed(offer);
}

/**
 * offer (DIGEST_OFFER): the account that anchored `imageHash` gives the photo's digest with the
 * configured new algorithm; the archive job renews the record's hash tree with it within a pass.
 * 404 when the hash is not this account's anchor; 409 when no hash-tree renewal is configured,
 * or the record was renewed to that algorithm already; 400 for another algorithm or a digest of
 * the wrong length.
 */
export async function offerDigest(
  deps: Pick<ArchiveDeps, 'store' | 'settings' | 'clock'>,
  accountId: string,
  imageHash: string,
  algorithm: string,
  digestHex: string,
): Promise<{ image_hash: string; algorithm: ErsHash; state: 'offered'; offered_at: string }> {
  const target = deps.settings.hashAlgorithm;
  if (target === FIRST_ALGORITHM) {
    throw new DomainError('conflict', 'hash_renewal_not_due', `The service renews no hash tree now: its records use ${FIRST_ALGORITHM}, that of the image hash.`);
  }
  if (algorithm !== target) throw invalid('invalid_digest', `The service renews hash trees to ${target}; give the photo's ${target} digest.`);
  const length = ersDigest(target, new Uint8Array()).length;
  if (!new RegExp(`^[0-9a-fA-F]{${length * 2}}$`).test(digestHex)) throw invalid('invalid_digest', `A ${target} digest is ${length * 2} hex characters.`);
  const member = await deps.store.membership(imageHash);
  if (!member.anchored || member.account_id !== accountId) {
    throw new DomainError('not_found', 'evidence_not_found', `Your account anchored no evidence for ${imageHash}.`);
  }
  const offeredAt = (deps.clock ?? (() => new Date()))().toISOString();
  const stored = await deps.store.offerDigest({ image_hash: imageHash, algorithm: target, digest: Uint8Array.from(Buffer.from(digestHex, 'hex')), offered_at: offeredAt });
  if (!stored) throw new DomainError('conflict', 'hash_renewal_not_due', `The evidence record of ${imageHash} was renewed to ${target} already.`);
  return { image_hash: imageHash, algorithm: target, state: 'offered', offered_at: offeredAt };
}

function groupChain(store: ArchiveStore, group: ArchiveGroup): DueChain {
  return {
    algorithm: group.algorithm,
    tokens: [group.timeStamp, ...group.renewals.map((r) => parseArchiveTimeStamp(r).timeStamp)],
    tsaNotAfter: group.tsa_not_after,
    store: (ats, at, notAfter) => store.appendGroupRenewal(group, encodeArchiveTimeStamp(ats), at, notAfter),
    postpone: (at) => store.postponeRenewal({ kind: 'group', id: group.id }, group.v, at),
  };
}

function ownChain(store: ArchiveStore, own: OwnRecord): DueChain {
  const record = parseEvidenceRecord(own.record);
  const last = record.chains[record.chains.length - 1] as ArchiveTimeStampChain;
  return {
    algorithm: own.algorithm,
    tokens: last.map((a) => a.timeStamp),
    tsaNotAfter: own.tsa_not_after,
    store: (ats, at, notAfter) => {
      const chains = [...record.chains.slice(0, -1), [...last, ats]];
      const der = encodeEvidenceRecord({ digestAlgorithms: algorithmsOf(chains), chains });
      return store.putOwnRecord({ ...own, record: der, renew_at: at, tsa_not_after: notAfter }, own.v);
    },
    postpone: (at) => store.postponeRenewal({ kind: 'record', image_hash: own.image_hash }, own.v, at),
  };
}

/**
 * The DER EvidenceRecord of an anchored image hash. 404 `evidence_not_found` when the hash is
 * not anchored; 404 `evidence_record_pending` when it is, but its group is not made yet (within
 * about a minute of the anchor).
 */
export async function evidenceRecordOf(store: ArchiveStore, imageHash: string): Promise<{ der: Uint8Array; anchoredAt?: string }> {
  const [member, own] = await Promise.all([store.membership(imageHash), store.getOwnRecord(imageHash)]);
  if (own) return { der: own.record, ...(member.anchored_at ? { anchoredAt: member.anchored_at } : {}) };
  if (!member.anchored) throw new DomainError('not_found', 'evidence_not_found', `No anchored evidence for ${imageHash}.`);
  const group = member.group && member.path ? await store.getGroup(member.group) : undefined;
  if (!group || !member.path) {
    throw new DomainError('not_found', 'evidence_record_pending', `${imageHash} is anchored; its evidence record is made within about a minute of the anchor. Try again shortly.`);
  }
  const chain: ArchiveTimeStampChain = [
    { digestAlgorithm: group.algorithm, reducedHashtree: member.path, timeStamp: group.timeStamp },
    ...group.renewals.map(parseArchiveTimeStamp),
  ];
  return { der: encodeEvidenceRecord({ digestAlgorithms: algorithmsOf([chain]), chains: [chain] }), ...(member.anchored_at ? { anchoredAt: member.anchored_at } : {}) };
}

/** The photo's digest with the new algorithm, given by whoever holds the photo. */
export interface RehashInput {
  image_hash: string;
  digest: Uint8Array;
}

/**
 * Hash-tree renewal (RFC 4998 §5.2) of the given records to `algorithm`, one TSA call for all:
 * for each, h' = H'(H'(photo) ‖ H'(DER of its ArchiveTimeStampSequence so far)); a tree over the
 * h'; a new chain whose first archive timestamp is that tree's. Each record becomes a record of
 * its own (OWN_RECORD.rehash / renew). The digest cannot be checked here (the service never has
 * the photo): a wrong one makes a new chain that no verifier accepts, and the earlier chains stay
 * as they were. Returns the image hashes renewed.
 */
export async function renewHashTrees(deps: ArchiveDeps, algorithm: ErsHash, inputs: readonly RehashInput[]): Promise<string[]> {
  const now = (deps.clock ?? (() => new Date()))();
  const length = ersDigest(algorithm, new Uint8Array()).length;
  const current = await Promise.all(
    inputs.map(async (input) => {
      if (input.digest.length !== length) throw invalid('invalid_digest', `a ${algorithm} digest is ${length} bytes, not ${input.digest.length}`);
      const [own, record] = await Promise.all([deps.store.getOwnRecord(input.image_hash), evidenceRecordOf(deps.store, input.image_hash)]);
      return { input, version: own?.v, chains: parseEvidenceRecord(record.der).chains };
    }),
  );
  if (current.length === 0) return [];
  const leaves = current.map((c) => ersDigest(algorithm, c.input.digest, ersDigest(algorithm, encodeArchiveTimeStampSequence(c.chains))));
  const tree = buildHashTree(algorithm, leaves.map((l) => [l]));
  const stamped = await deps.stamper.stamp(algorithm, tree.root);
  const at = renewAt(stamped.tsaNotAfter, deps.settings, now);
  const renewed: string[] = [];
  for (const [i, c] of current.entries()) {
    const chains = [...c.chains, [{ digestAlgorithm: algorithm, reducedHashtree: tree.reduced(i), timeStamp: stamped.token }]];
    const der = encodeEvidenceRecord({ digestAlgorithms: algorithmsOf(chains), chains });
    try {
      const own = { image_hash: c.input.image_hash, v: (c.version ?? 0) + 1, record: der, renew_at: at, algorithm, tsa_not_after: stamped.tsaNotAfter.toISOString() };
      if (await deps.store.putOwnRecord(own, c.version)) renewed.push(c.input.image_hash);
    } catch (error) {
      log.warn('archive: a hash-tree renewal could not be stored; the next one retries', { image_hash: c.input.image_hash, ...describeError(error) });
    }
  }
  return renewed;
}
