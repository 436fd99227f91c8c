import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ACTIVITY_KINDS, type ActivityEntry, type ActivityKind, type ActivityRepository } from '../evidence/activity.js';

/** What an item on the by_account index is, by its key: which hash, and what the account obtained. */
function activityOf(key: string): { hash: string; kind: ActivityKind } | undefined {
  if (/^[0-9a-f]{64}$/.test(key)) return { hash: key, kind: 'anchored' };
  const m = /^(reg|standalone#ts|standalone#sig)#[^#]+#([0-9a-f]{64})$/.exec(key);
  if (!m) return undefined;
  const kind: ActivityKind = m[1] === 'reg' ? 'registered' : m[1] === 'standalone#ts' ? 'timestamped' : 'signed';
  return { hash: m[2] as string, kind };
}

/**
 * An account's recent evidence (lib/evidence/activity.ts) from the evidence table's sparse index
 * by_account: registrations, stand-alone answers and anchors (once anchored) carry `account_id` and
 * `activity_at`, which put them on it. A module of its own so that the account endpoint that lists
 * them carries no more of the evidence store than this one query.
 */
export class ActivityIndex implements ActivityRepository {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /** Newest first, merged per hash: reads index pages until `limit` hashes are found or it ends. */
  async recent(accountId: string, limit: number): Promise<ActivityEntry[]> {
    const byHash = new Map<string, { proofs: Set<ActivityKind>; at: string }>();
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: 'by_account',
          KeyConditionExpression: 'account_id = :a',
          ExpressionAttributeValues: { ':a': accountId },
          ScanIndexForward: false,
          Limit: limit * 4,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) {
        const what = activityOf(String(item.image_hash));
        if (!what) continue;
        const entry = byHash.get(what.hash);
        if (entry) entry.proofs.add(what.kind);
        else if (byHash.size < limit) byHash.set(what.hash, { proofs: new Set([what.kind]), at: String(item.activity_at) });
      }
      start = page.LastEvaluatedKey;
    } while (start && byHash.size < limit);
    return [...byHash].map(([image_hash, e]) => ({ image_hash, proofs: ACTIVITY_KINDS.filter((k) => e.proofs.has(k)), at: e.at }));
  }
}
