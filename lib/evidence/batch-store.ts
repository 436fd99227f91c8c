import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { tryWrite } from '../store/conditional.js';
import type { StoredTx } from './records.js';

/**
 * DynamoDB access for ledger batches (the `batches` table, infra/tables.json). One partition per
 * window of one chain and wallet; in it one leaf item per anchor that joined the window
 * (sk `leaf#<image_hash>`) and the seal (sk `seal`). Every write is a single-item conditional
 * write; the leaves are read with a strongly consistent Query (DESIGN "Publishing in batches").
 */

/** A leaf as stored: the anchor's image hash and its leaf hash (SHA-256(0x00 || image_hash || server_hash)). */
export interface BatchLeaf {
  image_hash: string;
  leaf_hash: string;
}

/** The seal while its sealer works (`sealing`, under a lease) and once it stored the batch (`sealed`). */
export interface BatchSeal {
  state: 'sealing' | 'sealed';
  sealer_id: string;
  lease_expires_at: number;
  /** Sealed: the image hashes of the leaves in tree order, 32 bytes each, concatenated. */
  images?: Uint8Array;
  /** Sealed: the leaf hashes in tree order, 32 bytes each, concatenated. */
  leaves?: Uint8Array;
  root?: string;
  tree_size?: number;
  sealed_at?: string;
  tx_hash?: string;
  tx_nonce?: number;
  tx_raw?: string;
  ledger_address?: string;
  ledger_chain_id?: number;
}

/** What the sealer stores with the move to `sealed`, before the transaction can reach a node. */
export interface SealContents {
  images: Uint8Array;
  leaves: Uint8Array;
  root: string;
  tree_size: number;
  sealed_at: string;
}

const SEAL = 'seal';
const LEAF = 'leaf#';
/** Leaves matter only until their window is sealed; they expire after 30 days (the seal is kept: it is the batch's record). */
const LEAF_TTL_SECONDS = 30 * 24 * 3600;

export class BatchStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /** Writes (or writes again: idempotent) an anchor's leaf into a batch. */
  async putLeaf(pk: string, leaf: BatchLeaf, nowMs: number): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: { pk, sk: `${LEAF}${leaf.image_hash}`, ...leaf, expires_at: Math.floor(nowMs / 1000) + LEAF_TTL_SECONDS },
      }),
    );
  }

  /** Every leaf of a batch, in image-hash order (the sort key), read strongly consistent. */
  async listLeaves(pk: string): Promise<BatchLeaf[]> {
    const out: BatchLeaf[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :leaf)',
          ExpressionAttributeValues: { ':pk': pk, ':leaf': LEAF },
          ProjectionExpression: 'image_hash, leaf_hash',
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) out.push({ image_hash: String(item.image_hash), leaf_hash: String(item.leaf_hash) });
      start = page.LastEvaluatedKey;
    } while (start);
    return out;
  }

  /** The seal of a batch, read strongly consistent (undefined: nobody claimed it yet). */
  async getSeal(pk: string): Promise<BatchSeal | undefined> {
    const r = await this.db.send(new GetCommand({ TableName: this.table, Key: { pk, sk: SEAL }, ConsistentRead: true }));
    return r.Item as BatchSeal | undefined;
  }

  /** Claims the sealing of a batch: exactly one of any number of concurrent claims wins. */
  async claimSeal(pk: string, sealerId: string, leaseExpiresAt: number): Promise<boolean> {
    const r = await tryWrite(
      this.db,
      new PutCommand({
        TableName: this.table,
        Item: { pk, sk: SEAL, state: 'sealing', sealer_id: sealerId, lease_expires_at: leaseExpiresAt },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return r.ok;
  }

  /** Takes over the claim of a sealer whose lease lapsed (it died, or hangs): only that claim, only while still sealing. */
  async takeOverSeal(pk: string, previousSealer: string, sealerId: string, leaseExpiresAt: number, nowMs: number): Promise<boolean> {
    const r = await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: { pk, sk: SEAL },
        UpdateExpression: 'SET sealer_id = :me, lease_expires_at = :lease',
        ConditionExpression: '#state = :sealing AND sealer_id = :prev AND lease_expires_at < :now',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':me': sealerId, ':lease': leaseExpiresAt, ':sealing': 'sealing', ':prev': previousSealer, ':now': nowMs },
      }),
    );
    return r.ok;
  }

  /** Gives a claim back when nothing was stored under it (the ledger was down), so another waiter seals at once. */
  async abandonSeal(pk: string, sealerId: string): Promise<void> {
    await tryWrite(
      this.db,
      new DeleteCommand({
        TableName: this.table,
        Key: { pk, sk: SEAL },
        ConditionExpression: '#state = :sealing AND sealer_id = :me',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':sealing': 'sealing', ':me': sealerId },
      }),
    );
  }

  /**
   * sealing → sealed: the leaf list, the root and the signed transaction, stored BEFORE the
   * transaction can reach a node (called from the ledger's persist hook). Only by the sealer that
   * holds the claim: a sealer that lost it to a take-over gets false, and its transaction is given
   * back unsent. From here the batch is fixed: a leaf written later is not in it.
   */
  async markSealed(pk: string, sealerId: string, contents: SealContents, tx: StoredTx): Promise<boolean> {
    const r = await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: { pk, sk: SEAL },
        UpdateExpression:
          'SET #state = :sealed, images = :images, leaves = :leaves, #root = :root, tree_size = :size, sealed_at = :at, ' +
          'tx_hash = :tx, tx_nonce = :nonce, tx_raw = :raw, ledger_address = :from, ledger_chain_id = :chain',
        ConditionExpression: '#state = :sealing AND sealer_id = :me',
        ExpressionAttributeNames: { '#state': 'state', '#root': 'root' },
        ExpressionAttributeValues: {
          ':sealed': 'sealed', ':sealing': 'sealing', ':me': sealerId,
          ':images': contents.images, ':leaves': contents.leaves, ':root': contents.root, ':size': contents.tree_size, ':at': contents.sealed_at,
          ':tx': tx.tx_hash, ':nonce': tx.tx_nonce, ':raw': tx.tx_raw, ':from': tx.ledger_address, ':chain': tx.ledger_chain_id,
        },
      }),
    );
    return r.ok;
  }

  /**
   * The batch's transaction can never be mined (its nonce went to another transaction): a new one
   * with the same root replaces it, conditional on the seal still naming the dead one (of two
   * resumers that found it dead, one replaces it; the other's is given back unsent).
   */
  async replaceSealTx(pk: string, deadTxHash: string, tx: StoredTx): Promise<boolean> {
    const r = await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: { pk, sk: SEAL },
        UpdateExpression: 'SET tx_hash = :tx, tx_nonce = :nonce, tx_raw = :raw, ledger_address = :from, ledger_chain_id = :chain',
        ConditionExpression: '#state = :sealed AND tx_hash = :dead',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: {
          ':sealed': 'sealed', ':dead': deadTxHash,
          ':tx': tx.tx_hash, ':nonce': tx.tx_nonce, ':raw': tx.tx_raw, ':from': tx.ledger_address, ':chain': tx.ledger_chain_id,
        },
      }),
    );
    return r.ok;
  }
}
