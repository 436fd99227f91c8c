import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Registration } from '../evidence/ports.js';
import type { EvidenceItem, StandaloneAnswers, StandaloneKind } from '../evidence/records.js';
import { tryWrite } from './conditional.js';

/** The key of an account's stand-alone answer of one kind on a hash (an item of its own). */
function standaloneKey(kind: StandaloneKind, accountId: string, imageHash: string): string {
  return `standalone#${kind}#${accountId}#${imageHash}`;
}

/** The key of an account's registration of a hash (an item of its own). */
export function registrationKey(accountId: string, imageHash: string): string {
  return `reg#${accountId}#${imageHash}`;
}

/**
 * The items of the evidence table that belong to one account and one hash, beside the hash's
 * evidence item (evidence-table.ts, which extends this class): the account's registration and
 * its stand-alone answers. Each is an item of its own with no anchor state, so that many
 * accounts cannot grow the evidence item and the sweeps of the table pass them by.
 */
export class AccountEvidenceItems {
  constructor(
    protected readonly db: DynamoDBDocumentClient,
    protected readonly table: string,
  ) {}

  // ------------------------------------------------------------------ registrations (one per account and hash)

  /**
   * registers a hash for one account: the item `reg#<account>#<hash>`, whose own time is kept by
   * `if_not_exists` (the account's first registration), with the quota hold that paid for it
   * (hold kind `g`: the reconciliation settles a hold the item names, quota-holds.ts). One
   * UpdateItem; the item as it was (ALL_OLD) tells whether this call made it. A resend of this
   * very write (its answer lost) finds its own hold there and counts as the first.
   * The item is on two sparse indexes: by_account (the account's recent evidence) and by_hash
   * (whether, and since when, any account registered the hash: public verify).
   */
  async register(imageHash: string, accountId: string, now: string, holdId: string): Promise<Registration | 'barred'> {
    const r = await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: { image_hash: registrationKey(accountId, imageHash) },
        UpdateExpression:
          'SET registered_at = if_not_exists(registered_at, :now), activity_at = if_not_exists(activity_at, :now), account_id = :acct, reg_of = :hash, quota_hold = if_not_exists(quota_hold, :hold)',
        // A hold the reconciliation refunded (its request outlived the grace) can never pay for a registration.
        ConditionExpression: 'attribute_not_exists(barred_holds) OR NOT contains(barred_holds, :hold)',
        ExpressionAttributeValues: { ':now': now, ':acct': accountId, ':hash': imageHash, ':hold': holdId },
        ReturnValues: 'ALL_OLD',
      }),
    );
    if (!r.ok) return 'barred';
    const before = r.attributes as { registered_at?: string; quota_hold?: string } | undefined;
    return { registeredAt: before?.registered_at ?? now, first: before?.registered_at === undefined || before.quota_hold === holdId, hold: before?.quota_hold ?? holdId };
  }

  /**
   * Bars a registration's hold before the reconciliation refunds it: a request that outlived the
   * grace can then never register under it. 'registered' when the account's registration exists
   * (under another hold: the hold can never be named any more, nothing to bar).
   */
  async barRegistration(imageHash: string, accountId: string, holdId: string): Promise<'barred' | 'registered'> {
    const r = await tryWrite(
      this.db,
      new UpdateCommand({
        TableName: this.table,
        Key: { image_hash: registrationKey(accountId, imageHash) },
        UpdateExpression: 'ADD barred_holds :hold',
        ConditionExpression: 'attribute_not_exists(registered_at)',
        ExpressionAttributeValues: { ':hold': new Set([holdId]) },
      }),
    );
    return r.ok ? 'barred' : 'registered';
  }

  /**
   * The account's own registration of the hash (strongly consistent); for data from before the
   * per-account registrations, the evidence item's first registration when this account made it.
   */
  async getRegistration(imageHash: string, accountId: string, item?: EvidenceItem): Promise<Registration | undefined> {
    const r = await this.db.send(new GetCommand({ TableName: this.table, Key: { image_hash: registrationKey(accountId, imageHash) }, ConsistentRead: true }));
    const own = r.Item as { registered_at?: string; quota_hold?: string } | undefined;
    if (own?.registered_at) return { registeredAt: own.registered_at, first: true, hold: own.quota_hold ?? '' };
    if (item?.registered_by === accountId && item.registered_at) return { registeredAt: item.registered_at, first: true, hold: '' };
    return undefined;
  }

  /**
   * When any account first registered the hash (the by_hash index, earliest first; eventually
   * consistent in DynamoDB, so a registration of the last second may not show yet), or what an
   * evidence item from before the per-account registrations kept.
   */
  async firstRegistration(imageHash: string, item?: EvidenceItem): Promise<string | undefined> {
    const r = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'by_hash',
        KeyConditionExpression: 'reg_of = :h',
        ExpressionAttributeValues: { ':h': imageHash },
        ScanIndexForward: true,
        Limit: 1,
      }),
    );
    const first = r.Items?.[0]?.registered_at as string | undefined;
    const legacy = item?.registered_at;
    return first !== undefined && legacy !== undefined ? (first < legacy ? first : legacy) : (first ?? legacy);
  }

  // ------------------------------------------------------------------ stand-alone proofs

  /**
   * Records an account's stand-alone timestamp or signature answer in an item of its own,
   * `standalone#<kind>#<account>#<hash>` (one unconditional put: the latest answer wins). The
   * hash's evidence item is not touched, so answers of many accounts cannot grow it (records.ts).
   * Like the blobs, these items have no anchor state: the sweeps of this table pass them by. The
   * account and the time put it on the by_account index (the account's recent evidence).
   */
  async recordStandalone(imageHash: string, accountId: string, kind: StandaloneKind, answer: object): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: { image_hash: standaloneKey(kind, accountId, imageHash), answer, account_id: accountId, activity_at: new Date().toISOString() },
      }),
    );
  }

  /** The account's stand-alone items of the hash (two strongly consistent reads side by side). */
  async getStandalone(imageHash: string, accountId: string): Promise<StandaloneAnswers> {
    const read = (kind: StandaloneKind) =>
      this.db.send(new GetCommand({ TableName: this.table, Key: { image_hash: standaloneKey(kind, accountId, imageHash) }, ConsistentRead: true })).then((r) => r.Item?.answer);
    const [timestamp, signature] = await Promise.all([read('ts'), read('sig')]);
    return { ...(timestamp !== undefined ? { timestamp } : {}), ...(signature !== undefined ? { signature } : {}) };
  }
}
