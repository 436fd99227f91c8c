import { DeleteCommand, GetCommand, PutCommand, QueryCommand, ScanCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describeError, log } from '../log.js';
import { setClause, tryWrite, type WriteOutcome } from '../store/conditional.js';
import type { StatsPort } from './stats.js';

import {
  type AnchorClaim,
  type AnchoredEvidence,
  type ChainLink,
  type EvidenceItem,
  type FinalLedgerReceipt,
  isAnchored,
  type MerkleInclusion,
  type SignedProofs,
  type StandaloneKind,
  type StandaloneProofStore,
  standaloneAttribute,
  type StoredTx,
  type TxStatus,
} from './records.js';

export * from './records.js';

/** The one partition of the pending_tx index (pending anchors are few: minutes' worth at most). */
const PENDING_SHARD = 'pending';

/** Why a chain slot could not be claimed. */
export type ChainClaimResult =
  | { ok: true }
  | { ok: false; reason: 'index_taken' | 'previous_missing'; nextIndex: number }
  | { ok: false; reason: 'previous_mismatch'; expectedPrevious: string };


/** Batch mode: the batch an anchor's leaf joined, and the chain and wallet it will be published with. */
export interface BatchRef {
  batch_pk: string;
  ledger_address: string;
  ledger_chain_id: number;
}

/** Why claiming a hash failed: the item as it stands (undefined when it vanished meanwhile). */
export type HashClaimResult = { ok: true } | { ok: false; current: EvidenceItem | undefined };

/** Fields of an anchor that a release removes (a registration stays). */
const ANCHOR_FIELDS = [
  'anchor_state', 'claim_id', 'fingerprint', 'lease_expires_at', 'quota_counter', 'quota_hold', 'pending_shard', 'anchored_at',
  'account_id', 'api_version', 'device_id', 'public_key_hex', 'signature_hex', 'chain_index', 'chain_hash', 'previous_hash',
  'statement', 'server_hash', 'pq_algorithm', 'pq_key_id', 'pq_public_key', 'pq_signature',
  'tsa_response', 'tsa_gen_time', 'tsa_serial', 'tsa_policy', 'tsa_certificates',
  'tx_hash', 'tx_nonce', 'tx_raw', 'ledger_address', 'ledger_chain_id', 'batch_pk', 'merkle',
] as const;

/**
 * DynamoDB access for evidence and device chains. Every write is a single-item conditional
 * write (no transactions: dynalite has none, and the state machine needs none); each condition
 * is explained where it is written.
 */
export class EvidenceRepository implements StandaloneProofStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tables: { evidence: string; chains: string },
    /** Counts first registrations (GET /api/v1/stats); best-effort. */
    private readonly stats?: StatsPort,
  ) {}

  // ------------------------------------------------------------------ reads

  /** The evidence item, read strongly consistent (verify must see a just-finished anchor). */
  async get(imageHash: string): Promise<EvidenceItem | undefined> {
    const r = await this.db.send(new GetCommand({ TableName: this.tables.evidence, Key: { image_hash: imageHash }, ConsistentRead: true }));
    return r.Item as EvidenceItem | undefined;
  }

  /**
   * Unfinished anchors (accepting, publishing, or anchored with the transaction pending), from the
   * sparse pending_tx index, oldest first. The index is a hint: it is eventually consistent, and
   * dynalite can lose an entry to a SIGKILL between an item and its index; scanUnfinished() is
   * the full pass that catches those.
   */
  async listUnfinished(limit: number): Promise<string[]> {
    const r = await this.db.send(
      new QueryCommand({
        TableName: this.tables.evidence,
        IndexName: 'pending_tx',
        KeyConditionExpression: 'pending_shard = :p',
        ExpressionAttributeValues: { ':p': PENDING_SHARD },
        Limit: limit,
      }),
    );
    return (r.Items ?? []).map((i) => String(i.image_hash));
  }

  /** Every unfinished anchor, read from the items themselves (a full scan: at start and now and then). */
  async scanUnfinished(): Promise<string[]> {
    const out: string[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new ScanCommand({
          TableName: this.tables.evidence,
          ProjectionExpression: 'image_hash',
          FilterExpression: 'anchor_state IN (:a, :p) OR (anchor_state = :d AND tx_status = :pending) OR attribute_exists(pending_shard)',
          ExpressionAttributeValues: { ':a': 'accepting', ':p': 'publishing', ':d': 'anchored', ':pending': 'pending' },
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      out.push(...(page.Items ?? []).map((i) => String(i.image_hash)));
      start = page.LastEvaluatedKey;
    } while (start);
    return out;
  }

  /** The last link of a device's chain, if any (to tell a client the next free index). */
  async lastLink(publicKeyHex: string): Promise<ChainLink | undefined> {
    const r = await this.db.send(
      new QueryCommand({
        TableName: this.tables.chains,
        KeyConditionExpression: 'public_key_hex = :pk',
        ExpressionAttributeValues: { ':pk': publicKeyHex },
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    return r.Items?.[0] as ChainLink | undefined;
  }

  async getLink(publicKeyHex: string, index: number): Promise<ChainLink | undefined> {
    const r = await this.db.send(
      new GetCommand({ TableName: this.tables.chains, Key: { public_key_hex: publicKeyHex, chain_index: index }, ConsistentRead: true }),
    );
    return r.Item as ChainLink | undefined;
  }

  /** A page of a device's chain in index order. */
  async listLinks(publicKeyHex: string, fromIndex: number, limit: number): Promise<ChainLink[]> {
    const r = await this.db.send(
      new QueryCommand({
        TableName: this.tables.chains,
        KeyConditionExpression: 'public_key_hex = :pk AND chain_index >= :from',
        ExpressionAttributeValues: { ':pk': publicKeyHex, ':from': fromIndex },
        Limit: limit,
      }),
    );
    return (r.Items ?? []) as ChainLink[];
  }

  // ------------------------------------------------------------------ registration

  /**
   * Registers a hash; idempotent: `if_not_exists` keeps the first registration's time. The item
   * as it was before (ALL_OLD) tells both that time and whether this call was the first (exactly
   * one of N concurrent registrations sees no registered_at), which the statistics count.
   */
  async register(imageHash: string, accountId: string, now: string): Promise<{ registeredAt: string; first: boolean }> {
    const r = await this.db.send(
      new UpdateCommand({
        TableName: this.tables.evidence,
        Key: { image_hash: imageHash },
        UpdateExpression: 'SET registered_at = if_not_exists(registered_at, :now), registered_by = if_not_exists(registered_by, :acct)',
        ExpressionAttributeValues: { ':now': now, ':acct': accountId },
        ReturnValues: 'ALL_OLD',
      }),
    );
    const before = (r.Attributes as EvidenceItem | undefined)?.registered_at;
    if (before === undefined) await this.stats?.record({ registered: 1 });
    return { registeredAt: before ?? now, first: before === undefined };
  }

  // ------------------------------------------------------------------ stand-alone proofs

  /**
   * Records an account's stand-alone timestamp or signature answer on the hash's item: one
   * unconditional SET of `ts#<account>` / `sig#<account>` (the latest answer wins; the item is
   * created when the hash had none). It touches no other attribute: a registration or an anchor
   * on the same item stays as it is, and every anchor write is an UpdateItem of its own fields.
   */
  async recordStandalone(imageHash: string, accountId: string, kind: StandaloneKind, answer: object): Promise<void> {
    await this.db.send(
      new UpdateCommand({
        TableName: this.tables.evidence,
        Key: { image_hash: imageHash },
        UpdateExpression: 'SET #proof = :answer',
        ExpressionAttributeNames: { '#proof': standaloneAttribute(kind, accountId) },
        ExpressionAttributeValues: { ':answer': answer },
      }),
    );
  }

  // ------------------------------------------------------------------ the anchor's states

  /**
   * accepting: claims the hash for one request. Exactly one of any number of concurrent claims
   * wins: the condition admits only an item where no anchor is under way or done (a registration
   * may be there). A lapsed claim is never overwritten here: it is released first (its link and
   * quota hold with it) or taken over by the identical retry (takeOver).
   */
  async claimHash(claim: AnchorClaim): Promise<HashClaimResult> {
    const r = await this.setIf(
      claim.image_hash,
      { ...claim, image_hash: undefined, anchor_state: 'accepting', pending_shard: PENDING_SHARD },
      'attribute_not_exists(anchor_state)',
      {},
    );
    if (r.ok) return { ok: true };
    return { ok: false, current: (r.old as unknown as EvidenceItem | undefined) ?? (await this.get(claim.image_hash)) };
  }

  /**
   * The identical retry takes over a lapsed `accepting` claim: same fingerprint (same request),
   * lease over, and the claim still the one it read. The new claim gets its own lease, time and
   * quota hold (the old hold is then refunded by the reconciler: the item no longer names it).
   */
  async takeOver(
    imageHash: string,
    previousClaimId: string,
    next: Pick<AnchorClaim, 'claim_id' | 'anchored_at' | 'lease_expires_at' | 'quota_counter' | 'quota_hold' | 'fingerprint'>,
    nowMs: number,
  ): Promise<boolean> {
    const { claim_id, anchored_at, lease_expires_at, quota_counter, quota_hold } = next;
    const r = await this.setIf(
      imageHash,
      { claim_id, anchored_at, lease_expires_at, quota_counter, quota_hold },
      'anchor_state = :accepting AND claim_id = :prev AND fingerprint = :fp AND lease_expires_at < :now',
      { ':accepting': 'accepting', ':prev': previousClaimId, ':fp': next.fingerprint, ':now': nowMs },
    );
    return r.ok;
  }

  /**
   * Releases a claim whose anchor was not published: the anchor's fields go, a registration stays.
   * - Without `unsentTx`: an `accepting` claim. A release and a move to publishing of the same
   *   claim are exclusive (both are conditional on the state), so exactly one of them happens.
   * - With `unsentTx`: a `publishing` item whose request saw the ledger refuse its transaction
   *   (the sender gave the nonce back: it can never go out). Only that request does this, and only
   *   while the item still names that transaction.
   */
  async release(imageHash: string, claimId: string, unsentTx?: string): Promise<boolean> {
    const r = await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.tables.evidence,
        Key: { image_hash: imageHash },
        UpdateExpression: `REMOVE ${ANCHOR_FIELDS.join(', ')}`,
        ConditionExpression: unsentTx
          ? 'claim_id = :id AND anchor_state = :publishing AND tx_hash = :tx'
          : 'claim_id = :id AND anchor_state = :accepting',
        ExpressionAttributeValues: unsentTx ? { ':id': claimId, ':publishing': 'publishing', ':tx': unsentTx } : { ':id': claimId, ':accepting': 'accepting' },
      }),
    );
    return r.ok;
  }

  /**
   * accepting → publishing: stores every proof and the signed transaction, before the transaction
   * is persisted by the ledger sender or broadcast (the sender calls this from its beforePersist
   * hook). In batch mode the item names the batch its leaf joins (`batch_pk`) instead of a
   * transaction of its own; the leaf is written after this (lib/evidence/batch-publish.ts).
   * False when the claim is no longer this request's (released or taken over): the sender
   * then gives the nonce back and nothing goes out.
   */
  async markPublishing(imageHash: string, claimId: string, proofs: SignedProofs, tx: StoredTx | BatchRef): Promise<boolean> {
    const r = await this.setIf(
      imageHash,
      { ...proofs, ...tx, anchor_state: 'publishing' },
      'claim_id = :id AND anchor_state = :accepting',
      { ':id': claimId, ':accepting': 'accepting' },
      { remove: ['lease_expires_at'] },
    );
    return r.ok;
  }

  /**
   * A publishing leaf that its batch was sealed without (written after the sealer's Query, or past
   * the batch's size limit) moves to a later window. Conditional on the batch it names, so of two
   * resumers that both saw it left out, one moves it and the other reads where it went.
   */
  async moveToBatch(imageHash: string, fromBatch: string, toBatch: string): Promise<boolean> {
    const r = await this.setIf(imageHash, { batch_pk: toBatch }, 'anchor_state = :publishing AND batch_pk = :from', { ':publishing': 'publishing', ':from': fromBatch });
    return r.ok;
  }

  /**
   * publishing: the stored transaction can never be mined (its nonce went to another transaction
   * and it has no receipt), so a new one replaces it. Conditional on the item still naming the
   * dead one: of two resumers that both found it dead, one replaces it and the other's new
   * transaction is given back unsent.
   */
  async replaceTx(imageHash: string, deadTxHash: string, tx: StoredTx): Promise<boolean> {
    const r = await this.setIf(imageHash, { ...tx }, 'anchor_state = :publishing AND tx_hash = :dead', { ':publishing': 'publishing', ':dead': deadTxHash });
    return r.ok;
  }

  /**
   * publishing → anchored: the transaction `namedTxHash` (the one the item names) was handed to
   * the ledger. With a receipt the status is recorded in the same write (`minedTxHash`: the version
   * mined, after a fee replacement) and the item leaves the unfinished index. The anchored item
   * only for the call that made the move (statistics count it once); null when another resumer
   * did, or the item names another transaction.
   */
  async markAnchored(
    imageHash: string,
    namedTxHash: string,
    receipt: { status: TxStatus; blockNumber: number; at: string; minedTxHash: string; txHashes?: string[] | undefined } | null,
    batch?: { pk: string; tx: Omit<StoredTx, 'tx_raw'>; merkle: MerkleInclusion },
  ): Promise<AnchoredEvidence | null> {
    // Batch mode: the item named its batch (kept: which batch holds it) and no transaction until
    // now; it gets the batch's transaction and its inclusion proof in this same write.
    const fields: Record<string, unknown> = { ...batch?.tx, merkle: batch?.merkle, anchor_state: 'anchored', tx_status: receipt?.status ?? 'pending' };
    if (receipt) {
      fields.block_number = receipt.blockNumber;
      fields.confirmed_at = receipt.at;
      fields.tx_hash = receipt.minedTxHash;
      if (receipt.txHashes && receipt.txHashes.length > 1) fields.tx_hashes = receipt.txHashes;
    }
    // A confirmed transaction stays on the unfinished index until its finalized receipt is
    // stored (recordFinalLedger, by the reconciler); a failed one has nothing left to do.
    const r = await this.setIf(
      imageHash,
      fields,
      batch ? 'anchor_state = :publishing AND batch_pk = :named' : 'anchor_state = :publishing AND tx_hash = :named',
      { ':publishing': 'publishing', ':named': batch ? batch.pk : namedTxHash },
      // A confirmed anchor stays on the unfinished list until its final receipt is stored (ledger-finality.ts).
      { remove: [...(batch ? [] : ['tx_raw']), ...(receipt && receipt.status !== 'confirmed' ? ['pending_shard'] : [])], returnNew: true },
    );
    return r.ok ? (r.attributes as unknown as AnchoredEvidence) : null;
  }

  /**
   * Records the receipt of an anchored item's transaction (the request itself or the reconciler).
   * `landed`: when the ledger sender replaced a stuck transaction, the version actually mined
   * (`txHash`, possibly the original) and every version (`txHashes`); the record then names the
   * mined one.
   */
  async setTxStatus(
    imageHash: string,
    txHash: string,
    status: TxStatus,
    blockNumber: number | undefined,
    at: string,
    landed: { txHash?: string; txHashes?: string[] } = {},
  ): Promise<void> {
    const values: Record<string, unknown> = { ':s': status, ':b': blockNumber ?? null, ':at': at, ':tx': txHash, ':mined': landed.txHash ?? txHash };
    const all = landed.txHashes && landed.txHashes.length > 1 ? landed.txHashes : undefined;
    if (all) values[':all'] = all;
    const r = await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.tables.evidence,
        Key: { image_hash: imageHash },
        // A confirmed transaction stays on the unfinished index until its finalized receipt is
        // stored (recordFinalLedger); a failed one leaves it.
        UpdateExpression: `SET tx_status = :s, block_number = :b, confirmed_at = :at, tx_hash = :mined${all ? ', tx_hashes = :all' : ''}${status === 'confirmed' ? '' : ' REMOVE pending_shard'}`,
        // Only for the transaction this record names, or one it named before a replacement
        // (tx_hashes: the versions of a replaced transaction, see replaceTxHash).
        ConditionExpression: 'tx_hash = :tx OR contains(tx_hashes, :tx)',
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    if (r.ok && all) await this.linkFollows(r.attributes as unknown as EvidenceItem, values[':mined'] as string);
  }

  /**
   * Stores the finalized receipt of an anchored item's transaction (ledger-finality.ts) and takes
   * the item out of the unfinished index, in one write. Idempotent and first-writer-wins: only for
   * the transaction the item names, confirmed, and only when no receipt is stored yet (a final
   * receipt never changes, so a second writer has nothing to add). True when this call stored it.
   */
  async recordFinalLedger(imageHash: string, txHash: string, final: FinalLedgerReceipt): Promise<boolean> {
    const r = await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.tables.evidence,
        Key: { image_hash: imageHash },
        UpdateExpression: 'SET ledger_final = :f REMOVE pending_shard',
        ConditionExpression: 'anchor_state = :anchored AND tx_hash = :tx AND tx_status = :confirmed AND attribute_not_exists(ledger_final)',
        ExpressionAttributeValues: { ':f': final, ':anchored': 'anchored', ':tx': txHash, ':confirmed': 'confirmed' },
      }),
    );
    return r.ok;
  }

  /** Takes an item out of the unfinished index (a stray entry: nothing left to do for it). */
  async clearUnfinished(imageHash: string): Promise<void> {
    await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.tables.evidence,
        Key: { image_hash: imageHash },
        UpdateExpression: 'REMOVE pending_shard',
        ConditionExpression: 'attribute_not_exists(anchor_state) OR (anchor_state = :anchored AND tx_status <> :pending)',
        ExpressionAttributeValues: { ':anchored': 'anchored', ':pending': 'pending' },
      }),
    );
  }

  /**
   * The ledger sender replaced the stuck transaction of a pending anchor (same nonce, higher fees):
   * the record (and its chain link) names the replacement; `tx_hashes` keeps every version, oldest
   * first, because the receipt of any of them may be the one that lands (setTxStatus then names it).
   * False when the record is not pending on `previousTxHash` any more.
   */
  async replaceTxHash(imageHash: string, previousTxHash: string, txHash: string, txHashes: string[]): Promise<boolean> {
    const r = await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.tables.evidence,
        Key: { image_hash: imageHash },
        UpdateExpression: 'SET tx_hash = :new, tx_hashes = :all',
        ConditionExpression: 'tx_status = :pending AND (tx_hash = :old OR contains(tx_hashes, :old))',
        ExpressionAttributeValues: { ':new': txHash, ':all': txHashes, ':old': previousTxHash, ':pending': 'pending' },
        ReturnValues: 'ALL_NEW',
      }),
    );
    if (!r.ok) return false;
    await this.linkFollows(r.attributes as unknown as EvidenceItem, txHash);
    return true;
  }

  /**
   * The chain link of an anchored item names the same transaction as the item (after a
   * replacement). Best-effort: the item is the record of proof; a link left behind only shows an
   * older version of the same transaction (and the caller may lack write access to the chains table).
   */
  private async linkFollows(item: EvidenceItem, txHash: string): Promise<void> {
    if (item.public_key_hex === undefined || item.chain_index === undefined) return;
    try {
      await tryWrite(
        this.db,
        new UpdateCommand({
          TableName: this.tables.chains,
          Key: { public_key_hex: item.public_key_hex, chain_index: item.chain_index },
          UpdateExpression: 'SET tx_hash = :tx',
          ConditionExpression: 'image_hash = :img', // the link of this very item
          ExpressionAttributeValues: { ':tx': txHash, ':img': item.image_hash },
        }),
      );
    } catch (error) {
      log.warn('chain link not updated to the replacement transaction', { image_hash: item.image_hash, tx_hash: txHash, ...describeError(error) });
    }
  }

  /** One conditional update of an evidence item: SET `fields` (undefined ones skipped), REMOVE `remove`, if `condition`. */
  private setIf(
    imageHash: string,
    fields: Record<string, unknown>,
    condition: string,
    conditionValues: Record<string, unknown>,
    options: { remove?: readonly string[]; returnNew?: boolean } = {},
  ): Promise<WriteOutcome> {
    const { sets, names, values } = setClause(fields);
    const remove = options.remove?.length ? ` REMOVE ${options.remove.join(', ')}` : '';
    return tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.tables.evidence,
        Key: { image_hash: imageHash },
        UpdateExpression: `SET ${sets.join(', ')}${remove}`,
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ...values, ...conditionValues },
        ...(options.returnNew ? { ReturnValues: 'ALL_NEW' as const } : {}),
      }),
    );
  }

  // ------------------------------------------------------------------ device-chain links

  /**
   * Claims position `link.chain_index` of a device chain for `link.image_hash`, for good: a claimed
   * link is freed only after its evidence item was released (releaseLink, in that order), so no
   * other photo can ever complete it and a chain never forks. Rules, read from the three links
   * around the index in one strongly consistent Query:
   * - the previous link exists (claimed or anchored: a device may pipeline its uploads) and its
   *   chain_hash is this link's previous_hash;
   * - a next link, if one was claimed already, has this link's chain_hash as its previous_hash;
   * - the slot is free, or held for this very hash (an identical retry that took the evidence
   *   over: the claim moves to it), or held by an orphan (a link whose evidence item was released
   *   and which a crash kept from being freed: freed now).
   */
  async claimLink(link: ChainLink): Promise<ChainClaimResult> {
    const i = link.chain_index;
    for (let attempt = 0; attempt < 4; attempt++) {
      const around = await this.linksAround(link.public_key_hex, i);
      const prev = around.get(i - 1);
      const self = around.get(i);
      const next = around.get(i + 1);
      if (i > 0) {
        if (!prev) return { ok: false, reason: 'previous_missing', nextIndex: await this.nextIndex(link.public_key_hex) };
        if (prev.chain_hash !== link.previous_hash) return { ok: false, reason: 'previous_mismatch', expectedPrevious: prev.chain_hash };
        // A previous link still claimed may lag behind its anchored evidence: set it right on the way.
        if (attempt === 0 && prev.state === 'claimed') await this.settleStrayLink(prev);
      }
      if (next && next.previous_hash !== link.chain_hash) return { ok: false, reason: 'index_taken', nextIndex: await this.nextIndex(link.public_key_hex) };
      if (self) {
        if (self.image_hash === link.image_hash && self.state === 'claimed') {
          const moved = await tryWrite(
            this.db,
            new UpdateCommand({
              TableName: this.tables.chains,
              Key: { public_key_hex: link.public_key_hex, chain_index: i },
              UpdateExpression: 'SET claim_id = :id',
              ConditionExpression: 'image_hash = :img AND #state = :claimed AND claim_id = :was',
              ExpressionAttributeNames: { '#state': 'state' },
              ExpressionAttributeValues: { ':id': link.claim_id, ':img': link.image_hash, ':claimed': 'claimed', ':was': self.claim_id },
            }),
          );
          if (moved.ok) return { ok: true };
          continue;
        }
        if (self.state === 'claimed' && (await this.settleStrayLink(self))) continue;
        return { ok: false, reason: 'index_taken', nextIndex: await this.nextIndex(link.public_key_hex) };
      }
      const put = await tryWrite(
        this.db,
        new PutCommand({ TableName: this.tables.chains, Item: link, ConditionExpression: 'attribute_not_exists(public_key_hex)' }),
      );
      if (put.ok) return { ok: true };
    }
    return { ok: false, reason: 'index_taken', nextIndex: await this.nextIndex(link.public_key_hex) };
  }

  /**
   * A claimed link held by another hash: what its evidence item says of it. Anchored → the link
   * lagged behind (a crash between the two writes): it is set anchored now, and stays taken.
   * Released (the item holds no anchor at this position) → an orphan: freed; true.
   */
  private async settleStrayLink(link: ChainLink): Promise<boolean> {
    const item = await this.get(link.image_hash);
    const holds = item?.anchor_state !== undefined && item.public_key_hex === link.public_key_hex && item.chain_index === link.chain_index;
    if (holds && isAnchored(item)) {
      await this.anchorLink(link.public_key_hex, link.chain_index, link.image_hash, item.anchored_at, item.tx_hash);
      return false;
    }
    if (holds) return false;
    return this.releaseLink(link.public_key_hex, link.chain_index, link.claim_id);
  }

  /**
   * Frees a claimed link after its evidence item was released; only that claim (a take-over
   * moved the claim to the retry, which keeps it), never an anchored link.
   */
  async releaseLink(publicKeyHex: string, index: number, claimId: string): Promise<boolean> {
    const r = await tryWrite(
      this.db,
      new DeleteCommand({
        TableName: this.tables.chains,
        Key: { public_key_hex: publicKeyHex, chain_index: index },
        ConditionExpression: 'claim_id = :id AND #state = :claimed',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':id': claimId, ':claimed': 'claimed' },
      }),
    );
    return r.ok;
  }

  /**
   * Marks a link anchored once its evidence is anchored: the link of that very hash (whatever
   * claim holds it: only that hash can ever complete it). Idempotent.
   */
  async anchorLink(publicKeyHex: string, index: number, imageHash: string, anchoredAt: string, txHash: string): Promise<void> {
    await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.tables.chains,
        Key: { public_key_hex: publicKeyHex, chain_index: index },
        UpdateExpression: 'SET #state = :anchored, anchored_at = :at, tx_hash = :tx',
        ConditionExpression: 'image_hash = :img',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':anchored': 'anchored', ':at': anchoredAt, ':tx': txHash, ':img': imageHash },
      }),
    );
  }

  private async linksAround(publicKeyHex: string, index: number): Promise<Map<number, ChainLink>> {
    const r = await this.db.send(
      new QueryCommand({
        TableName: this.tables.chains,
        KeyConditionExpression: 'public_key_hex = :pk AND chain_index BETWEEN :lo AND :hi',
        ExpressionAttributeValues: { ':pk': publicKeyHex, ':lo': Math.max(0, index - 1), ':hi': index + 1 },
        ConsistentRead: true,
      }),
    );
    return new Map(((r.Items ?? []) as ChainLink[]).map((l) => [l.chain_index, l]));
  }

  private async nextIndex(publicKeyHex: string): Promise<number> {
    const last = await this.lastLink(publicKeyHex);
    return last ? last.chain_index + 1 : 0;
  }
}
