import { type DynamoDBDocumentClient, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';

/** What an account obtained for a hash, in the order the list shows them. */
export const ACTIVITY_KINDS = ['registered', 'timestamped', 'signed', 'anchored'] as const;
export type ActivityKind = (typeof ACTIVITY_KINDS)[number];

/** One hash of an account's recent evidence. */
export interface ActivityEntry {
  image_hash: string;
  /** Every proof the account obtained for the hash, in ACTIVITY_KINDS order. */
  proofs: ActivityKind[];
  /** When the account last obtained one. */
  at: string;
}

/**
 * The activity table (infra/tables.json): one item per (account, hash). Noting is one UpdateItem
 * that adds the kind to a string set and moves `at` forward: idempotent, so a retried request, or
 * two at once, leave the same item.
 */
export class ActivityRepository {
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
