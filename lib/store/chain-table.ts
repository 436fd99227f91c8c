import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { putAll } from './batch-write.js';
import type { ChainLinkStore } from '../evidence/ports.js';
import type { ChainLink } from '../evidence/records.js';
import { tryWrite } from './conditional.js';

/**
 * The chains table (infra/tables.json, key public_key_hex + chain_index): the device-chain links
 * behind the domain's ChainLinkStore port (lib/evidence/ports.ts). The rules that keep a chain
 * from forking are the domain's (lib/evidence/repository.ts claimLink); each write here is one
 * conditional single-item write, its condition explained where it is written.
 */
export class ChainTable implements ChainLinkStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /** The last link of a device's chain that is not released, if any (to tell a client the next free index). */
  async lastLink(publicKeyHex: string): Promise<ChainLink | undefined> {
    let start: Record<string, unknown> | undefined;
    do {
      const r = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'public_key_hex = :pk',
          ExpressionAttributeValues: { ':pk': publicKeyHex },
          ScanIndexForward: false,
          Limit: 8,
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      const live = ((r.Items ?? []) as ChainLink[]).find((l) => l.state !== 'released');
      if (live) return live;
      start = r.LastEvaluatedKey;
    } while (start);
    return undefined;
  }

  /** The link at `index`, unless there is none or it was released. */
  async getLink(publicKeyHex: string, index: number): Promise<ChainLink | undefined> {
    const r = await this.db.send(
      new GetCommand({ TableName: this.table, Key: { public_key_hex: publicKeyHex, chain_index: index }, ConsistentRead: true }),
    );
    const link = r.Item as ChainLink | undefined;
    return link?.state === 'released' ? undefined : link;
  }

  /** A page of a device's chain in index order (released links left out). */
  async listLinks(publicKeyHex: string, fromIndex: number, limit: number): Promise<ChainLink[]> {
    const r = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'public_key_hex = :pk AND chain_index >= :from',
        FilterExpression: '#state <> :released',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':pk': publicKeyHex, ':from': fromIndex, ':released': 'released' },
        Limit: limit,
      }),
    );
    return (r.Items ?? []) as ChainLink[];
  }

  /** The links at index − 1, index and index + 1 that exist (released ones too), in one strongly consistent Query. */
  async linksAround(publicKeyHex: string, index: number): Promise<Map<number, ChainLink>> {
    const r = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'public_key_hex = :pk AND chain_index BETWEEN :lo AND :hi',
        // chain_index is at most 2^53 − 1 (decisions.md "Faults of the parts", Numbers): the bound stays a safe integer.
        ExpressionAttributeValues: { ':pk': publicKeyHex, ':lo': Math.max(0, index - 1), ':hi': Math.min(Number.MAX_SAFE_INTEGER, index + 1) },
        ConsistentRead: true,
      }),
    );
    return new Map(((r.Items ?? []) as ChainLink[]).map((l) => [l.chain_index, l]));
  }

  /**
   * Writes a new link; false when its position is taken. With `free: 'never-claimed'` only where no
   * link ever was (the claim shortcut of EvidenceRepository.claimLink); otherwise also over a
   * released one.
   */
  async putLink(link: ChainLink, free: 'never-claimed' | 'absent-or-released' = 'absent-or-released'): Promise<boolean> {
    const put = await tryWrite(
      this.db,
      new PutCommand({
        TableName: this.table,
        Item: link,
        ConditionExpression: free === 'never-claimed' ? 'attribute_not_exists(public_key_hex)' : 'attribute_not_exists(public_key_hex) OR #state = :released',
        ...(free === 'never-claimed' ? {} : { ExpressionAttributeNames: { '#state': 'state' }, ExpressionAttributeValues: { ':released': 'released' } }),
      }),
    );
    return put.ok;
  }

  /**
   * Moves the claim of a claimed link to `claimId` with a new lease (the identical retry takes the
   * request over): only the link of that very hash, still claimed, by the claim read
   * (`wasClaimId`). False when it moved on.
   */
  async moveLinkClaim(link: Pick<ChainLink, 'public_key_hex' | 'chain_index' | 'image_hash'>, claimId: string, wasClaimId: string, leaseExpiresAt: number): Promise<boolean> {
    const moved = await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: { public_key_hex: link.public_key_hex, chain_index: link.chain_index },
        UpdateExpression: 'SET claim_id = :id, lease_expires_at = :lease',
        ConditionExpression: 'image_hash = :img AND #state = :claimed AND claim_id = :was',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':id': claimId, ':lease': leaseExpiresAt, ':img': link.image_hash, ':claimed': 'claimed', ':was': wasClaimId },
      }),
    );
    return moved.ok;
  }

  /**
   * Releases a claimed link of the claim `claimId`; never an anchored one. False when it was not
   * (any more) that claim's. The link is marked `released`, not deleted: a position where a link
   * ever was is never "never claimed" again (EvidenceRepository.claimLink relies on it).
   */
  async releaseLink(publicKeyHex: string, index: number, claimId: string): Promise<boolean> {
    const r = await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: { public_key_hex: publicKeyHex, chain_index: index },
        UpdateExpression: 'SET #state = :released REMOVE lease_expires_at',
        ConditionExpression: 'claim_id = :id AND #state = :claimed',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':id': claimId, ':claimed': 'claimed', ':released': 'released' },
      }),
    );
    return r.ok;
  }

  /** Marks the link of `imageHash` anchored (whatever claim holds it: only that hash can ever complete it). Idempotent. */
  async anchorLink(publicKeyHex: string, index: number, imageHash: string, anchoredAt: string, txHash: string): Promise<void> {
    await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: { public_key_hex: publicKeyHex, chain_index: index },
        UpdateExpression: 'SET #state = :anchored, anchored_at = :at, tx_hash = :tx REMOVE lease_expires_at',
        ConditionExpression: 'image_hash = :img',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':anchored': 'anchored', ':at': anchoredAt, ':tx': txHash, ':img': imageHash },
      }),
    );
  }

  /**
   * Writes links as anchored, with their anchored items' values (lib/evidence/derived.ts): puts of
   * whole links, 25 to a BatchWriteItem. Unconditional and idempotent: once its item is anchored a
   * link belongs to that item for good, so a put of the item's values never takes a link from
   * anyone, and a second put writes the same values.
   */
  async putAnchoredLinks(links: ChainLink[]): Promise<void> {
    await putAll(this.db, this.table, links as unknown as Record<string, unknown>[]);
  }

  /** Names `txHash` (a replacement of the link's transaction) on the link of `imageHash`. */
  async followTx(publicKeyHex: string, index: number, imageHash: string, txHash: string): Promise<void> {
    await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: { public_key_hex: publicKeyHex, chain_index: index },
        UpdateExpression: 'SET tx_hash = :tx',
        ConditionExpression: 'image_hash = :img', // the link of this very item
        ExpressionAttributeValues: { ':tx': txHash, ':img': imageHash },
      }),
    );
  }
}
