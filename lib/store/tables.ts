import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  type DescribeTableCommandOutput,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { putAll } from './batch-write.js';
import { TABLE_DEFINITIONS, TABLE_KEYS, type TableDefinition, type TableNames } from './dynamo.js';

/**
 * Creates every table of infra/tables.json that does not exist yet (the embedded stack and tests).
 * In AWS the same definitions are deployed by CloudFormation, so this never runs there.
 * dynalite has no TTL API: the expiry attribute is written anyway and readers filter on it.
 */
export async function ensureTables(
  client: DynamoDBDocumentClient,
  names: TableNames,
  options: {
    /** After a table with a stream was rebuilt: its items were copied in, which its stream must not take for changes. */
    afterRebuild?: (table: string) => Promise<void>;
  } = {},
): Promise<string[]> {
  const created: string[] = [];
  for (const key of TABLE_KEYS) {
    const def = TABLE_DEFINITIONS[key];
    const name = names[key];
    const [table, moving] = await Promise.all([describe(client, name), describe(client, migratingName(name))]);
    if (table && !moving && !missingIndexes(table, def).length) continue;
    if (table || moving) {
      await migrateTable(client, name, def, { table, moving: moving !== undefined });
      if (def.StreamSpecification?.StreamEnabled) await options.afterRebuild?.(name);
      continue;
    }
    await createTable(client, name, def);
    created.push(name);
  }
  return created;
}

/**
 * A local table made by an earlier version, which lacks an index that infra/tables.json now
 * defines (dynalite cannot add an index to a table): rebuilt under the same name with every item.
 * Each step can be interrupted and is resumed at the next start: the items are first copied to
 * `<name>-migrating` (created with the new definition), then the table is re-created and the items
 * copied back, then `<name>-migrating` is deleted. Copies are idempotent puts of whole items, and
 * nothing else writes while the tables are ensured (before the service starts). In AWS,
 * CloudFormation adds indexes itself and this never runs.
 */
async function migrateTable(
  client: DynamoDBDocumentClient,
  name: string,
  def: TableDefinition,
  found: { table: DescribeTableCommandOutput['Table'] | undefined; moving: boolean },
): Promise<void> {
  const moving = migratingName(name);
  let present = found.table !== undefined;
  if (found.table && missingIndexes(found.table, def).length) {
    if (!found.moving) await createTable(client, moving, def);
    await copyItems(client, name, moving);
    await client.send(new DeleteTableCommand({ TableName: name }));
    await waitFor(client, name, (t) => !t);
    present = false;
  }
  if (!present) await createTable(client, name, def);
  await copyItems(client, moving, name);
  await client.send(new DeleteTableCommand({ TableName: moving }));
  await waitFor(client, moving, (t) => !t);
}

const migratingName = (name: string) => `${name}-migrating`;

/** What a table made by an earlier version lacks of its definition: indexes, and its stream (both need a rebuild locally). */
function missingIndexes(table: NonNullable<DescribeTableCommandOutput['Table']>, def: TableDefinition): string[] {
  const have = new Set((table.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName));
  const missing = (def.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName).filter((n) => !have.has(n));
  if (def.StreamSpecification?.StreamEnabled && !table.StreamSpecification?.StreamEnabled) missing.push('(stream)');
  return missing;
}

async function describe(client: DynamoDBDocumentClient, name: string): Promise<DescribeTableCommandOutput['Table'] | undefined> {
  try {
    return (await client.send(new DescribeTableCommand({ TableName: name }))).Table;
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return undefined;
    throw error;
  }
}

async function createTable(client: DynamoDBDocumentClient, name: string, def: TableDefinition): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: def.AttributeDefinitions,
      KeySchema: def.KeySchema,
      ...(def.GlobalSecondaryIndexes ? { GlobalSecondaryIndexes: def.GlobalSecondaryIndexes } : {}),
      ...(def.StreamSpecification ? { StreamSpecification: def.StreamSpecification } : {}),
    }),
  );
  await waitFor(client, name, (t) => t?.TableStatus === 'ACTIVE');
}

/** Table operations complete at once on the embedded dynalite; another local server may take a moment. */
async function waitFor(client: DynamoDBDocumentClient, name: string, done: (t: DescribeTableCommandOutput['Table'] | undefined) => boolean): Promise<void> {
  for (let i = 0; !done(await describe(client, name)); i++) {
    if (i >= 600) throw new Error(`table ${name} did not settle within 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function copyItems(client: DynamoDBDocumentClient, from: string, to: string): Promise<void> {
  let start: Record<string, unknown> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: from, ConsistentRead: true, ...(start ? { ExclusiveStartKey: start } : {}) }));
    const items = page.Items ?? [];
    await putAll(client, to, items);
    start = page.LastEvaluatedKey;
  } while (start);
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
