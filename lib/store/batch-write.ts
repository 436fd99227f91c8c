import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * Puts whole items into one table, 25 to a BatchWriteItem (DynamoDB's limit), sending again what
 * comes back unprocessed (throttled) after a pause that doubles, at most 8 times per chunk. For
 * unconditional, idempotent puts only: a BatchWriteItem takes no condition. Each call has the
 * client's deadline (lib/store/dynamo.ts).
 */
export async function putAll(db: DynamoDBDocumentClient, table: string, items: readonly Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < items.length; i += 25) {
    let requests: Record<string, unknown>[] = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
    for (let attempt = 0; requests.length > 0; attempt++) {
      if (attempt >= 8) throw new Error(`${table}: ${requests.length} items were not written (throttled)`);
      const out = await db.send(new BatchWriteCommand({ RequestItems: { [table]: requests } }));
      requests = (out.UnprocessedItems?.[table] ?? []) as Record<string, unknown>[];
      if (requests.length) await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
    }
  }
}
