/**
 * RFC 4998 evidence records of anchored photos: long-term proof that the photo existed, renewed
 * before what protects it weakens (docs/evidence-records.md, docs/decisions.md "Evidence records").
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
 *   notAfter (less a margin), or once the TSA history lists that certificate as retired (a key
 *   rotation: archive-retirement.ts), a new archive timestamp covers the hashes of the chain's
 *   tokens; all chains due in a pass share one TSA call (one tree, one leaf group per chain).
 * - Hash-tree renewal (§5.2): when the hash algorithm is to be replaced, a new chain starts whose
 *   first tree covers H'(H'(photo) ‖ H'(earlier chains)). H'(photo) needs the photo, which the
 *   service never sees: its holder gives that digest ({@link offerDigest}). The result is a
 *   record of the member's own, renewed on its own from then on, served to whoever gives that
 *   digest ({@link evidenceRecordOf}); a wrong digest is corrected by sending the right one, and the
 *   renewal is made again from the last good chain, the group's, which no offer changes.
 *
 * Every step is a conditional single-item write (ARCHIVE_GROUP, ARCHIVE_MEMBER, OWN_RECORD,
 * DIGEST_OFFER in lib/state-machines.ts): a crash anywhere leaves either nothing, a group its
 * members do not name yet (the next pass over the same hashes finds it by its root and stamps
 * nothing again), members that name a stored group, or an own record whose offer is not recorded
 * used yet (the next pass finds the record holding its digest and records it).
 */
import {
  type ArchiveTimeStamp,
  type ArchiveTimeStampChain,
  type ErsHash,
  algorithmsOf,
  buildHashTree,
  bytesEqual,
  encodeArchiveTimeStamp,
  encodeEvidenceRecord,
  ersDigest,
  hashTreeRenewalInput,
  lastChainHolds,
  parseArchiveTimeStamp,
  parseEvidenceRecord,
} from '../crypto/ers.js';
import { DomainError, invalid } from '../errors.js';
import { describeError, log } from '../log.js';
import type { SweepStep } from '../accounts/counter-repository.js';
import { type ArchiveGroup, type ArchiveMembership, type ArchiveStore, type DigestOffer, type OwnRecord, type RenewalDue, waitingDigest } from './archive-store.js';
import { type CurrentTsaCertificate, type RetiredTsaCertificate, nextRetirementPage, signsFreshly } from './archive-retirement.js';

/** A time-stamping authority as the archive uses it: any imprint algorithm it accepts, the token checked. */
export interface ArchiveStamper {
  /**
   * An RFC 3161 TimeStampToken (DER) over `digest` (made with `alg`), checked against the TSA's
   * root, with its genTime and its TSA certificate's notAfter. Has a deadline.
   */
  stamp(alg: ErsHash, digest: Uint8Array): Promise<{ token: Uint8Array; genTime: Date; tsaNotAfter: Date }>;
  /** The certificate the TSA signs with now (before any request): its SHA-256 (hex, of the DER) and notAfter. */
  current(): Promise<CurrentTsaCertificate>;
  /** The certificate that signed a token (from the token itself): its SHA-256 (hex, of the DER) and notAfter; undefined when it cannot be told. */
  signerOf(token: Uint8Array): { sha256: string; notAfter: Date } | undefined;
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
  /**
   * The TSA certificates retired so far, planned retirements included (the TSA history's classic
   * leaves): the records whose last archive timestamp one of them signed are renewed under the
   * current key (archive-retirement.ts). None: renewal follows the certificates' expiry alone.
   */
  retiredTsa?: readonly RetiredTsaCertificate[];
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
  /**
   * A page of a retired TSA certificate's sweep: the certificate (SHA-256), the groups and own
   * records the page named, those of them under a retired certificate (renewed in this pass,
   * counted in `renewed`), and whether the sweep is done.
   */
  retirement?: { certificate: string; looked_at: number; under_retired: number; swept: boolean };
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
  if (report.grouped + report.renewed + report.rehashed > 0 || report.retirement) log.info('archive', { ...report });
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
  /** SHA-256 of the certificate that signed its last token (from the token), if the token carries it. */
  signer: string | undefined;
  /** Its renew_at has passed (otherwise it is here because its last token's certificate is retired). */
  dueByTime: boolean;
  store(ats: ArchiveTimeStamp, renewAt: string, tsaNotAfter: string): Promise<boolean>;
  postpone(renewAt: string): Promise<boolean>;
}

const keyOf = (d: RenewalDue) => (d.kind === 'group' ? `g ${d.id}` : d.kind === 'record' ? `r ${d.image_hash}` : `d ${d.image_hash} ${d.algorithm}`);

async function renewDue(deps: ArchiveDeps, report: ArchivePassReport): Promise<void> {
  const now = (deps.clock ?? (() => new Date()))();
  const nowIso = now.toISOString();
  const due = await deps.store.listRenewalsDue(nowIso, deps.settings.renewalsPerPass);
  // The TSA's current certificate, asked once per pass and only when needed.
  let current: Promise<CurrentTsaCertificate> | undefined;
  const currentTsa = () => (current ??= deps.stamper.current());
  const retired = deps.retiredTsa ?? [];
  const page = await nextRetirementPage({
    store: deps.store,
    retired,
    current: currentTsa,
    renewBeforeMs: deps.settings.renewBeforeMs,
    retryMs: RENEW_RETRY_MS,
    now,
    limit: deps.settings.renewalsPerPass,
  });
  if (due.length === 0 && !page) return;
  const listed = new Set(due.map(keyOf));
  const candidates = (page?.candidates ?? []).filter((d) => !listed.has(keyOf(d)));
  const retiredSigners = new Set(retired.map((r) => r.sha256));
  let chains: DueChain[] = [];
  const offers: DigestOffer[] = [];
  // A chain is renewed when its renew_at has passed, or when its last token's certificate is retired.
  const wanted = (chain: DueChain) => chain.dueByTime || (chain.signer !== undefined && retiredSigners.has(chain.signer));
  await Promise.all(
    [...due, ...candidates].map(async (d) => {
      let chain: DueChain | undefined;
      if (d.kind === 'digest') {
        // On the index: a digest waits, or a correction was withdrawn (the record holds the digest: only recorded).
        const offer = await deps.store.getDigestOffer(d.image_hash, d.algorithm);
        if (offer) offers.push(offer);
      } else if (d.kind === 'group') {
        const group = await deps.store.getGroup(d.id);
        if (group) chain = groupChain(deps, group, nowIso);
      } else {
        const own = await deps.store.getOwnRecord(d.image_hash);
        if (own) chain = ownChain(deps, own, nowIso);
      }
      if (chain && wanted(chain)) chains.push(chain);
    }),
  );
  if (chains.some((c) => !c.dueByTime)) {
    // Not the current certificate's own records (its retirement is planned: they move once the next key signs).
    const signing = (await currentTsa()).sha256;
    chains = chains.filter((c) => c.dueByTime || c.signer !== signing);
  }
  const underRetired = chains.filter((c) => !c.dueByTime).length;
  if (chains.length > 0) await renewChains(deps, chains, now, report, currentTsa, retired);
  if (offers.length > 0) await rehashOffered(deps, offers, now, report);
  if (page) {
    // Recorded only now, the page's renewals stored: a pass that dies before this looks at the page again.
    await page.commit();
    report.retirement = { certificate: page.certificate.sha256, looked_at: page.candidates.length, under_retired: underRetired, swept: page.last };
  }
}

async function renewChains(
  deps: ArchiveDeps,
  chains: DueChain[],
  now: Date,
  report: ArchivePassReport,
  currentTsa: () => Promise<CurrentTsaCertificate>,
  retired: readonly RetiredTsaCertificate[],
): Promise<void> {
  // A renewal is worth a timestamp only when the TSA's certificate reaches past the chain's last
  // one, or when the chain's last certificate is retired and the TSA signs with another one not
  // retired already: otherwise (the TSA key was not rotated in time) nothing is stamped and the
  // chain waits a day, instead of growing by a useless archive timestamp every pass.
  const tsa = await currentTsa();
  const reach = tsa.notAfter.toISOString();
  const fresh = signsFreshly(retired, tsa, now);
  const isRetired = (sha256: string | undefined) => sha256 !== undefined && sha256 !== tsa.sha256 && retired.some((r) => r.sha256 === sha256);
  const isUseful = (c: DueChain) => reach > c.tsaNotAfter || (fresh && isRetired(c.signer));
  // A chain here only for its certificate's retirement, that cannot be renewed now, is left as it is.
  const stale = chains.filter((c) => !isUseful(c) && c.dueByTime);
  if (stale.length > 0) {
    log.warn('archive: renewals are due but the TSA certificate reaches no further than theirs; rotate the TSA key (retried in a day)', { due: stale.length, tsa_not_after: reach });
    const later = new Date(now.getTime() + RENEW_RETRY_MS).toISOString();
    for (const c of stale) await c.postpone(later);
  }
  const useful = chains.filter(isUseful);
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

/** A hash-tree renewal to make: from the offer's latest digest, over `base` (the chains it is built on), stored as `how` from `version`. */
interface Rehash {
  offer: DigestOffer;
  base: ArchiveTimeStampChain[];
  version: number | undefined;
  how: 'rehash' | 'renew' | 'redo';
}

/**
 * The hash-tree renewals the due offers ask for: one TSA call for all, then each offer is used.
 * An offer whose digest the record already holds (a pass died before recording it, or a
 * correction was withdrawn) is only recorded; one whose record is not made, or whose base chains
 * are no longer valid, waits.
 */
async function rehashOffered(deps: ArchiveDeps, offers: DigestOffer[], now: Date, report: ArchivePassReport): Promise<void> {
  const ready: Rehash[] = [];
  for (const offer of offers) {
    if (offer.algorithm !== deps.settings.hashAlgorithm) {
      // The configuration moved on since the offer: it is kept, due again when the algorithm is configured.
      await deps.store.postponeDigest(offer, new Date(now.getTime() + deps.settings.renewBeforeMs).toISOString());
      continue;
    }
    const plan = await planRehash(deps, offer, now);
    if (plan === 'held') await deps.store.markDigestUsed(offer);
    else if (typeof plan === 'number') await deps.store.postponeDigest(offer, new Date(now.getTime() + plan).toISOString());
    else ready.push(plan);
  }
  if (ready.length === 0) return;
  const done = await renewHashTrees(deps, deps.settings.hashAlgorithm, ready, now);
  report.stamps++;
  report.rehashed += done.length;
  // Recorded only once the record holds it: a pass that dies before this finds the record holding it (planRehash: 'held').
  for (const r of done) await deps.store.markDigestUsed(r.offer);
}

/**
 * What an offer asks for, as the records stand: 'held' when the own record's last chain holds its
 * digest already; a hash-tree renewal to make (over the group's chain, or on top of an own record
 * of another algorithm, or redone over the chains a corrected renewal was built on); or how long
 * to wait (no group yet, or the chains to build on no longer valid now).
 */
async function planRehash(deps: ArchiveDeps, offer: DigestOffer, now: Date): Promise<Rehash | 'held' | number> {
  const alg = offer.algorithm;
  const own = await deps.store.getOwnRecord(offer.image_hash);
  if (own) {
    const chains = parseEvidenceRecord(own.record).chains;
    if (own.algorithm !== alg) return { offer, base: chains, version: own.v, how: 'renew' };
    if (lastChainHolds(chains, alg, offer.digest)) return 'held';
    if (chains.length > 2) {
      // A correction of a second hash-tree renewal: redone over the chains before it as stored (no
      // longer renewed once it was made), as long as their last certificate is still valid.
      const base = chains.slice(0, -1);
      const lastToken = base[base.length - 1]?.at(-1)?.timeStamp;
      const notAfter = lastToken ? deps.stamper.signerOf(lastToken)?.notAfter : undefined;
      if (!notAfter || notAfter <= now) {
        log.warn('archive: a corrected digest cannot be used: the chains its renewal was built on are no longer valid', { image_hash: offer.image_hash, algorithm: alg });
        return deps.settings.renewBeforeMs;
      }
      return { offer, base, version: own.v, how: 'redo' };
    }
  }
  // The group's chain, the last good one (the service checks it with the image hash; renewed by
  // the job whatever the offers): the first hash-tree renewal, or a corrected one made again.
  const group = await groupChainOf(deps.store, offer.image_hash);
  if (!group) return OFFER_RETRY_MS;
  if (group.tsaNotAfter <= now.toISOString()) {
    log.warn('archive: a digest waits: its group\'s chain was not renewed before its TSA certificate expired; rotate the TSA key', { image_hash: offer.image_hash });
    return RENEW_RETRY_MS;
  }
  return own ? { offer, base: [group.chain], version: own.v, how: 'redo' } : { offer, base: [group.chain], version: undefined, how: 'rehash' };
}

/**
 * offer (DIGEST_OFFER): the account that anchored `imageHash` gives the photo's digest with the
 * configured new algorithm; the archive job renews the record's hash tree with it within a pass.
 * The latest digest counts until it is used; after that, another digest is a correction (the job
 * redoes the renewal from the last good chain) and the same one again is 409. 404 when the hash is
 * not this account's anchor; 409 when no hash-tree renewal is configured; 400 for another
 * algorithm than the configured one or a digest of the wrong length (the API checks the body's
 * shape before this: lib/http, functions/v2/evidence-record-digest.ts).
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
  const digest = Uint8Array.from(Buffer.from(digestHex, 'hex'));
  // Read, then moved from what was read (offer, or correct once used); a move that lost to another
  // (the job's, a concurrent offer) reads again.
  for (let attempt = 0; attempt < 4; attempt++) {
    const read = await deps.store.getDigestOffer(imageHash, target);
    if (read?.state === 'used' && !waitingDigest(read) && bytesEqual(read.digest, digest)) {
      throw new DomainError('conflict', 'hash_renewal_not_due', `The evidence record of ${imageHash} was renewed to ${target} from this digest already.`);
    }
    const offeredAt = (deps.clock ?? (() => new Date()))().toISOString();
    if (await deps.store.offerDigest({ image_hash: imageHash, algorithm: target, digest, offered_at: offeredAt }, read)) {
      return { image_hash: imageHash, algorithm: target, state: 'offered', offered_at: offeredAt };
    }
  }
  throw new DomainError('conflict', 'hash_renewal_not_due', `Other offers for ${imageHash} were stored while this one was; send it again.`);
}

function groupChain(deps: Pick<ArchiveDeps, 'store' | 'stamper'>, group: ArchiveGroup, nowIso: string): DueChain {
  const store = deps.store;
  const tokens = [group.timeStamp, ...group.renewals.map((r) => parseArchiveTimeStamp(r).timeStamp)];
  return {
    algorithm: group.algorithm,
    tokens,
    tsaNotAfter: group.tsa_not_after,
    signer: lastSigner(deps.stamper, tokens),
    dueByTime: group.renew_at <= nowIso,
    store: (ats, at, notAfter) => store.appendGroupRenewal(group, encodeArchiveTimeStamp(ats), at, notAfter),
    postpone: (at) => store.postponeRenewal({ kind: 'group', id: group.id }, group.v, at),
  };
}

function ownChain(deps: Pick<ArchiveDeps, 'store' | 'stamper'>, own: OwnRecord, nowIso: string): DueChain {
  const store = deps.store;
  const record = parseEvidenceRecord(own.record);
  const last = record.chains[record.chains.length - 1] as ArchiveTimeStampChain;
  const tokens = last.map((a) => a.timeStamp);
  return {
    algorithm: own.algorithm,
    tokens,
    tsaNotAfter: own.tsa_not_after,
    signer: lastSigner(deps.stamper, tokens),
    dueByTime: own.renew_at <= nowIso,
    store: (ats, at, notAfter) => {
      const chains = [...record.chains.slice(0, -1), [...last, ats]];
      const der = encodeEvidenceRecord({ digestAlgorithms: algorithmsOf(chains), chains });
      return store.putOwnRecord({ ...own, record: der, renew_at: at, tsa_not_after: notAfter }, own.v);
    },
    postpone: (at) => store.postponeRenewal({ kind: 'record', image_hash: own.image_hash }, own.v, at),
  };
}

/** The certificate that signed a chain's last token, as the stamper tells it from the token. */
function lastSigner(stamper: ArchiveStamper, tokens: readonly Uint8Array[]): string | undefined {
  const last = tokens[tokens.length - 1];
  return last ? stamper.signerOf(last)?.sha256 : undefined;
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
async function groupChainOf(store: ArchiveStore, imageHash: string, known?: ArchiveMembership): Promise<{ chain: ArchiveTimeStampChain; tsaNotAfter: string } | undefined> {
  const member = known ?? (await store.membership(imageHash));
  const group = member.group && member.path ? await store.getGroup(member.group) : undefined;
  if (!group || !member.path) return undefined;
  const chain: ArchiveTimeStampChain = [
    { digestAlgorithm: group.algorithm, reducedHashtree: member.path, timeStamp: group.timeStamp },
    ...group.renewals.map(parseArchiveTimeStamp),
  ];
  return { chain, tsaNotAfter: group.tsa_not_after };
}

/**
 * Hash-tree renewal (RFC 4998 §5.2) of the given records to `algorithm`, one TSA call for all:
 * for each, h' = H'(H'(photo) ‖ H'(DER of the chains it is built on)); a tree over the h'; a new
 * chain whose first archive timestamp is that tree's, after those chains. Each becomes the record
 * of its own (OWN_RECORD.rehash, renew or redo, from the version read). The digest cannot be
 * checked here (the service never has the photo): a wrong one makes a chain no verifier accepts
 * with the photo, which the record served without a digest never holds and a corrected digest
 * makes again. Returns the renewals stored.
 */
async function renewHashTrees(deps: ArchiveDeps, algorithm: ErsHash, ready: readonly Rehash[], now: Date): Promise<Rehash[]> {
  const leaves = ready.map((r) => hashTreeRenewalInput(algorithm, r.offer.digest, r.base));
  const tree = buildHashTree(algorithm, leaves.map((l) => [l]));
  const stamped = await deps.stamper.stamp(algorithm, tree.root);
  const at = renewAt(stamped.tsaNotAfter, deps.settings, now);
  const renewed: Rehash[] = [];
  for (const [i, r] of ready.entries()) {
    const chains = [...r.base, [{ digestAlgorithm: algorithm, reducedHashtree: tree.reduced(i), timeStamp: stamped.token }]];
    const der = encodeEvidenceRecord({ digestAlgorithms: algorithmsOf(chains), chains });
    try {
      const own = { image_hash: r.offer.image_hash, v: (r.version ?? 0) + 1, record: der, renew_at: at, algorithm, tsa_not_after: stamped.tsaNotAfter.toISOString() };
      if (await deps.store.putOwnRecord(own, r.version, r.how === 'rehash' ? undefined : r.how)) renewed.push(r);
    } catch (error) {
      log.warn('archive: a hash-tree renewal could not be stored; the next one retries', { image_hash: r.offer.image_hash, ...describeError(error) });
    }
  }
  return renewed;
}
