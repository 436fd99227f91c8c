import { DeleteCommand, GetCommand, PutCommand, QueryCommand, ScanCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describeError, log } from '../log.js';
import { EVIDENCE_ITEM } from '../state-machines.js';
import { tryWrite, type WriteOutcome } from '../store/conditional.js';
import { moveState, type VersionedMove } from '../store/versioned.js';
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

/** The transitions of an evidence item (lib/state-machines.ts EVIDENCE_ITEM). */
type EvidenceTransition = keyof typeof EVIDENCE_ITEM.transitions;

/** How the anchored sub-states of EVIDENCE_ITEM are told apart in the item (beyond anchor_state = anchored). */
const ANCHORED_SUBSTATES: Record<string, { expression: string; values: Record<string, unknown> } | undefined> = {
  'anchored:pending': { expression: 'tx_status = :sub_status', values: { ':sub_status': 'pending' } },
  'anchored:confirmed': { expression: 'tx_status = :sub_status AND attribute_not_exists(ledger_final)', values: { ':sub_status': 'confirmed' } },
};

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

/** A claim: the item as claimed (with its version), or the item as it stands (undefined when it vanished meanwhile). */
export type HashClaimResult = { ok: true; item: EvidenceItem } | { ok: false; current: EvidenceItem | undefined };

/** Fields of an anchor that a release removes besides its state (a registration stays, and so does the version). */
const ANCHOR_FIELDS = [
  'claim_id', 'fingerprint', 'lease_expires_at', 'quota_counter', 'quota_hold', 'pending_shard', 'anchored_at',
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

  /*
   * Each method below is one transition of EVIDENCE_ITEM (lib/state-machines.ts), made from the
   * item as the caller read it: the write is conditional on that state AND version (anchor_v), and
   * moves the version on (lib/store/versioned.ts). It returns the item as it now stands (computed,
   * not read back), or null when the item had moved on meanwhile: the caller then reads it again
   * and decides from what it finds. Nothing here ever overwrites a newer state.
   */

  /**
   * claim (none → accepting): claims the hash for one request. Exactly one of any number of
   * concurrent claims wins: the condition admits only an item where no anchor is under way or done
   * (a registration may be there). No read first; the item as it was comes back when the claim fails.
   */
  async claimHash(claim: AnchorClaim): Promise<HashClaimResult> {
    const r = await this.move(
      { image_hash: claim.image_hash, anchor_state: undefined, anchor_v: undefined },
      'claim',
      { set: { ...claim, image_hash: undefined, pending_shard: PENDING_SHARD }, version: 'unread', returnUpdated: true },
    );
    if (r.ok) {
      const version = Number((r.attributes as { anchor_v?: unknown } | undefined)?.anchor_v);
      return { ok: true, item: { ...claim, anchor_state: 'accepting', anchor_v: version, pending_shard: PENDING_SHARD } };
    }
    return { ok: false, current: (r.old as unknown as EvidenceItem | undefined) ?? (await this.get(claim.image_hash)) };
  }

  /**
   * resume (accepting → accepting): the identical request (same fingerprint) continues an
   * `accepting` claim at once, whoever held it: a new claim id, statement time, lease and quota
   * hold. The previous holder, if it still runs, loses its next conditional write and follows.
   */
  async resumeClaim(
    current: EvidenceItem,
    next: Pick<AnchorClaim, 'claim_id' | 'anchored_at' | 'lease_expires_at' | 'quota_counter' | 'quota_hold' | 'fingerprint'>,
  ): Promise<EvidenceItem | null> {
    const { claim_id, anchored_at, lease_expires_at, quota_counter, quota_hold } = next;
    return this.moved(current, 'resume', {
      set: { claim_id, anchored_at, lease_expires_at, quota_counter, quota_hold },
      also: { expression: 'fingerprint = :fp', values: { ':fp': next.fingerprint } },
    });
  }

  /**
   * release (accepting → none): the anchor's fields go, a registration stays. Only an `accepting`
   * item: nothing of it was published. A release and a move to publishing of the same version
   * are exclusive, so exactly one of them happens. The version stays, and counts on at the next claim.
   */
  async release(current: EvidenceItem): Promise<boolean> {
    return (await this.moved(current, 'release', { remove: ANCHOR_FIELDS })) !== null;
  }

  /**
   * publish (accepting → publishing): stores every proof and either the signed transaction
   * (direct mode: BEFORE it is persisted by the ledger sender or broadcast; the sender calls this
   * from its beforePersist hook) or the batch its leaf joins (batch mode: the leaf is written
   * after this, lib/evidence/batch-publish.ts). Null when the claim moved on (released, or
   * resumed by the identical request): the sender then gives the nonce back and nothing goes out.
   */
  async markPublishing(current: EvidenceItem, proofs: SignedProofs, tx: StoredTx | BatchRef): Promise<EvidenceItem | null> {
    return this.moved(current, 'publish', { set: { ...proofs, ...tx }, remove: ['lease_expires_at'] });
  }

  /**
   * rebatch (publishing → publishing): a leaf that its batch was sealed without (written after the
   * sealer's Query, or past the batch's size limit) moves to a later window. Of two resumers that
   * both saw it left out, one moves it and the other reads where it went.
   */
  async moveToBatch(current: EvidenceItem, toBatch: string): Promise<EvidenceItem | null> {
    return this.moved(current, 'rebatch', { set: { batch_pk: toBatch } });
  }

  /**
   * replace (publishing → publishing): the named transaction can never be mined (its nonce is
   * held by another transaction), so a new one replaces it. Of two resumers that both found it
   * dead, exactly one stores its transaction (conditional on the version both read, not on the
   * hash, which a re-signature at the same nonce repeats); the other's is never sent.
   */
  async replaceTx(current: EvidenceItem, tx: StoredTx): Promise<EvidenceItem | null> {
    return this.moved(current, 'replace', { set: { ...tx } });
  }

  /**
   * anchor (publishing → anchored): the transaction the item names (direct) or its batch's sealed
   * transaction (batch) was handed to the ledger. With a receipt the status is recorded in the
   * same write (`minedTxHash`: the version mined, after a fee replacement). The anchored item for
   * the call that made the move (statistics count it once); null when another invocation did.
   */
  async markAnchored(
    current: EvidenceItem,
    receipt: { status: TxStatus; blockNumber: number; at: string; minedTxHash: string; txHashes?: string[] | undefined } | null,
    batch?: { tx: Omit<StoredTx, 'tx_raw'>; merkle: MerkleInclusion },
  ): Promise<AnchoredEvidence | null> {
    // Batch mode: the item named its batch (kept: which batch holds it) and no transaction until
    // now; it gets the batch's transaction and its inclusion proof in this same write.
    const set: Record<string, unknown> = { ...batch?.tx, merkle: batch?.merkle, tx_status: receipt?.status ?? 'pending' };
    if (receipt) {
      set.block_number = receipt.blockNumber;
      set.confirmed_at = receipt.at;
      set.tx_hash = receipt.minedTxHash;
      if (receipt.txHashes && receipt.txHashes.length > 1) set.tx_hashes = receipt.txHashes;
    }
    // A confirmed anchor stays on the unfinished index until its final receipt is stored
    // (recordFinalLedger, by the reconciler); a failed one has nothing left to do.
    const remove = [...(batch ? [] : ['tx_raw']), ...(receipt && receipt.status !== 'confirmed' ? ['pending_shard'] : [])];
    return (await this.moved(current, 'anchor', { set, remove })) as AnchoredEvidence | null;
  }

  /**
   * confirm / fail (anchored:pending → confirmed | failed): the receipt of a version of the named
   * transaction. `landed`: when the ledger sender replaced a stuck transaction, the version
   * actually mined and every version; the record then names the mined one.
   */
  async setTxStatus(
    current: EvidenceItem,
    status: 'confirmed' | 'failed',
    blockNumber: number | undefined,
    at: string,
    landed: { txHash?: string; txHashes?: string[] } = {},
  ): Promise<EvidenceItem | null> {
    const all = landed.txHashes && landed.txHashes.length > 1 ? landed.txHashes : undefined;
    const set: Record<string, unknown> = { tx_status: status, block_number: blockNumber ?? null, confirmed_at: at, tx_hash: landed.txHash ?? current.tx_hash, tx_hashes: all };
    const moved = await this.moved(current, status === 'confirmed' ? 'confirm' : 'fail', {
      set,
      // A confirmed transaction stays on the unfinished index until its finalized receipt is stored.
      remove: status === 'confirmed' ? [] : ['pending_shard'],
    });
    if (moved && all) await this.linkFollows(moved, set.tx_hash as string);
    return moved;
  }

  /**
   * finalize (anchored:confirmed → final): stores the finalized receipt of the transaction the
   * item names and takes the item out of the unfinished index, in one write. True when this call
   * stored it (a final receipt never changes: a second writer has nothing to add).
   */
  async recordFinalLedger(current: EvidenceItem, final: FinalLedgerReceipt): Promise<boolean> {
    return (await this.moved(current, 'finalize', { set: { ledger_final: final }, remove: ['pending_shard'] })) !== null;
  }

  /** Takes an item out of the unfinished index (a stray entry: nothing left to do for it); conditional on the version read. */
  async clearUnfinished(current: EvidenceItem): Promise<void> {
    if (current.anchor_state === undefined && current.anchor_v === undefined) {
      await tryWrite(
        this.db,
        new UpdateCommand({
          TableName: this.tables.evidence,
          Key: { image_hash: current.image_hash },
          UpdateExpression: 'REMOVE pending_shard',
          ConditionExpression: 'attribute_not_exists(anchor_state) AND attribute_not_exists(anchor_v)',
        }),
      );
      return;
    }
    await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.tables.evidence,
        Key: { image_hash: current.image_hash },
        UpdateExpression: 'REMOVE pending_shard',
        ConditionExpression: current.anchor_state === undefined ? 'attribute_not_exists(anchor_state) AND anchor_v = :v' : 'anchor_state = :s AND anchor_v = :v',
        ExpressionAttributeValues: { ':v': current.anchor_v, ...(current.anchor_state === undefined ? {} : { ':s': current.anchor_state }) },
      }),
    );
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
      const current = await this.get(imageHash);
      if (!isAnchored(current) || current.tx_status !== 'pending') return false;
      if (current.tx_hash !== previousTxHash && !(current.tx_hashes ?? []).includes(previousTxHash)) return false;
      const moved = await this.moved(current, 'follow', { set: { tx_hash: txHash, tx_hashes: txHashes } });
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

  /** One transition of EVIDENCE_ITEM from the item as read; the item as it now stands, or null when it had moved on. */
  private async moved(
    current: EvidenceItem,
    transition: EvidenceTransition,
    options: { set?: Record<string, unknown>; remove?: readonly string[]; also?: VersionedMove['also'] },
  ): Promise<EvidenceItem | null> {
    const r = await this.move(current, transition, options);
    if (!r.ok) return null;
    const next: Record<string, unknown> = { ...current, ...Object.fromEntries(Object.entries(options.set ?? {}).filter(([, v]) => v !== undefined)) };
    for (const k of options.remove ?? []) delete next[k];
    const to = EVIDENCE_ITEM.transitions[transition].to;
    if (to === 'none') delete next.anchor_state;
    else next.anchor_state = to.split(':')[0];
    next.anchor_v = (current.anchor_v ?? 0) + 1;
    return next as unknown as EvidenceItem;
  }

  private move(
    current: Pick<EvidenceItem, 'image_hash' | 'anchor_state' | 'anchor_v'>,
    transition: EvidenceTransition,
    options: { set?: Record<string, unknown>; remove?: readonly string[]; also?: VersionedMove['also']; version?: 'unread'; returnUpdated?: boolean },
  ): Promise<WriteOutcome> {
    const t = EVIDENCE_ITEM.transitions[transition];
    const from = t.from === 'none' ? null : t.from.split(':')[0] as string;
    if ((current.anchor_state ?? null) !== from && options.version !== 'unread') {
      throw new Error(`evidence ${current.image_hash}: ${transition} starts from ${t.from}, the item read is ${current.anchor_state ?? 'none'}`);
    }
    const to = t.to === 'none' ? null : (t.to.split(':')[0] as string);
    // The anchored sub-states are told apart by tx_status (and ledger_final): the condition names them too.
    const sub = ANCHORED_SUBSTATES[t.from];
    const also = sub && options.also
      ? { expression: `${sub.expression} AND (${options.also.expression})`, values: { ...sub.values, ...options.also.values }, names: { ...options.also.names } }
      : (sub ?? options.also);
    return moveState(this.db, {
      table: this.tables.evidence,
      key: { image_hash: current.image_hash },
      stateAttribute: 'anchor_state',
      versionAttribute: 'anchor_v',
      from,
      version: options.version ?? current.anchor_v,
      to,
      ...(options.set ? { set: options.set } : {}),
      ...(options.remove ? { remove: options.remove } : {}),
      ...(also ? { also } : {}),
      ...(options.returnUpdated ? { returnValues: 'UPDATED_NEW' as const } : {}),
    });
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
        // chain_index is at most 2^53 − 1 (CONTRACT "Faults of the parts", Numbers): the bound stays a safe integer.
        ExpressionAttributeValues: { ':pk': publicKeyHex, ':lo': Math.max(0, index - 1), ':hi': Math.min(Number.MAX_SAFE_INTEGER, index + 1) },
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
