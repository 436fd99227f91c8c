import { GetCommand, PutCommand, QueryCommand, ScanCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { BatchRef, EvidenceItemStore, HashClaimResult, SweepStep } from '../evidence/ports.js';
import {
  type AnchorClaim,
  type AnchoredEvidence,
  type EvidenceItem,
  type FinalLedgerReceipt,
  type MerkleInclusion,
  type SignedProofs,
  type StandaloneKind,
  type StandaloneAnswers,
  type StoredTx,
  type TxStatus,
} from '../evidence/records.js';
import { EVIDENCE_ITEM } from '../state-machines.js';
import { isConditionalCheckFailed } from './dynamo.js';
import { type Blob, decodeItem, encodeFields, encodeRemove, missingBlobs } from './evidence-codec.js';
import { tryWrite, type WriteOutcome } from './conditional.js';
import { type LeaseAttributes, leaseParts, type LeaseStep } from './lease.js';
import { SegmentScan } from './segment-scan.js';
import { moveState, type VersionedMove } from './versioned.js';

/** The one partition of the archive_due index: anchored hashes in no RFC 4998 archive group yet (lib/store/archive-table.ts). */
export const ARCHIVE_SHARD = 'ungrouped';

/** The one partition of the pending_tx index (pending anchors are few: minutes' worth at most). */
const PENDING_SHARD = 'pending';

/** What a scan for unfinished anchors reads: their keys, tested on the items themselves. */
const UNFINISHED_SCAN = (table: string) => ({
  TableName: table,
  ProjectionExpression: 'image_hash',
  FilterExpression: 'anchor_state IN (:a, :p) OR (anchor_state = :d AND tx_status = :pending) OR attribute_exists(pending_shard)',
  ExpressionAttributeValues: { ':a': 'accepting', ':p': 'publishing', ':d': 'anchored', ':pending': 'pending' },
  ConsistentRead: true,
});

/** The transitions of an evidence item (lib/state-machines.ts EVIDENCE_ITEM). */
type EvidenceTransition = keyof typeof EVIDENCE_ITEM.transitions;

/** How the anchored sub-states of EVIDENCE_ITEM are told apart in the item (beyond anchor_state = anchored). */
const ANCHORED_SUBSTATES: Record<string, { expression: string; values: Record<string, unknown> } | undefined> = {
  'anchored:pending': { expression: 'tx_status = :sub_status', values: { ':sub_status': 'pending' } },
  'anchored:confirmed': { expression: 'tx_status = :sub_status AND attribute_not_exists(ledger_final)', values: { ':sub_status': 'confirmed' } },
};

/** The `accepting` claim's lease (lib/store/lease.ts): the request's claim id until lease_expires_at. */
const ANCHOR_LEASE: LeaseAttributes = { owner: 'claim_id', expires: 'lease_expires_at' };

/** Fields of an anchor that a release removes besides its state (a registration stays, and so does the version). */
const ANCHOR_FIELDS = [
  'claim_id', 'fingerprint', 'lease_expires_at', 'quota_counter', 'quota_hold', 'pending_shard', 'anchored_at',
  'account_id', 'api_version', 'device_id', 'public_key_hex', 'signature_hex', 'chain_index', 'chain_hash', 'previous_hash',
  'statement', 'server_hash', 'pq_algorithm', 'pq_key_id', 'pq_public_key', 'pq_signature',
  'tsa_response', 'tsa_gen_time', 'tsa_serial', 'tsa_policy', 'tsa_certificates',
  'tsa_pq_response', 'tsa_pq_gen_time', 'tsa_pq_serial', 'tsa_pq_policy', 'tsa_pq_certificates',
  'tx_hash', 'tx_nonce', 'tx_raw', 'ledger_address', 'ledger_chain_id', 'batch_pk', 'merkle',
] as const;

/**
 * Blob values by key (lib/store/evidence-codec.ts): content-addressed and never changed, so one
 * process-wide map serves every table; and the write of each blob, per table (done or under way).
 */
const blobValues = new Map<string, unknown>();
const blobWrites = new Map<string, Promise<void>>();

/** What a move of an evidence item writes besides its state and version. */
interface MoveOptions {
  set?: Record<string, unknown>;
  remove?: readonly string[];
  also?: VersionedMove['also'];
  lease?: LeaseStep;
}

/**
 * The evidence table (infra/tables.json, key image_hash): the evidence items behind the domain's
 * EvidenceItemStore port (lib/evidence/ports.ts). Every write is a single-item conditional write
 * (no transactions: dynalite has none, and the state machine needs none); each condition is
 * explained where it is written.
 */
/** The key of an account's stand-alone answer of one kind on a hash (an item of its own). */
function standaloneKey(kind: StandaloneKind, accountId: string, imageHash: string): string {
  return `standalone#${kind}#${accountId}#${imageHash}`;
}

export class EvidenceTable implements EvidenceItemStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  // ------------------------------------------------------------------ reads

  /** The evidence item, read strongly consistent (verify must see a just-finished anchor). */
  async get(imageHash: string): Promise<EvidenceItem | undefined> {
    const r = await this.db.send(new GetCommand({ TableName: this.table, Key: { image_hash: imageHash }, ConsistentRead: true }));
    return r.Item ? this.decode(r.Item) : undefined;
  }

  /**
   * An item as read, laid out as the domain knows it (lib/store/evidence-codec.ts): a blob it names
   * is read once per process (strongly consistent: it was stored before the item named it).
   */
  private async decode(raw: Record<string, unknown>): Promise<EvidenceItem> {
    const missing = missingBlobs(raw, (key) => blobValues.has(key));
    await Promise.all(
      missing.map(async (key) => {
        const r = await this.db.send(new GetCommand({ TableName: this.table, Key: { image_hash: key }, ConsistentRead: true }));
        if (r.Item) blobValues.set(key, r.Item.value);
      }),
    );
    return decodeItem(raw, (key) => blobValues.get(key)) as unknown as EvidenceItem;
  }

  /**
   * Stores the blobs a write will name, before it names them: once per table and process (writes
   * of the same blob at once share one request; a failed one is tried again by the next write).
   */
  private async storeBlobs(blobs: Blob[]): Promise<void> {
    await Promise.all(
      blobs.map(({ key, value }) => {
        const known = `${this.table}|${key}`;
        let write = blobWrites.get(known);
        if (!write) {
          write = this.putBlob(key, value).catch((error: unknown) => {
            blobWrites.delete(known);
            throw error;
          });
          blobWrites.set(known, write);
        }
        return write;
      }),
    );
  }

  private async putBlob(key: string, value: unknown): Promise<void> {
    try {
      await this.db.send(new PutCommand({ TableName: this.table, Item: { image_hash: key, value }, ConditionExpression: 'attribute_not_exists(image_hash)' }));
    } catch (error) {
      // Already stored: the key is the hash of the value, so what is there is this value.
      if (!isConditionalCheckFailed(error)) throw error;
    }
    blobValues.set(key, value);
  }

  /**
   * Unfinished anchors (accepting, publishing, or anchored with the transaction pending), from the
   * sparse pending_tx index, oldest first. The index is a hint: it is eventually consistent, and
   * dynalite can lose an entry to a SIGKILL between an item and its index; scanUnfinishedSegment()
   * is the bounded local pass that catches those.
   */
  async listUnfinished(limit: number): Promise<string[]> {
    const r = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'pending_tx',
        KeyConditionExpression: 'pending_shard = :p',
        ExpressionAttributeValues: { ':p': PENDING_SHARD },
        Limit: limit,
      }),
    );
    return (r.Items ?? []).map((i) => String(i.image_hash));
  }

  /**
   * Every unfinished anchor, read from the items themselves: a full scan, whose cost grows with
   * the table. Only an operator runs it (the reconcile job with `{ "fullScan": true }`, the
   * runbook); the schedule reads the index, and locally a bounded segment as well (below).
   */
  async scanUnfinished(): Promise<string[]> {
    const out: string[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(new ScanCommand({ ...UNFINISHED_SCAN(this.table), ...(start ? { ExclusiveStartKey: start } : {}) }));
      out.push(...(page.Items ?? []).map((i) => String(i.image_hash)));
      start = page.LastEvaluatedKey;
    } while (start);
    return out;
  }

  private segments: SegmentScan | undefined;

  /**
   * The unfinished anchors among the next `step.items` items of the table (lib/store/segment-scan.ts),
   * and whether the segment reached its end: one step of the local safety sweep under the index
   * (dynalite can lose an entry to a SIGKILL).
   */
  async scanUnfinishedSegment(step: SweepStep): Promise<{ hashes: string[]; complete: boolean }> {
    this.segments ??= new SegmentScan(this.db, UNFINISHED_SCAN(this.table));
    const segment = await this.segments.next(step.items, step.restart);
    return { hashes: segment.items.map((i) => String(i.image_hash)), complete: segment.complete };
  }

  // ------------------------------------------------------------------ registration

  /**
   * Registers a hash; idempotent: `if_not_exists` keeps the first registration's time. The item
   * as it was before (ALL_OLD) tells both that time and whether this call was the first (exactly
   * one of N concurrent registrations sees no registered_at).
   */
  async register(imageHash: string, accountId: string, now: string): Promise<{ registeredAt: string; first: boolean }> {
    const r = await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { image_hash: imageHash },
        UpdateExpression: 'SET registered_at = if_not_exists(registered_at, :now), registered_by = if_not_exists(registered_by, :acct)',
        ExpressionAttributeValues: { ':now': now, ':acct': accountId },
        ReturnValues: 'ALL_OLD',
      }),
    );
    const before = (r.Attributes as EvidenceItem | undefined)?.registered_at;
    return { registeredAt: before ?? now, first: before === undefined };
  }

  // ------------------------------------------------------------------ stand-alone proofs

  /**
   * Records an account's stand-alone timestamp or signature answer in an item of its own,
   * `standalone#<kind>#<account>#<hash>` (one unconditional put: the latest answer wins). The
   * hash's evidence item is not touched, so answers of many accounts cannot grow it (records.ts).
   * Like the blobs, these items have no anchor state: the sweeps of this table pass them by.
   */
  async recordStandalone(imageHash: string, accountId: string, kind: StandaloneKind, answer: object): Promise<void> {
    await this.db.send(new PutCommand({ TableName: this.table, Item: { image_hash: standaloneKey(kind, accountId, imageHash), answer } }));
  }

  /** The account's stand-alone items of the hash (two strongly consistent reads side by side). */
  async getStandalone(imageHash: string, accountId: string): Promise<StandaloneAnswers> {
    const read = (kind: StandaloneKind) =>
      this.db.send(new GetCommand({ TableName: this.table, Key: { image_hash: standaloneKey(kind, accountId, imageHash) }, ConsistentRead: true })).then((r) => r.Item?.answer);
    const [timestamp, signature] = await Promise.all([read('ts'), read('sig')]);
    return { ...(timestamp !== undefined ? { timestamp } : {}), ...(signature !== undefined ? { signature } : {}) };
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
    const { image_hash, claim_id, lease_expires_at, ...fields } = claim;
    const r = await this.move({ image_hash, anchor_state: undefined, anchor_v: undefined }, 'claim', {
      set: { ...fields, pending_shard: PENDING_SHARD },
      lease: { take: { token: claim_id, expiresAt: lease_expires_at } },
      version: 'unread',
      returnUpdated: true,
    });
    if (r.ok) {
      const version = Number((r.attributes as { anchor_v?: unknown } | undefined)?.anchor_v);
      return { ok: true, item: { ...claim, anchor_state: 'accepting', anchor_v: version, pending_shard: PENDING_SHARD } };
    }
    return { ok: false, current: r.old ? await this.decode(r.old as Record<string, unknown>) : await this.get(claim.image_hash) };
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
      set: { anchored_at, quota_counter, quota_hold },
      lease: { take: { token: claim_id, expiresAt: lease_expires_at } },
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
    // The lease ends; the claim id stays (the chain link names it).
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
    // archive_shard: the hash waits on the archive_due index for its RFC 4998 archive group
    // (lib/store/archive-table.ts; ARCHIVE_MEMBER.enqueue), set by this same write.
    const set: Record<string, unknown> = { ...batch?.tx, merkle: batch?.merkle, tx_status: receipt?.status ?? 'pending', archive_shard: ARCHIVE_SHARD };
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
   * actually mined and every version; the record then names the mined one (and its chain link
   * follows: lib/evidence/repository.ts).
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
    const values: Record<string, unknown> = {};
    if (current.anchor_state !== undefined) values[':s'] = current.anchor_state;
    if (current.anchor_v !== undefined) values[':v'] = current.anchor_v;
    await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: { image_hash: current.image_hash },
        UpdateExpression: 'REMOVE pending_shard',
        ConditionExpression: `${current.anchor_state === undefined ? 'attribute_not_exists(anchor_state)' : 'anchor_state = :s'} AND ${current.anchor_v === undefined ? 'attribute_not_exists(anchor_v)' : 'anchor_v = :v'}`,
        ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
      }),
    );
  }

  /**
   * follow (anchored:pending → pending): the ledger sender replaced the stuck transaction of a
   * pending anchor (same nonce, higher fees): the record names the replacement; `tx_hashes` keeps
   * every version, oldest first, because the receipt of any of them may be the one that lands.
   */
  async follow(current: EvidenceItem, txHash: string, txHashes: string[]): Promise<EvidenceItem | null> {
    return this.moved(current, 'follow', { set: { tx_hash: txHash, tx_hashes: txHashes } });
  }

  /** One transition of EVIDENCE_ITEM from the item as read; the item as it now stands, or null when it had moved on. */
  private async moved(current: EvidenceItem, transition: EvidenceTransition, options: MoveOptions): Promise<EvidenceItem | null> {
    const r = await this.move(current, transition, options);
    if (!r.ok) return null;
    const lease = options.lease ? leaseParts(ANCHOR_LEASE, options.lease) : { set: {}, remove: [] };
    const set = { ...options.set, ...lease.set };
    const next: Record<string, unknown> = { ...current, ...Object.fromEntries(Object.entries(set).filter(([, v]) => v !== undefined)) };
    for (const k of [...(options.remove ?? []), ...lease.remove]) delete next[k];
    const to = EVIDENCE_ITEM.transitions[transition].to;
    if (to === 'none') delete next.anchor_state;
    else next.anchor_state = to.split(':')[0];
    next.anchor_v = (current.anchor_v ?? 0) + 1;
    return next as unknown as EvidenceItem;
  }

  private async move(
    current: Pick<EvidenceItem, 'image_hash' | 'anchor_state' | 'anchor_v'>,
    transition: EvidenceTransition,
    options: MoveOptions & { version?: 'unread'; returnUpdated?: boolean },
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
    const encoded = options.set ? encodeFields(options.set) : undefined;
    const remove = options.remove ? encodeRemove(options.remove) : undefined;
    if (encoded?.blobs.length) await this.storeBlobs(encoded.blobs);
    return moveState(this.db, {
      table: this.table,
      key: { image_hash: current.image_hash },
      stateAttribute: 'anchor_state',
      versionAttribute: 'anchor_v',
      from,
      version: options.version ?? current.anchor_v,
      to,
      ...(encoded ? { set: encoded.fields } : {}),
      ...(remove ? { remove } : {}),
      ...(also ? { also } : {}),
      ...(options.lease ? { lease: { attributes: ANCHOR_LEASE, step: options.lease } } : {}),
      ...(options.returnUpdated ? { returnValues: 'UPDATED_NEW' as const } : {}),
    });
  }
}
