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
 *   service never sees: its holder gives that digest (offerDigest, archive-rehash.ts). The result is a
 *   record of the member's own, renewed on its own from then on, served to whoever gives that
 *   digest (evidenceRecordOf, archive-record.ts); a wrong digest is corrected by sending the right one, and the
 *   renewal is made again from the last good chain, the group's, which no offer changes.
 *
 * Every step is a conditional single-item write (ARCHIVE_GROUP, ARCHIVE_MEMBER, OWN_RECORD,
 * DIGEST_OFFER in lib/state-machines.ts): a crash anywhere leaves either nothing, a group its
 * members do not name yet (the next pass over the same hashes finds it by its root and stamps
 * nothing again), members that name a stored group, or an own record whose offer is not recorded
 * used yet (the next pass finds the record holding its digest and records it).
 *
 * This module is the pass (grouping, then the timestamp renewals due); archive-rehash.ts the
 * offered digests and their hash-tree renewal; archive-record.ts the record served and when a
 * chain is renewed next; archive-retirement.ts the renewals a TSA key's retirement makes due;
 * archive-store.ts the store's interface.
 */
import {
  type ArchiveTimeStamp,
  type ArchiveTimeStampChain,
  type ErsHash,
  algorithmsOf,
  buildHashTree,
  encodeArchiveTimeStamp,
  encodeEvidenceRecord,
  ersDigest,
  parseArchiveTimeStamp,
  parseEvidenceRecord,
} from '../crypto/ers.js';
import { log } from '../log.js';
import type { SweepStep } from '../accounts/counter-repository.js';
import { FIRST_ALGORITHM, RENEW_RETRY_MS, renewAt } from './archive-record.js';
import { rehashOffered } from './archive-rehash.js';
import type { ArchiveGroup, ArchiveStore, DigestOffer, OwnRecord, RenewalDue } from './archive-store.js';
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

