import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import tableSpec from '../../infra/tables.json' with { type: 'json' };
import { isStoreOutage, StoreUnavailableError } from './errors.js';

/** Logical names of the service's tables, as in infra/tables.json. */
export type TableKey = 'accounts' | 'apiKeys' | 'evidence' | 'chains' | 'counters' | 'ledger' | 'batches' | 'activity';
export const TABLE_KEYS: readonly TableKey[] = ['accounts', 'apiKeys', 'evidence', 'chains', 'counters', 'ledger', 'batches', 'activity'];

/** Physical table name for each logical table. */
export type TableNames = Readonly<Record<TableKey, string>>;

/** The definitions in infra/tables.json, typed. */
export interface TableDefinition {
  envVar: string;
  description: string;
  AttributeDefinitions: { AttributeName: string; AttributeType: 'S' | 'N' | 'B' }[];
  KeySchema: { AttributeName: string; KeyType: 'HASH' | 'RANGE' }[];
  GlobalSecondaryIndexes?: {
    IndexName: string;
    KeySchema: { AttributeName: string; KeyType: 'HASH' | 'RANGE' }[];
    Projection: { ProjectionType: 'ALL' | 'KEYS_ONLY' };
  }[];
  TimeToLiveAttribute?: string;
}

export const TABLE_DEFINITIONS = tableSpec as unknown as Record<TableKey, TableDefinition>;

export interface DynamoSettings {
  region: string;
  /** Set for the embedded dynalite server; unset in AWS (the SDK resolves the regional endpoint). */
  endpoint?: string | undefined;
}

/**
 * A DocumentClient over the real AWS SDK. Against the embedded server the credentials are
 * placeholders (dynalite does not check them); in AWS the default provider chain (the Lambda role) is used.
 */
export function createDocumentClient(settings: DynamoSettings): DynamoDBDocumentClient {
  const client = new DynamoDBClient({
    region: settings.region,
    ...(settings.endpoint
      ? { endpoint: settings.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
    maxAttempts: 3,
  });
  // One place for outages: a call that still fails after the SDK's retries because DynamoDB is
  // unreachable or failing becomes StoreUnavailableError (HTTP 503 database_unavailable, see
  // lib/http/errors.ts). Outermost step, so it sees the final error; refusals (conditions,
  // validation) pass through unchanged.
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        if (!isStoreOutage(error)) throw error;
        const e = error as { name?: string; code?: string };
        throw new StoreUnavailableError([e.name, e.code].filter(Boolean).join(' '), { cause: error });
      }
    },
    { step: 'initialize', name: 'storeOutageMiddleware', priority: 'high' },
  );
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true },
  });
}

/** True when a write lost its condition (the expected outcome of a race, not a fault). */
export function isConditionalCheckFailed(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    'name' in error &&
    (error as { name: unknown }).name === 'ConditionalCheckFailedException'
  );
}
