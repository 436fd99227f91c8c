import { BatchGetCommand, type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';

/**
 * The reads the counters table's two kinds of held items share (counter-table.ts: the quota
 * counters' in-flight holds; meter-table.ts: the account meters' holds): the sparse `open_holds`
 * index, and the items it names read back strongly consistent. What a hold is, and how an item
 * without one leaves the index, stays with each table.
 */

/** The value of `hold_shard` that puts an item on the open_holds index. */
export const HOLD_SHARD = 'open';

/** Every key under `prefix` on the open_holds index (eventually consistent: keys only, every page). */
export async function openHoldKeys(db: DynamoDBDocumentClient, table: string, prefix: string): Promise<Set<string>> {
  const keys = new Set<string>();
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db.send(
      new QueryCommand({
        TableName: table,
        IndexName: 'open_holds',
        KeyConditionExpression: 'hold_shard = :s AND begins_with(pk, :p)',
        ExpressionAttributeValues: { ':s': HOLD_SHARD, ':p': prefix },
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of page.Items ?? []) keys.add(String(item.pk));
    start = page.LastEvaluatedKey;
  } while (start);
  return keys;
}

/** The items of `pks` that exist, read strongly consistent, 100 to a request (BatchGetItem's limit). */
export async function getManyByPk(db: DynamoDBDocumentClient, table: string, pks: string[]): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < pks.length; i += 100) {
    let keys: Record<string, unknown>[] = pks.slice(i, i + 100).map((pk) => ({ pk }));
    while (keys.length > 0) {
      const r = await db.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: keys, ConsistentRead: true } } }));
      out.push(...(r.Responses?.[table] ?? []));
      keys = r.UnprocessedKeys?.[table]?.Keys ?? [];
    }
  }
  return out;
}
