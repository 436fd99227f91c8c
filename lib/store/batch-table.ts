import { GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { putAll } from './batch-write.js';
import type { BatchLeaf, BatchSeal, BatchStore, SealContents } from '../evidence/batch-store.js';
import type { StoredTx } from '../evidence/records.js';
import { BATCH_SEAL } from '../state-machines.js';
import type { WriteOutcome } from './conditional.js';
import type { LeaseAttributes, LeaseStep } from './lease.js';
import { moveState, type VersionedMove } from './versioned.js';

const SEAL = 'seal';
const LEAF = 'leaf#';
/** Leaves matter only until their window is sealed; they expire after 30 days (the seal is kept: it is the batch's record). */
const LEAF_TTL_SECONDS = 30 * 24 * 3600;

/** The seal's lease (lib/store/lease.ts): the sealer's id until lease_expires_at. */
const SEAL_LEASE: LeaseAttributes = { owner: 'sealer_id', expires: 'lease_expires_at' };

/**
 * The `batches` table (infra/tables.json) behind the domain's BatchStore port
 * (lib/evidence/batch-store.ts). One partition per window of one chain and wallet; in it one leaf
 * item per anchor that joined the window (sk `leaf#<image_hash>`) and the seal (sk `seal`). Every
 * write is a single-item conditional write; the leaves are read with a strongly consistent Query.
 */
export class BatchTable implements BatchStore {
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

  /** Writes (or writes again) many leaves of one batch, 25 to a request (the batch anchor's entries). */
  async putLeaves(pk: string, leaves: readonly BatchLeaf[], nowMs: number): Promise<void> {
    const expires = Math.floor(nowMs / 1000) + LEAF_TTL_SECONDS;
    await putAll(this.db, this.table, leaves.map((leaf) => ({ pk, sk: `${LEAF}${leaf.image_hash}`, ...leaf, expires_at: expires })));
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

  /** The seal of a batch, read strongly consistent (undefined: nobody holds a claim on it). */
  async getSeal(pk: string): Promise<BatchSeal | undefined> {
    const r = await this.db.send(new GetCommand({ TableName: this.table, Key: { pk, sk: SEAL }, ConsistentRead: true }));
    const seal = r.Item as (BatchSeal & { state?: BatchSeal['state'] }) | undefined;
    // A claim given back (abandon) leaves the version behind and no state: nobody holds it.
    return seal?.state ? seal : undefined;
  }

  /*
   * The seal's transitions (lib/state-machines.ts BATCH_SEAL), each from the seal as the caller
   * read it (state and version `v`), moving the version on (lib/store/versioned.ts). Each returns
   * the seal as it now stands, or null when it had moved on: the caller reads it again.
   */

  /** claim (none → sealing): exactly one of any number of concurrent claims wins; no read first. */
  async claimSeal(pk: string, sealerId: string, leaseExpiresAt: number): Promise<BatchSeal | null> {
    const r = await this.move({ pk }, 'claim', { lease: { take: { token: sealerId, expiresAt: leaseExpiresAt } }, version: 'unread' });
    if (!r.ok) return null;
    return { state: 'sealing', v: Number((r.attributes as { v?: unknown } | undefined)?.v), sealer_id: sealerId, lease_expires_at: leaseExpiresAt };
  }

  /** takeOver (sealing → sealing): the claim of a sealer whose lease lapsed (it died, or hangs). */
  async takeOverSeal(pk: string, current: BatchSeal, sealerId: string, leaseExpiresAt: number, nowMs: number): Promise<BatchSeal | null> {
    const r = await this.move({ pk, ...current }, 'takeOver', { lease: { take: { token: sealerId, expiresAt: leaseExpiresAt }, ifLapsedBefore: nowMs } });
    return r.ok ? { ...current, v: current.v + 1, sealer_id: sealerId, lease_expires_at: leaseExpiresAt } : null;
  }

  /** abandon (sealing → none): gives a claim back when nothing was stored under it, so another waiter seals at once. */
  async abandonSeal(pk: string, current: BatchSeal): Promise<void> {
    await this.move({ pk, ...current }, 'abandon', { lease: { holder: current.sealer_id, then: 'end' } });
  }

  /**
   * seal (sealing → sealed): the leaf list, the root and the signed transaction, stored BEFORE the
   * transaction can reach a node (called from the ledger's persist hook). Only by the sealer that
   * holds the claim, as it read it: a sealer that lost it to a take-over gets null, and its
   * transaction is given back unsent. From here the batch is fixed: a leaf written later is not in it.
   */
  async markSealed(pk: string, current: BatchSeal, contents: SealContents, tx: StoredTx): Promise<BatchSeal | null> {
    const set = {
      images: contents.images, leaves: contents.leaves, root: contents.root, tree_size: contents.tree_size, sealed_at: contents.sealed_at,
      tx_hash: tx.tx_hash, tx_nonce: tx.tx_nonce, tx_raw: tx.tx_raw, ledger_address: tx.ledger_address, ledger_chain_id: tx.ledger_chain_id,
    };
    const r = await this.move({ pk, ...current }, 'seal', { set, lease: { holder: current.sealer_id, then: 'keep' } });
    return r.ok ? { ...current, ...set, state: 'sealed', v: current.v + 1 } : null;
  }

  /**
   * replace (sealed → sealed): the batch's transaction can never be mined (its nonce is held by
   * another transaction): a new one with the same root replaces it. Of two resumers that found it
   * dead, the one whose write lands on the version both read replaces it; the other's is given
   * back unsent. (A condition on the dead hash could not tell them apart: a re-signature at the
   * same nonce and fees has the same hash.)
   */
  async replaceSealTx(pk: string, current: BatchSeal, tx: StoredTx): Promise<BatchSeal | null> {
    const set = { tx_hash: tx.tx_hash, tx_nonce: tx.tx_nonce, tx_raw: tx.tx_raw, ledger_address: tx.ledger_address, ledger_chain_id: tx.ledger_chain_id };
    const r = await this.move({ pk, ...current }, 'replace', { set });
    return r.ok ? { ...current, ...set, v: current.v + 1 } : null;
  }

  private move(
    seal: { pk: string; state?: BatchSeal['state']; v?: number },
    transition: keyof typeof BATCH_SEAL.transitions,
    options: { set?: Record<string, unknown>; remove?: readonly string[]; also?: VersionedMove['also']; lease?: LeaseStep; version?: 'unread' },
  ): Promise<WriteOutcome> {
    const t = BATCH_SEAL.transitions[transition];
    const from = t.from === 'none' ? null : t.from;
    if (options.version !== 'unread' && (seal.state ?? null) !== from) throw new Error(`batch ${seal.pk}: ${transition} starts from ${t.from}, the seal read is ${seal.state ?? 'none'}`);
    return moveState(this.db, {
      table: this.table,
      key: { pk: seal.pk, sk: SEAL },
      stateAttribute: 'state',
      versionAttribute: 'v',
      from,
      version: options.version ?? seal.v,
      to: t.to === 'none' ? null : t.to,
      ...(options.set ? { set: options.set } : {}),
      ...(options.remove ? { remove: options.remove } : {}),
      ...(options.also ? { also: options.also } : {}),
      ...(options.lease ? { lease: { attributes: SEAL_LEASE, step: options.lease } } : {}),
      ...(options.version === 'unread' ? { returnValues: 'UPDATED_NEW' as const } : {}),
    });
  }
}
