import { CreateTableCommand, DescribeTableCommand, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { TABLE_DEFINITIONS, TABLE_KEYS, type TableNames } from './dynamo.js';

/**
 * Creates every table of infra/tables.json that does not exist yet (the embedded stack and tests).
 * In AWS the same definitions are deployed by CloudFormation, so this never runs there.
 * dynalite has no TTL API: the expiry attribute is written anyway and readers filter on it.
 */
export async function ensureTables(client: DynamoDBDocumentClient, names: TableNames): Promise<string[]> {
  const created: string[] = [];
  for (const key of TABLE_KEYS) {
    const def = TABLE_DEFINITIONS[key];
    const name = names[key];
    try {
      await client.send(new DescribeTableCommand({ TableName: name }));
      continue;
    } catch (error) {
      if (!(error instanceof ResourceNotFoundException)) throw error;
    }
    await client.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: def.AttributeDefinitions,
        KeySchema: def.KeySchema,
        ...(def.GlobalSecondaryIndexes ? { GlobalSecondaryIndexes: def.GlobalSecondaryIndexes } : {}),
      }),
    );
    created.push(name);
  }
  return created;
}

/** Checks that every table answers DescribeTable (used by the health endpoint). */
export async function describeTables(client: DynamoDBDocumentClient, names: TableNames): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  await Promise.all(
    TABLE_KEYS.map(async (key) => {
      const r = await client.send(new DescribeTableCommand({ TableName: names[key] }));
      out[key] = r.Table?.TableStatus ?? 'UNKNOWN';
    }),
  );
  return out;
}
