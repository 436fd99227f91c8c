import { BatchGetCommand, GetCommand, PutCommand, QueryCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { BatchRef, EvidenceItemStore, HashClaimResult, SweepStep } from '../evidence/ports.js';
import {
  type AnchorClaim,
  type AnchoredEvidence,
  type EvidenceItem,
  type FinalLedgerReceipt,
  type MerkleInclusion,
  type SignedProofs,
  type StoredTx,
  type AnchorReceipt,
} from '../evidence/records.js';
import { ProcessCache } from '../memo.js';
import { EVIDENCE_ITEM } from '../state-machines.js';
import { isConditionalCheckFailed } from './dynamo.js';
import { type Blob, decodeItem, encodeFields, encodeRemove, missingBlobs } from './evidence-codec.js';
import { tryWrite, type WriteOutcome } from './conditional.js';
import { AccountEvidenceItems } from './evidence-account-items.js';
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
  FilterExpression: 'anchor_state = :p OR (anchor_state = :d AND tx_status = :pending) OR attribute_exists(pending_shard)',
  ExpressionAttributeValues: { ':p': 'publishing', ':d': 'anchored', ':pending': 'pending' },
  ConsistentRead: true,
});

/** The transitions of an evidence item (lib/state-machines.ts EVIDENCE_ITEM). */
type EvidenceTransition = keyof typeof EVIDENCE_ITEM.transitions;

/** How the anchored sub-states of EVIDENCE_ITEM are told apart in the item (beyond anchor_state = anchored). */
const ANCHORED_SUBSTATES: Record<string, { expression: string; values: Record<string, unknown> } | undefined> = {
  'anchored:pending': { expression: 'tx_status = :sub_status', values: { ':sub_status': 'pending' } },
  'anchored:confirmed': { expression: 'tx_status = :sub_status AND attribute_not_exists(ledger_final)', values: { ':sub_status': 'confirmed' } },
};

/**
 * Blob values by key (lib/store/evidence-codec.ts): content-addressed and never changed, so one
 * process-wide cache serves every table; and the write of each blob, per table (done or under
 * way; a failed one is forgotten, so the next write tries again). ProcessCaches (lib/memo.ts, the
 * one idiom): bounded, and cleared with the rest by resetDeps(). A blob that fell out is read or
 * written again (the write is conditional on its absence: at most a refused put).
 */
const blobValues = new ProcessCache<string, unknown>('evidence blobs by key', 1000);
const blobWrites = new ProcessCache<string, Promise<void>>('evidence blob writes by table and key', 1000);

/** What a move of an evidence item writes besides its state and version. */
interface MoveOptions {
  set?: Record<string, unknown>;
  remove?: readonly string[];
  also?: VersionedMove['also'];
}

/**
 * The evidence table (infra/tables.json, key image_hash): the evidence items behind the domain's
 * EvidenceItemStore port (lib/evidence/ports.ts). Every write is a single-item conditional write
 * (no transactions: dynalite has none, and the state machine needs none); each condition is
 * explained where it is written. The per-account items it also holds (registrations, stand-alone
 * answers) are written by evidence-account-items.ts, which this class extends.
 */
export class EvidenceTable extends AccountEvidenceItems implements EvidenceItemStore {
  // ------------------------------------------------------------------ reads

  /** The evidence item, read strongly consistent (verify must see a just-finished anchor). */
  async get(imageHash: string): Promise<EvidenceItem | undefined> {
    const r = await this.db.send(new GetCommand({ TableName: this.table, Key: { image_hash: imageHash }, ConsistentRead: true }));
    return r.Item ? this.decode(r.Item) : undefined;
  }

  /**
   * Many items at once, read strongly consistent, 100 to a BatchGetItem (the reconciler's queue):
   * one request for a page of unfinished anchors instead of one per anchor. Those that do not exist are left out.
   */
  async getMany(imageHashes: readonly string[]): Promise<EvidenceItem[]> {
    const out: EvidenceItem[] = [];
    for (let i = 0; i < imageHashes.length; i += 100) {
      let keys: Record<string, unknown>[] = imageHashes.slice(i, i + 100).map((h) => ({ image_hash: h }));
      for (let attempt = 0; keys.length > 0; attempt++) {
        if (attempt >= 8) throw new Error('evidence: a batch read kept coming back unprocessed (throttled)');
        const r = await this.db.send(new BatchGetCommand({ RequestItems: { [this.table]: { Keys: keys, ConsistentRead: true } } }));
        for (const raw of r.Responses?.[this.table] ?? []) out.push(await this.decode(raw));
        keys = (r.UnprocessedKeys?.[this.table]?.Keys ?? []) as Record<string, unknown>[];
        if (keys.length) await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt));
      }
    }
    return out;
  }

  /**
   * An item as read, laid out as the domain knows it (lib/store/evidence-codec.ts): a blob it names
   * is read once per process (strongly consistent: it was stored before the item named it).
   */
  private async decode(raw: Record<string, unknown>): Promise<EvidenceItem> {
    const missing = missingBlobs(raw, (key) => blobValues.get(key) !== undefined);
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
        return blobWrites.getOrSet(`${this.table}|${key}`, () => this.putBlob(key, value));
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
   * Unfinished anchors (publishing, or anchored with the transaction pending or not yet final), from the
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

  // ------------------------------------------------------------------ the anchor's states

  /*
   * Each method below is one transition of EVIDENCE_ITEM (lib/state-machines.ts), made from the
   * item as the caller read it: the write is conditional on that state AND version (anchor_v), and
   * moves the version on (lib/store/versioned.ts). It returns the item as it now stands (computed,
   * not read back), or null when the item had moved on meanwhile: the caller then reads it again
   * and decides from what it finds. Nothing here ever overwrites a newer state.
   */

  /**
   * publish (none → publishing): the anchor's first write claims the hash and stores the request's
   * fields, every proof and the transaction or batch, in one conditional write. Exactly one of any
   * number of concurrent publishes lands: the condition admits only an item with no anchor (a
   * hash's item may hold barred claims, from earlier anchors that lapsed) whose dead_claims do not
   * name this claim. No read first; the item as it was comes back when the publish fails.
   */
  async publish(claim: AnchorClaim, proofs: SignedProofs, tx: StoredTx | BatchRef): Promise<HashClaimResult> {
    const { image_hash, ...fields } = claim;
    const r = await this.move({ image_hash, anchor_state: undefined, anchor_v: undefined }, 'publish', {
      set: { ...fields, ...proofs, ...tx, pending_shard: PENDING_SHARD },
      also: { expression: 'attribute_not_exists(dead_claims) OR NOT contains(dead_claims, :claim)', values: { ':claim': claim.claim_id } },
      version: 'unread',
      returnUpdated: true,
    });
    if (r.ok) {
      const version = Number((r.attributes as { anchor_v?: unknown } | undefined)?.anchor_v);
      return { ok: true, item: { ...claim, ...proofs, ...tx, anchor_state: 'publishing', anchor_v: version, pending_shard: PENDING_SHARD } };
    }
    return { ok: false, current: r.old ? await this.decode(r.old as Record<string, unknown>) : await this.get(claim.image_hash) };
  }

  /**
   * bar (none → none): a claim that lapsed before it published is barred for good (its id joins
   * dead_claims), so that its publish, if its request still runs, can never land. Conditional on
   * no anchor being on the hash: an anchor that is there was published by some claim, and no other
   * claim can publish over it.
   */
  async barClaim(imageHash: string, claimId: string): Promise<'barred' | 'anchored'> {
    const r = await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: { image_hash: imageHash },
        UpdateExpression: 'ADD dead_claims :claim',
        ConditionExpression: 'attribute_not_exists(anchor_state)',
        ExpressionAttributeValues: { ':claim': new Set([claimId]) },
      }),
    );
    return r.ok ? 'barred' : 'anchored';
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
    receipt: AnchorReceipt | null,
    batch?: { tx: Omit<StoredTx, 'tx_raw'>; merkle: MerkleInclusion },
  ): Promise<AnchoredEvidence | null> {
    // Batch mode: the item named its batch (kept: which batch holds it) and no transaction until
    // now; it gets the batch's transaction and its inclusion proof in this same write.
    // archive_shard: the hash waits on the archive_due index for its RFC 4998 archive group
    // (lib/store/archive-table.ts; ARCHIVE_MEMBER.enqueue), set by this same write.
    // activity_at: the anchor joins the account's recent evidence (the by_account index) now it is anchored.
    const set: Record<string, unknown> = { ...batch?.tx, merkle: batch?.merkle, tx_status: receipt?.status ?? 'pending', archive_shard: ARCHIVE_SHARD, activity_at: current.anchored_at };
    if (receipt) {
      set.block_number = receipt.blockNumber;
      set.confirmed_at = receipt.at;
      set.tx_hash = receipt.minedTxHash;
      if (receipt.txHashes && receipt.txHashes.length > 1) set.tx_hashes = receipt.txHashes;
    }
    // Final at once (the `latest` rule, read and checked by the caller): finalize rides on this write.
    const final = receipt?.status === 'confirmed' ? receipt.final : undefined;
    if (final) set.ledger_final = final;
    // A confirmed anchor stays on the unfinished index until its final receipt is stored
    // (here, or by the reconciler's recordFinalLedger); a failed one has nothing left to do.
    const remove = [...(batch ? [] : ['tx_raw']), ...(receipt && (receipt.status !== 'confirmed' || final) ? ['pending_shard'] : [])];
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
    const set = { ...options.set };
    const next: Record<string, unknown> = { ...current, ...Object.fromEntries(Object.entries(set).filter(([, v]) => v !== undefined)) };
    for (const k of options.remove ?? []) delete next[k];
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
      ...(options.returnUpdated ? { returnValues: 'UPDATED_NEW' as const } : {}),
    });
  }
}
