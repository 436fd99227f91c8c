import { type DynamoDBDocumentClient, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ACTIVITY_KINDS, type ActivityEntry, type ActivityKind, type ActivityRepository } from '../accounts/activity-repository.js';

/**
 * The activity table (infra/tables.json) behind the domain's ActivityRepository port
 * (lib/accounts/activity-repository.ts): one item per (account, hash). Noting is one UpdateItem
 * that adds the kind to a string set and moves `at` forward: idempotent, so a retried request, or
 * two at once, leave the same item.
 */
export class ActivityTable implements ActivityRepository {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async note(accountId: string, imageHash: string, kind: ActivityKind, at: string): Promise<void> {
    await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { account_id: accountId, image_hash: imageHash },
        UpdateExpression: 'SET #at = :at ADD proofs :kind',
        ExpressionAttributeNames: { '#at': 'at' },
        ExpressionAttributeValues: { ':at': at, ':kind': new Set([kind]) },
      }),
    );
  }

  /** The account's hashes, most recent first (the `recent` index). */
  async recent(accountId: string, limit: number): Promise<ActivityEntry[]> {
    const r = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'recent',
        KeyConditionExpression: 'account_id = :a',
        ExpressionAttributeValues: { ':a': accountId },
        ScanIndexForward: false,
        Limit: limit,
      }),
    );
    return (r.Items ?? []).map((item) => {
      const proofs = new Set<string>(item.proofs instanceof Set ? [...(item.proofs as Set<string>)] : []);
      return { image_hash: String(item.image_hash), proofs: ACTIVITY_KINDS.filter((k) => proofs.has(k)), at: String(item.at) };
    });
  }
}
