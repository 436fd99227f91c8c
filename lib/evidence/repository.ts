import { describeError, log } from '../log.js';
import { ProcessCache } from '../memo.js';
import type { BatchRef, ChainLinkStore, EvidenceItemStore, HashClaimResult, Registration, SweepStep } from './ports.js';
import {
  type AnchorClaim,
  type AnchoredEvidence,
  type ChainLink,
  type EvidenceItem,
  type FinalLedgerReceipt,
  isAnchored,
  type MerkleInclusion,
  type SignedProofs,
  type StandaloneAnswers,
  type StandaloneKind,
  type StandaloneProofStore,
  type StoredTx,
  type AnchorReceipt,
} from './records.js';

export * from './records.js';
export type { BatchRef, HashClaimResult, Registration } from './ports.js';

/** Why a chain slot could not be claimed; `held`: the slot held this hash already (an identical retry, or a rival for the hash at the same place). */
export type ChainClaimResult =
  | { ok: true; held: boolean }
  | { ok: false; reason: 'index_taken' | 'previous_missing'; nextIndex: number; retryAfterSeconds?: number }
  | { ok: false; reason: 'previous_mismatch'; expectedPrevious: string };

/**
 * Chain links this process saw anchored (public key and index → chain_hash): an anchored link
 * never changes, so a device's next claim can skip reading its neighbours (claimLink). Bounded;
 * a link not here is read as before.
 */
const knownAnchored = new ProcessCache<string, string>('chain links anchored by this process', 20_000);
const linkKey = (publicKeyHex: string, index: number) => `${publicKeyHex}#${index}`;

/**
 * The evidence the domain keeps: the evidence items (their state machine, EVIDENCE_ITEM) and the
 * device chains, over the two ports the store implements (lib/evidence/ports.ts; DynamoDB:
 * lib/store/evidence-table.ts and chain-table.ts, wired by lib/deps/evidence.ts). The item
 * transitions are the store's, one conditional write each; what spans the two (a chain link
 * follows its item) and the rules that keep a device chain from forking are here.
 */
export class EvidenceRepository implements StandaloneProofStore {
  constructor(
    private readonly items: EvidenceItemStore,
    private readonly links: ChainLinkStore,
  ) {}

  // ------------------------------------------------------------------ reads

  /** The evidence item, read strongly consistent (verify must see a just-finished anchor). */
  get(imageHash: string): Promise<EvidenceItem | undefined> {
    return this.items.get(imageHash);
  }

  /** Many items, read strongly consistent in batches of 100 (the reconciler's queue). */
  getMany(imageHashes: readonly string[]): Promise<EvidenceItem[]> {
    return this.items.getMany(imageHashes);
  }

  /** Unfinished anchors from the sparse pending_tx index, oldest first (a hint; the scans read the items). */
  listUnfinished(limit: number): Promise<string[]> {
    return this.items.listUnfinished(limit);
  }

  /** Every unfinished anchor, read from the items themselves (a full scan: an operator's tool). */
  scanUnfinished(): Promise<string[]> {
    return this.items.scanUnfinished();
  }

  /** One step of the local safety sweep: the unfinished anchors among the next `step.items` items, and whether it reached the end. */
  scanUnfinishedSegment(step: SweepStep): Promise<{ hashes: string[]; complete: boolean }> {
    return this.items.scanUnfinishedSegment(step);
  }

  /** The last link of a device's chain, if any (to tell a client the next free index). */
  lastLink(publicKeyHex: string): Promise<ChainLink | undefined> {
    return this.links.lastLink(publicKeyHex);
  }

  getLink(publicKeyHex: string, index: number): Promise<ChainLink | undefined> {
    return this.links.getLink(publicKeyHex, index);
  }

  /** A page of a device's chain in index order. */
  listLinks(publicKeyHex: string, fromIndex: number, limit: number): Promise<ChainLink[]> {
    return this.links.listLinks(publicKeyHex, fromIndex, limit);
  }

  // ------------------------------------------------------------------ registration and stand-alone proofs

  /** Registers a hash for an account, paid by `holdId` (EvidenceItemStore.register). */
  register(imageHash: string, accountId: string, now: string, holdId: string): Promise<Registration | 'barred'> {
    return this.items.register(imageHash, accountId, now, holdId);
  }

  /** Bars a registration's hold before it is refunded (EvidenceItemStore.barRegistration). */
  barRegistration(imageHash: string, accountId: string, holdId: string): Promise<'barred' | 'registered'> {
    return this.items.barRegistration(imageHash, accountId, holdId);
  }

  /** The account's own registration of the hash, if it made one. */
  getRegistration(imageHash: string, accountId: string, item?: EvidenceItem): Promise<Registration | undefined> {
    return this.items.getRegistration(imageHash, accountId, item);
  }

  /** When any account first registered the hash, if one did (public verify of a hash not anchored). */
  firstRegistration(imageHash: string, item?: EvidenceItem): Promise<string | undefined> {
    return this.items.firstRegistration(imageHash, item);
  }

  /** Records an account's stand-alone timestamp or signature answer (an item of its own; the latest wins). */
  recordStandalone(imageHash: string, accountId: string, kind: StandaloneKind, answer: object): Promise<void> {
    return this.items.recordStandalone(imageHash, accountId, kind, answer);
  }

  /** The account's stand-alone answers on the hash (records.ts standaloneAnswers adds what an older item kept). */
  getStandalone(imageHash: string, accountId: string): Promise<StandaloneAnswers> {
    return this.items.getStandalone(imageHash, accountId);
  }

  // ------------------------------------------------------------------ the anchor's states (EvidenceItemStore says each)

  /** publish (none → publishing): the anchor's first write, which claims the hash (EvidenceItemStore.publish). */
  publish(claim: AnchorClaim, proofs: SignedProofs, tx: StoredTx | BatchRef): Promise<HashClaimResult> {
    return this.items.publish(claim, proofs, tx);
  }

  /** bar (none → none): a lapsed claim can never publish (EvidenceItemStore.barClaim). */
  barClaim(imageHash: string, claimId: string): Promise<'barred' | 'anchored'> {
    return this.items.barClaim(imageHash, claimId);
  }

  moveToBatch(current: EvidenceItem, toBatch: string): Promise<EvidenceItem | null> {
    return this.items.moveToBatch(current, toBatch);
  }

  replaceTx(current: EvidenceItem, tx: StoredTx): Promise<EvidenceItem | null> {
    return this.items.replaceTx(current, tx);
  }

  async markAnchored(
    current: EvidenceItem,
    receipt: AnchorReceipt | null,
    batch?: { tx: Omit<StoredTx, 'tx_raw'>; merkle: MerkleInclusion },
  ): Promise<AnchoredEvidence | null> {
    const anchored = await this.items.markAnchored(current, receipt, batch);
    // Its link is this hash's for good: the device's next claim may take the shortcut (claimLink).
    if (anchored) knownAnchored.set(linkKey(anchored.public_key_hex, anchored.chain_index), anchored.chain_hash);
    return anchored;
  }

  /**
   * confirm / fail (anchored:pending → confirmed | failed): the receipt of a version of the named
   * transaction. `landed`: when the ledger sender replaced a stuck transaction, the version
   * actually mined and every version; the record then names the mined one, and so does its chain link.
   */
  async setTxStatus(
    current: EvidenceItem,
    status: 'confirmed' | 'failed',
    blockNumber: number | undefined,
    at: string,
    landed: { txHash?: string; txHashes?: string[] } = {},
  ): Promise<EvidenceItem | null> {
    const moved = await this.items.setTxStatus(current, status, blockNumber, at, landed);
    if (moved && landed.txHashes && landed.txHashes.length > 1) await this.linkFollows(moved, (landed.txHash ?? current.tx_hash) as string);
    return moved;
  }

  recordFinalLedger(current: EvidenceItem, final: FinalLedgerReceipt): Promise<boolean> {
    return this.items.recordFinalLedger(current, final);
  }

  clearUnfinished(current: EvidenceItem): Promise<void> {
    return this.items.clearUnfinished(current);
  }

  /**
   * follow (anchored:pending → pending): the ledger sender replaced the stuck transaction of a
   * pending anchor (same nonce, higher fees): the record (and its chain link) names the
   * replacement; `tx_hashes` keeps every version, oldest first, because the receipt of any of them
   * may be the one that lands. Read, then moved from what was read; false when the record is not
   * pending on `previousTxHash` any more.
   */
  async replaceTxHash(imageHash: string, previousTxHash: string, txHash: string, txHashes: string[]): Promise<boolean> {
    for (let attempt = 0; attempt < 4; attempt++) {
      const current = await this.items.get(imageHash);
      if (!isAnchored(current) || current.tx_status !== 'pending') return false;
      if (current.tx_hash !== previousTxHash && !(current.tx_hashes ?? []).includes(previousTxHash)) return false;
      const moved = await this.items.follow(current, txHash, txHashes);
      if (moved) {
        await this.linkFollows(moved, txHash);
        return true;
      }
    }
    return false;
  }

  /**
   * The chain link of an anchored item names the same transaction as the item (after a
   * replacement). Best-effort: the item is the record of proof; a link left behind only shows an
   * older version of the same transaction (and the caller may lack write access to the chains table).
   */
  private async linkFollows(item: EvidenceItem, txHash: string): Promise<void> {
    if (item.public_key_hex === undefined || item.chain_index === undefined) return;
    try {
      await this.links.followTx(item.public_key_hex, item.chain_index, item.image_hash, txHash);
    } catch (error) {
      log.warn('chain link not updated to the replacement transaction', { image_hash: item.image_hash, tx_hash: txHash, ...describeError(error) });
    }
  }

  // ------------------------------------------------------------------ device-chain links

  /**
   * Claims position `link.chain_index` of a device chain for `link.image_hash` and the request's
   * claim, under the claim's lease (`link.lease_expires_at`), BEFORE the anchor publishes: the link
   * is what keeps a chain from forking, the publish what claims the hash. Rules, read from the three
   * links around the index in one strongly consistent read:
   * - the previous link exists (claimed or anchored: a device may pipeline its uploads) and its
   *   chain_hash is this link's previous_hash;
   * - a next link, if one was claimed already, has this link's chain_hash as its previous_hash;
   * - the slot is free; or it holds this very hash (an identical retry: a claimed link moves to
   *   its claim, an anchored one is its own); or it is held by a claim that can never publish (its
   *   lease lapsed and no anchor holds the slot: the claim is barred first, then the link freed).
   * `held`: the slot holds this hash already (the caller's publish then decides between a retry
   * and a rival; it never frees such a link). `previousPublished`: the caller itself published the
   * previous link's anchor, with this link's previous_hash (the batch anchor's earlier entry).
   */
  async claimLink(link: ChainLink, nowMs: number, previousPublished = false): Promise<ChainClaimResult> {
    const i = link.chain_index;
    // The shortcut (no read): where no link ever was, a put if absent is the whole claim when the
    // previous link is known to stay with this previous_hash (this process anchored it, or the
    // caller published its anchor: a published anchor's link never goes) or there is none (index 0).
    // No next link can exist then: a link is claimed only on an existing previous one, and links
    // are released, never deleted.
    const known = i === 0 || previousPublished || knownAnchored.get(linkKey(link.public_key_hex, i - 1)) === link.previous_hash;
    if (known && (await this.links.putLink(link, 'never-claimed'))) return { ok: true, held: false };
    for (let attempt = 0; attempt < 4; attempt++) {
      const around = await this.links.linksAround(link.public_key_hex, i);
      const live = (l: ChainLink | undefined) => (l?.state === 'released' ? undefined : l);
      const prev = live(around.get(i - 1));
      const self = live(around.get(i));
      const next = live(around.get(i + 1));
      if (i > 0) {
        if (!prev) return { ok: false, reason: 'previous_missing', nextIndex: await this.nextIndex(link.public_key_hex) };
        if (prev.chain_hash !== link.previous_hash) return { ok: false, reason: 'previous_mismatch', expectedPrevious: prev.chain_hash };
      }
      if (next && next.previous_hash !== link.chain_hash) return { ok: false, reason: 'index_taken', nextIndex: await this.nextIndex(link.public_key_hex) };
      if (self) {
        if (self.image_hash === link.image_hash) {
          if (self.state !== 'claimed') return { ok: true, held: true };
          if (await this.links.moveLinkClaim(link, link.claim_id, self.claim_id, link.lease_expires_at ?? 0)) return { ok: true, held: true };
          continue;
        }
        if (self.state === 'claimed' && (await this.freeLapsed(self, nowMs))) continue;
        const retryAfter = self.state === 'claimed' ? Math.max(1, Math.ceil(((self.lease_expires_at ?? 0) - nowMs) / 1000)) : undefined;
        return { ok: false, reason: 'index_taken', nextIndex: await this.nextIndex(link.public_key_hex), ...(retryAfter ? { retryAfterSeconds: retryAfter } : {}) };
      }
      if (await this.links.putLink(link)) return { ok: true, held: false };
    }
    return { ok: false, reason: 'index_taken', nextIndex: await this.nextIndex(link.public_key_hex) };
  }

  /**
   * A claimed link held by another hash: freed when its claim can never publish, true then. What
   * the hash's evidence item says: an anchor that holds this slot → the link lags behind it (set
   * anchored now; it stays taken). Otherwise, once the claim's lease lapsed, the claim is barred on
   * the item (unless an anchor is on the hash, which then is not this claim's) and the link freed:
   * barred first, so that the claim's request, if it still runs, can never publish into a slot it
   * lost. While the lease runs the link stays taken.
   */
  private async freeLapsed(link: ChainLink, nowMs: number): Promise<boolean> {
    const item = await this.items.get(link.image_hash);
    const holds = item?.anchor_state !== undefined && item.public_key_hex === link.public_key_hex && item.chain_index === link.chain_index;
    if (holds) {
      if (isAnchored(item)) await this.anchorLink(link.public_key_hex, link.chain_index, link.image_hash, item.anchored_at, item.tx_hash);
      return false;
    }
    if ((link.lease_expires_at ?? 0) >= nowMs) return false;
    if (item?.anchor_state === undefined && (await this.items.barClaim(link.image_hash, link.claim_id)) === 'anchored') return false; // published meanwhile: decide again
    return this.releaseLink(link.public_key_hex, link.chain_index, link.claim_id);
  }

  /**
   * Frees a link still claimed by `claimId` (its request gives it back: its publish was refused,
   * or it failed before publishing; or its claim was barred). Never an anchored link, never a
   * claim moved to an identical retry.
   */
  releaseLink(publicKeyHex: string, index: number, claimId: string): Promise<boolean> {
    return this.links.releaseLink(publicKeyHex, index, claimId);
  }

  /**
   * Marks a link anchored once its evidence is anchored: the link of that very hash (whatever
   * claim holds it: only that hash can ever complete it). Idempotent. The evidence table's changes
   * do it for every anchor (derived.ts); readers meanwhile derive it from the item.
   */
  anchorLink(publicKeyHex: string, index: number, imageHash: string, anchoredAt: string, txHash: string): Promise<void> {
    return this.links.anchorLink(publicKeyHex, index, imageHash, anchoredAt, txHash);
  }

  private async nextIndex(publicKeyHex: string): Promise<number> {
    const last = await this.links.lastLink(publicKeyHex);
    return last ? last.chain_index + 1 : 0;
  }
}
