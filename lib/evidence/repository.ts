import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describeError, log } from '../log.js';
import { isConditionalCheckFailed } from '../store/dynamo.js';
import type { StatsPort } from './stats.js';

/** Ledger state of an anchor's transaction. */
export type TxStatus = 'pending' | 'confirmed' | 'failed';

/** The proofs of an anchored hash, as stored (one item per image hash in the evidence table). */
export interface AnchorProofs {
  anchored_at: string;
  api_version: 'v1' | 'v2';
  account_id: string;
  device_id?: string | undefined;
  public_key_hex: string;
  signature_hex: string;
  chain_index: number;
  chain_hash: string;
  previous_hash: string | null;
  /** The RFC 8785 canonical statement, exactly the bytes `server_hash` is computed from. */
  statement: string;
  server_hash: string;
  pq_algorithm: 'ML-DSA-65';
  pq_key_id: string;
  pq_public_key: string; // base64
  pq_signature: string; // base64
  tsa_response: string; // base64 DER TimeStampResp
  tsa_gen_time: string;
  tsa_serial: string;
  tsa_policy: string;
  tsa_certificates: string[]; // PEM, leaf first
  ledger_chain_id: number;
  ledger_address: string;
  tx_hash: string;
  /** Every version of the transaction after the ledger sender replaced a stuck one, oldest first. */
  tx_hashes?: string[] | undefined;
  tx_nonce: number;
  tx_status: TxStatus;
  block_number?: number | undefined;
  confirmed_at?: string | undefined;
}

/** One evidence item: registration (POST /evidence/hash) and, once anchored, its proofs. */
export interface EvidenceItem extends Partial<AnchorProofs> {
  image_hash: string;
  registered_at?: string;
  registered_by?: string;
  anchor_state?: 'claimed' | 'anchored';
  claim_id?: string;
  claim_expires_at?: number;
}

/** A stored and fully anchored item. */
export type AnchoredEvidence = EvidenceItem & AnchorProofs & { anchor_state: 'anchored' };

export function isAnchored(item: EvidenceItem | undefined): item is AnchoredEvidence {
  return item?.anchor_state === 'anchored';
}

/** One link of a device chain (chains table, key = public_key_hex + chain_index). */
export interface ChainLink {
  public_key_hex: string;
  chain_index: number;
  image_hash: string;
  chain_hash: string;
  previous_hash: string | null;
  signature_hex: string;
  device_id?: string | undefined;
  state: 'claimed' | 'anchored';
  claim_id: string;
  /** Set while claimed; removed once anchored. */
  claim_expires_at?: number;
  anchored_at?: string;
  tx_hash?: string;
}

/** The one partition of the pending_tx index (pending anchors are few: minutes' worth at most). */
const PENDING_SHARD = 'pending';

/** Why a chain slot could not be claimed. */
export type ChainClaimResult =
  | { ok: true }
  | { ok: false; reason: 'index_taken' | 'previous_missing'; nextIndex: number }
  | { ok: false; reason: 'previous_mismatch'; expectedPrevious: string };

/**
 * DynamoDB access for evidence and device chains. Every write is a single-item conditional
 * write (no transactions: dynalite has none, and none are needed); each condition is explained
 * where it is written.
 */
export class EvidenceRepository {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tables: { evidence: string; chains: string },
    /** Counts first registrations (GET /api/v1/stats); best-effort. */
    private readonly stats?: StatsPort,
  ) {}

  /** The evidence item, read strongly consistent (verify must see a just-finished anchor). */
  async get(imageHash: string): Promise<EvidenceItem | undefined> {
    const r = await this.db.send(new GetCommand({ TableName: this.tables.evidence, Key: { image_hash: imageHash }, ConsistentRead: true }));
    return r.Item as EvidenceItem | undefined;
  }

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

  /**
   * Claims a hash for anchoring. Exactly one of any number of concurrent claims wins: the
   * condition admits an item that was never claimed, or whose claim has expired (a request that
   * died without undoing its claim must not block the hash forever). An anchored hash is never
   * claimable again.
   */
  async claimHash(imageHash: string, claimId: string, nowMs: number, ttlMs: number): Promise<'claimed' | 'anchored' | 'in_progress'> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.tables.evidence,
          Key: { image_hash: imageHash },
          UpdateExpression: 'SET anchor_state = :claimed, claim_id = :id, claim_expires_at = :exp',
          ConditionExpression: 'attribute_not_exists(anchor_state) OR (anchor_state = :claimed AND claim_expires_at < :now)',
          ExpressionAttributeValues: { ':claimed': 'claimed', ':id': claimId, ':exp': nowMs + ttlMs, ':now': nowMs },
        }),
      );
      return 'claimed';
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
      const current = await this.get(imageHash);
      return current?.anchor_state === 'anchored' ? 'anchored' : 'in_progress';
    }
  }

  /**
   * Undoes a claim after a failure, leaving a registration untouched. Only the claim's owner may
   * undo it (condition on claim_id), so a late undo never removes someone else's anchor.
   */
  async releaseHash(imageHash: string, claimId: string): Promise<void> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.tables.evidence,
          Key: { image_hash: imageHash },
          UpdateExpression: 'REMOVE anchor_state, claim_id, claim_expires_at',
          ConditionExpression: 'claim_id = :id AND anchor_state = :claimed',
          ExpressionAttributeValues: { ':id': claimId, ':claimed': 'claimed' },
        }),
      );
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }

  /**
   * Stores every proof and marks the hash anchored in one conditional update: only the claim's
   * owner, and only while its claim stands. After this the anchor is accepted and is never undone.
   */
  async completeAnchor(imageHash: string, claimId: string, proofs: AnchorProofs): Promise<boolean> {
    // While the transaction is pending, pending_shard puts the item in the sparse pending_tx index.
    const entries = Object.entries({ ...proofs, ...(proofs.tx_status === 'pending' ? { pending_shard: PENDING_SHARD } : {}) }).filter(
      ([, v]) => v !== undefined,
    );
    const names: Record<string, string> = { '#state': 'anchor_state' };
    const values: Record<string, unknown> = { ':anchored': 'anchored', ':claimed': 'claimed', ':id': claimId };
    const sets = entries.map(([k, v], i) => {
      names[`#f${i}`] = k;
      values[`:v${i}`] = v;
      return `#f${i} = :v${i}`;
    });
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.tables.evidence,
          Key: { image_hash: imageHash },
          UpdateExpression: `SET #state = :anchored, ${sets.join(', ')} REMOVE claim_expires_at`,
          ConditionExpression: 'claim_id = :id AND #state = :claimed',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  /**
   * Records the receipt of an anchor's transaction (the request itself or the finishing job).
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
    try {
      const r = await this.db.send(
        new UpdateCommand({
          TableName: this.tables.evidence,
          Key: { image_hash: imageHash },
          UpdateExpression: `SET tx_status = :s, block_number = :b, confirmed_at = :at, tx_hash = :mined${all ? ', tx_hashes = :all' : ''} REMOVE pending_shard`,
          // Only for the transaction this record names, or one it named before a replacement
          // (tx_hashes: the versions of a replaced transaction, see replaceTxHash).
          ConditionExpression: 'tx_hash = :tx OR contains(tx_hashes, :tx)',
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      );
      if (all) await this.linkFollows(r.Attributes as EvidenceItem, values[':mined'] as string);
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }

  /**
   * The ledger sender replaced the stuck transaction of a pending anchor (same nonce, higher fees):
   * the record (and its chain link) names the replacement; `tx_hashes` keeps every version, oldest
   * first, because the receipt of any of them may be the one that lands (setTxStatus then names it).
   * False when the record is not pending on `previousTxHash` any more.
   */
  async replaceTxHash(imageHash: string, previousTxHash: string, txHash: string, txHashes: string[]): Promise<boolean> {
    let item: EvidenceItem;
    try {
      const r = await this.db.send(
        new UpdateCommand({
          TableName: this.tables.evidence,
          Key: { image_hash: imageHash },
          UpdateExpression: 'SET tx_hash = :new, tx_hashes = :all',
          ConditionExpression: 'tx_status = :pending AND (tx_hash = :old OR contains(tx_hashes, :old))',
          ExpressionAttributeValues: { ':new': txHash, ':all': txHashes, ':old': previousTxHash, ':pending': 'pending' },
          ReturnValues: 'ALL_NEW',
        }),
      );
      item = r.Attributes as EvidenceItem;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
    await this.linkFollows(item, txHash);
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
      await this.db.send(
        new UpdateCommand({
          TableName: this.tables.chains,
          Key: { public_key_hex: item.public_key_hex, chain_index: item.chain_index },
          UpdateExpression: 'SET tx_hash = :tx',
          ConditionExpression: 'image_hash = :img', // the link of this very item
          ExpressionAttributeValues: { ':tx': txHash, ':img': item.image_hash },
        }),
      );
    } catch (error) {
      if (!isConditionalCheckFailed(error)) log.warn('chain link not updated to the replacement transaction', { image_hash: item.image_hash, tx_hash: txHash, ...describeError(error) });
    }
  }

  /**
   * Anchors whose transaction was still pending when their request answered, oldest first. The
   * index is eventually consistent, which is fine for a job that runs every minute.
   */
  async listPending(limit: number): Promise<{ image_hash: string; anchored_at: string }[]> {
    const r = await this.db.send(
      new QueryCommand({
        TableName: this.tables.evidence,
        IndexName: 'pending_tx',
        KeyConditionExpression: 'pending_shard = :p',
        ExpressionAttributeValues: { ':p': PENDING_SHARD },
        Limit: limit,
      }),
    );
    return (r.Items ?? []) as { image_hash: string; anchored_at: string }[];
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

  /**
   * Claims position `link.chain_index` of a device chain. The previous link must exist (claimed
   * or anchored: a device may pipeline its uploads) and its chain_hash must be the link's
   * previous_hash; the slot itself must be free, or hold an expired claim of a request that died.
   */
  async claimLink(link: ChainLink, nowMs: number): Promise<ChainClaimResult> {
    if (link.chain_index > 0) {
      const prev = await this.getLink(link.public_key_hex, link.chain_index - 1);
      if (!prev || (prev.state === 'claimed' && (prev.claim_expires_at ?? 0) < nowMs)) {
        return { ok: false, reason: 'previous_missing', nextIndex: await this.nextIndex(link.public_key_hex, nowMs) };
      }
      if (prev.chain_hash !== link.previous_hash) return { ok: false, reason: 'previous_mismatch', expectedPrevious: prev.chain_hash };
    }
    try {
      await this.db.send(
        new PutCommand({
          TableName: this.tables.chains,
          Item: link,
          ConditionExpression: 'attribute_not_exists(public_key_hex) OR (#state = :claimed AND claim_expires_at < :now)',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':claimed': 'claimed', ':now': nowMs },
        }),
      );
      return { ok: true };
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
      return { ok: false, reason: 'index_taken', nextIndex: await this.nextIndex(link.public_key_hex, nowMs) };
    }
  }

  /** Removes a claimed link after a failure; only its own claim, never an anchored link. */
  async releaseLink(publicKeyHex: string, index: number, claimId: string): Promise<void> {
    try {
      await this.db.send(
        new DeleteCommand({
          TableName: this.tables.chains,
          Key: { public_key_hex: publicKeyHex, chain_index: index },
          ConditionExpression: 'claim_id = :id AND #state = :claimed',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':id': claimId, ':claimed': 'claimed' },
        }),
      );
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }

  /** Marks a link anchored once its evidence is accepted. */
  async anchorLink(publicKeyHex: string, index: number, claimId: string, anchoredAt: string, txHash: string): Promise<void> {
    await this.db.send(
      new UpdateCommand({
        TableName: this.tables.chains,
        Key: { public_key_hex: publicKeyHex, chain_index: index },
        UpdateExpression: 'SET #state = :anchored, anchored_at = :at, tx_hash = :tx REMOVE claim_expires_at',
        ConditionExpression: 'claim_id = :id',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':anchored': 'anchored', ':at': anchoredAt, ':tx': txHash, ':id': claimId },
      }),
    );
  }

  private async nextIndex(publicKeyHex: string, nowMs: number): Promise<number> {
    const last = await this.lastLink(publicKeyHex);
    if (!last) return 0;
    const live = last.state === 'anchored' || (last.claim_expires_at ?? 0) >= nowMs;
    return live ? last.chain_index + 1 : last.chain_index;
  }
}
