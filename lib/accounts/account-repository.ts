import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { TierName } from '../config.js';
import { isConditionalCheckFailed } from '../store/dynamo.js';

/** An account as stored (accounts table, `pk = acct#<account_id>`). */
export interface AccountRecord {
  account_id: string;
  /** Lower-cased. */
  email: string;
  name: string | null;
  tier: TierName;
  /** scrypt, self-describing (lib/accounts/passwords.ts). */
  password_hash: string;
  created_at: string;
  /** Active API keys, the counter that enforces the 5-key limit (see {@link AccountRepository.reserveKeySlot}). */
  active_keys: number;
  tier_updated_at?: string;
}

const accountPk = (accountId: string) => `acct#${accountId}`;
const emailPk = (email: string) => `email#${email}`;

/**
 * The accounts table: one item per account (`acct#<id>`) and one per claimed e-mail address
 * (`email#<address>` → account id). Every read is strongly consistent; every write is a
 * single-item conditional write (no transactions: dynalite has none).
 */
export class AccountRepository {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /** Writes a new account item. Ids are random, so the condition only guards against a reused id. */
  async create(account: AccountRecord): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: { pk: accountPk(account.account_id), ...account },
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

  /** Sets the tier; the updated account, or undefined when there is no such account. */
  async setTier(accountId: string, tier: TierName, at: string): Promise<AccountRecord | undefined> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: accountPk(accountId) },
          UpdateExpression: 'SET tier = :tier, tier_updated_at = :at',
          // attribute_exists(pk): an update would otherwise create a half account from nothing.
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':tier': tier, ':at': at },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return out.Attributes ? toAccount(out.Attributes) : undefined;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return undefined;
      throw error;
    }
  }

  /**
   * Takes one of the account's `max` key slots; false when all are taken (or no such account).
   * Check and increment are one conditional update of one item, which DynamoDB serialises: of
   * 20 concurrent calls with 0 keys and max 5, exactly 5 succeed.
   */
  async reserveKeySlot(accountId: string, max: number): Promise<boolean> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: accountPk(accountId) },
          UpdateExpression: 'ADD active_keys :one',
          // attribute_exists(pk): the account exists (ADD would create an item otherwise);
          // active_keys < :max: a free slot is left, checked atomically with the increment.
          ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(active_keys) OR active_keys < :max)',
          ExpressionAttributeValues: { ':one': 1, ':max': max },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  /** Gives back one key slot (a key was deactivated, or its creation failed after the reservation). */
  async releaseKeySlot(accountId: string): Promise<void> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: accountPk(accountId) },
          UpdateExpression: 'ADD active_keys :minus',
          // active_keys > 0: never below zero, and never creates an item for an unknown account.
          ConditionExpression: 'active_keys > :zero',
          ExpressionAttributeValues: { ':minus': -1, ':zero': 0 },
        }),
      );
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }
}

function toAccount(item: Record<string, unknown>): AccountRecord {
  const { pk: _pk, ...rest } = item;
  const record = rest as unknown as AccountRecord;
  return { ...record, name: record.name ?? null, active_keys: Number(record.active_keys ?? 0) };
}
