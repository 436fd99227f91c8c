import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { ApiKeyRecord, ApiKeyRepository, DeactivateOutcome } from '../accounts/api-key-repository.js';
import type { TierName } from '../accounts/tiers.js';
import { isConditionalCheckFailed } from './dynamo.js';

/**
 * The apiKeys table (infra/tables.json) behind the domain's ApiKeyRepository port
 * (lib/accounts/api-key-repository.ts). Authentication reads the table itself (strongly consistent GetItem by
 * hash), so a deactivation is seen by the very next request; the `by_account` index, which is
 * eventually consistent in DynamoDB, only serves listings and the key-id lookup of DELETE.
 */
export class ApiKeyTable implements ApiKeyRepository {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /** Stores a new key. */
  async create(record: ApiKeyRecord): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: record,
        // attribute_not_exists(key_hash): a 190-bit key never collides, but if it did, never
        // overwrite (and so re-assign) someone else's key.
        ConditionExpression: 'attribute_not_exists(key_hash)',
      }),
    );
  }

  /** Deletes a key item (clean-up of a registration that lost its e-mail claim). */
  async remove(keyHash: string): Promise<void> {
    await this.db.send(new DeleteCommand({ TableName: this.table, Key: { key_hash: keyHash } }));
  }

  /** The key with this hash: one strongly consistent GetItem (the authentication hot path). */
  async getByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: { key_hash: keyHash }, ConsistentRead: true }));
    return out.Item as ApiKeyRecord | undefined;
  }

  /**
   * Copies the account's tier stamp onto the key, unless the key already holds that version or a
   * newer one; false when it did (or when the key does not exist). Versions only move forward, so
   * of two tier changes that update the keys in either order the later one stays.
   */
  async setTier(keyHash: string, tier: TierName, version: number): Promise<boolean> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { key_hash: keyHash },
          UpdateExpression: 'SET tier = :tier, tier_version = :v',
          // attribute_exists(key_hash): never create a stub item (a key being created is written
          // with its stamp and then re-checked by its creator); the version test: never go back.
          ConditionExpression: 'attribute_exists(key_hash) AND (attribute_not_exists(tier_version) OR tier_version < :v)',
          ExpressionAttributeValues: { ':tier': tier, ':v': version },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  /**
   * Records a use, unless one was recorded after `notAfter` (so at most about one write per key
   * and minute, whatever the request rate). False when another request recorded it first.
   */
  async touch(keyHash: string, at: string, notAfter: string): Promise<boolean> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { key_hash: keyHash },
          UpdateExpression: 'SET last_used_at = :at',
          // attribute_exists(key_hash): never create a stub item for a deleted key;
          // the last_used_at test: only the first of many concurrent requests writes.
          ConditionExpression: 'attribute_exists(key_hash) AND (attribute_not_exists(last_used_at) OR last_used_at < :notAfter)',
          ExpressionAttributeValues: { ':at': at, ':notAfter': notAfter },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  /** Every key of an account, active or not (by_account index, all pages). */
  async listByAccount(accountId: string): Promise<ApiKeyRecord[]> {
    const items: ApiKeyRecord[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: 'by_account',
          KeyConditionExpression: 'account_id = :a',
          ExpressionAttributeValues: { ':a': accountId },
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      items.push(...((out.Items ?? []) as ApiKeyRecord[]));
      start = out.LastEvaluatedKey;
    } while (start);
    return items;
  }

  /** The key `keyId` of `accountId` (the index is partitioned by account: another account's key is never found). */
  async findByKeyId(accountId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'by_account',
        KeyConditionExpression: 'account_id = :a AND key_id = :k',
        ExpressionAttributeValues: { ':a': accountId, ':k': keyId },
      }),
    );
    return out.Items?.[0] as ApiKeyRecord | undefined;
  }

  /** Deactivates the key `keyHash` if it belongs to `accountId` and is active. */
  async deactivate(keyHash: string, accountId: string, at: string): Promise<DeactivateOutcome> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { key_hash: keyHash },
          UpdateExpression: 'SET active = :false, deactivated_at = :at',
          // account_id = :a re-checks ownership on the table itself (the index may lag);
          // active = :true makes deactivation happen once, so the key slot is released once.
          ConditionExpression: 'account_id = :a AND active = :true',
          ExpressionAttributeValues: { ':a': accountId, ':true': true, ':false': false, ':at': at },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { outcome: 'deactivated', record: out.Attributes as ApiKeyRecord };
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
    const current = await this.getByHash(keyHash);
    if (!current || current.account_id !== accountId) return { outcome: 'not_found' };
    return { outcome: 'already_inactive', record: current };
  }
}
