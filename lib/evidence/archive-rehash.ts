/**
 * Hash-tree renewal from offered digests (RFC 4998 §5.2; archive.ts, "Hash-tree renewal"): the
 * account that anchored a photo offers its digest with the configured new algorithm
 * ({@link offerDigest}), and the archive pass uses the offers that are due ({@link rehashOffered}):
 * one TSA call for all, each stored as the member's own record (OWN_RECORD, DIGEST_OFFER).
 */
import { type ArchiveTimeStampChain, type ErsHash, algorithmsOf, buildHashTree, bytesEqual, encodeEvidenceRecord, ersDigest, hashTreeRenewalInput, lastChainHolds, parseEvidenceRecord } from '../crypto/ers.js';
import { DomainError, invalid } from '../errors.js';
import { describeError, log } from '../log.js';
import type { ArchiveDeps, ArchivePassReport } from './archive.js';
import { FIRST_ALGORITHM, RENEW_RETRY_MS, groupChainOf, renewAt } from './archive-record.js';
import { type DigestOffer, waitingDigest } from './archive-store.js';

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
export async function rehashOffered(deps: ArchiveDeps, offers: DigestOffer[], now: Date, report: ArchivePassReport): Promise<void> {
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
