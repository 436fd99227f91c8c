/**
 * The tables of infra/tables.json and the DynamoDB deadlines' defaults, without the AWS SDK: the
 * configuration (lib/config.ts) reads them, and `npm start` checks its ports before the SDK is
 * even loaded (lib/local/start.ts). lib/store/dynamo.ts re-exports them.
 */
import tableSpec from '../../infra/tables.json' with { type: 'json' };

/** Logical names of the service's tables, as in infra/tables.json. */
export type TableKey = 'accounts' | 'apiKeys' | 'evidence' | 'chains' | 'counters' | 'ledger' | 'batches' | 'archive' | 'webhooks';
export const TABLE_KEYS: readonly TableKey[] = ['accounts', 'apiKeys', 'evidence', 'chains', 'counters', 'ledger', 'batches', 'archive', 'webhooks'];

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
  /** The table's stream (the evidence table's feeds the derived data: functions/jobs/evidence-stream.ts). */
  StreamSpecification?: { StreamEnabled: boolean; StreamViewType: 'NEW_AND_OLD_IMAGES' };
}

export const TABLE_DEFINITIONS = tableSpec as unknown as Record<TableKey, TableDefinition>;

/** The defaults of DYNAMODB_ATTEMPT_TIMEOUT_MS and DYNAMODB_DEADLINE_MS (lib/config.ts). */
export const DYNAMO_ATTEMPT_TIMEOUT_MS = 1500;
export const DYNAMO_DEADLINE_MS = 3500;

