import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type AccountRecord, type AccountRepository, type TierChange, type TierStamp, tierStamp } from '../accounts/account-repository.js';
import type { TierName } from '../accounts/tiers.js';
import { isConditionalCheckFailed } from './dynamo.js';

const accountPk = (accountId: string) => `acct#${accountId}`;
const emailPk = (email: string) => `email#${email}`;

/**
 * The accounts table (infra/tables.json) behind the domain's AccountRepository port
 * (lib/accounts/account-repository.ts): one item per account (`acct#<id>`) and one per claimed e-mail address
 * (`email#<address>` → account id). Every read is strongly consistent; every write is a
 * single-item conditional write (no transactions: dynalite has none).
 *
 * The account item also holds `key_hashes`, a string set of the hashes of its active API keys
 * (and of older keys once they have been used, see {@link enlistKey}): the key items that carry a
 * copy of the tier. It is read back atomically with each tier change, so a tier change finds every
 * such key without the `by_account` index, which DynamoDB updates only eventually.
 */
export class AccountTable implements AccountRepository {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /**
   * Writes a new account item with the hashes of its first keys enlisted. Ids are random, so the
   * condition only guards against a reused id.
   */
  async create(account: AccountRecord, keyHashes: readonly string[] = []): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: { pk: accountPk(account.account_id), ...account, ...(keyHashes.length ? { key_hashes: new Set(keyHashes) } : {}) },
        // attribute_not_exists(pk): never overwrite an existing account.
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  /**
   * Claims `email` for `accountId`; false when another account holds it. The conditional put is
   * the one place where uniqueness of e-mail addresses is decided: of N concurrent claims of one
   * address, DynamoDB lets exactly one create the item.
   */
  async claimEmail(email: string, accountId: string, at: string): Promise<boolean> {
    try {
      await this.db.send(
        new PutCommand({
          TableName: this.table,
          Item: { pk: emailPk(email), account_id: accountId, created_at: at },
          // attribute_not_exists(pk): succeed only if no account has claimed this address yet.
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  /** Deletes an account item (clean-up of a registration that lost its e-mail claim). */
  async remove(accountId: string): Promise<void> {
    await this.db.send(new DeleteCommand({ TableName: this.table, Key: { pk: accountPk(accountId) } }));
  }

  /** The account, or undefined. */
  async get(accountId: string): Promise<AccountRecord | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: { pk: accountPk(accountId) }, ConsistentRead: true }));
    return out.Item ? toAccount(out.Item) : undefined;
  }

  /** The id of the account that claimed `email` (lower-cased), or undefined. */
  async findIdByEmail(email: string): Promise<string | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: { pk: emailPk(email) }, ConsistentRead: true }));
    const id = out.Item?.account_id;
    return typeof id === 'string' ? id : undefined;
  }

  /**
   * Sets the tier and counts the change in `tier_version`; with it, in the same atomic write, the
   * hashes of the keys enlisted at that moment. Undefined when there is no such account.
   */
  async setTier(accountId: string, tier: TierName, at: string): Promise<TierChange | undefined> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: accountPk(accountId) },
          UpdateExpression: 'SET tier = :tier, tier_updated_at = :at ADD tier_version :one',
          // attribute_exists(pk): an update would otherwise create a half account from nothing.
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':tier': tier, ':at': at, ':one': 1 },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return out.Attributes ? { account: toAccount(out.Attributes), keyHashes: keyHashesOf(out.Attributes) } : undefined;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return undefined;
      throw error;
    }
  }

  /**
   * Takes one of the account's `max` key slots for the key `keyHash` and enlists the hash; the
   * account's tier stamp at that moment, or undefined when all slots are taken (or no such
   * account). Check and increment are one conditional update of one item, which DynamoDB
   * serialises: of 20 concurrent calls with 0 keys and max 5, exactly 5 succeed.
   */
  async reserveKeySlot(accountId: string, max: number, keyHash: string): Promise<TierStamp | undefined> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: accountPk(accountId) },
          UpdateExpression: 'ADD active_keys :one, key_hashes :hash',
          // attribute_exists(pk): the account exists (ADD would create an item otherwise);
          // active_keys < :max: a free slot is left, checked atomically with the increment.
          ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(active_keys) OR active_keys < :max)',
          ExpressionAttributeValues: { ':one': 1, ':max': max, ':hash': new Set([keyHash]) },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return out.Attributes ? tierStampOf(out.Attributes) : undefined;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return undefined;
      throw error;
    }
  }

  /**
   * Gives back one key slot and withdraws the key's hash (a key was deactivated, or its creation
   * failed after the reservation).
   */
  async releaseKeySlot(accountId: string, keyHash: string): Promise<void> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: accountPk(accountId) },
          UpdateExpression: 'ADD active_keys :minus DELETE key_hashes :hash',
          // active_keys > 0: never below zero, and never creates an item for an unknown account.
          ConditionExpression: 'active_keys > :zero',
          ExpressionAttributeValues: { ':minus': -1, ':zero': 0, ':hash': new Set([keyHash]) },
        }),
      );
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }

  /**
   * Enlists an existing key (one written before keys carried the tier) and reads the tier stamp
   * in the same atomic write: a tier change after it finds the key, one before it is in the
   * stamp. Undefined when there is no such account.
   */
  async enlistKey(accountId: string, keyHash: string): Promise<TierStamp | undefined> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: accountPk(accountId) },
          UpdateExpression: 'ADD key_hashes :hash',
          // attribute_exists(pk): never create an item for an account that is gone.
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':hash': new Set([keyHash]) },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return out.Attributes ? tierStampOf(out.Attributes) : undefined;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return undefined;
      throw error;
    }
  }
}

function tierStampOf(item: Record<string, unknown>): TierStamp {
  return tierStamp(item as unknown as AccountRecord);
}

function keyHashesOf(item: Record<string, unknown>): string[] {
  const hashes = item.key_hashes;
  return hashes instanceof Set ? [...(hashes as Set<unknown>)].filter((h): h is string => typeof h === 'string') : [];
}

function toAccount(item: Record<string, unknown>): AccountRecord {
  const { pk: _pk, key_hashes: _keyHashes, ...rest } = item;
  const record = rest as unknown as AccountRecord;
  return {
    ...record,
    name: record.name ?? null,
    active_keys: Number(record.active_keys ?? 0),
    ...(record.tier_version !== undefined ? { tier_version: Number(record.tier_version) } : {}),
  };
}
