/** Types of infra/registry.cjs (the deployment model derived from functions.json and tables.json). */

/** Letters of r (read), w (put/update), d (delete), s (scan), in that order. */
export type AccessMode = string;
export type KmsKey = 'pqSigner' | 'tsa' | 'ledgerWallet' | 'jwtSecret';
export type KmsUse = 'sign' | 'public' | 'decrypt';

export interface TableDefinition {
  envVar: string;
  description: string;
  AttributeDefinitions: { AttributeName: string; AttributeType: string }[];
  KeySchema: { AttributeName: string; KeyType: string }[];
  GlobalSecondaryIndexes?: { IndexName: string; KeySchema: { AttributeName: string; KeyType: string }[]; Projection: Record<string, unknown> }[];
  TimeToLiveAttribute?: string;
}

export interface RegistryFunction {
  name: string;
  file: string;
  kind: 'http' | 'scheduled' | 'gateway';
  method?: string;
  /** The OpenAPI operationId of an HTTP function (stable, camelCase). */
  operationId?: string;
  path?: string;
  public?: boolean;
  anchoring?: boolean;
  schedule?: string;
  access: Record<string, AccessMode>;
  kms?: Partial<Record<KmsKey, KmsUse>>;
}

export interface ExpectedGrants {
  /** table key → sorted actions on the table ARN, sorted actions on its index ARNs, the index names. */
  dynamo: Record<string, { table: string[]; index: string[]; indexes: string[] }>;
  /** KMS key → sorted actions on that key. */
  kms: Partial<Record<KmsKey, string[]>>;
}

export const TABLES: Record<string, TableDefinition>;
export const DYNAMO_ACTIONS: Record<'r' | 'w' | 'd' | 's', string[]>;
export const WRITE_ACTIONS: Set<string>;
export const KMS_KEYS: Record<KmsKey, { custom: string; envVar: string; spec: string }>;
export const KMS_ACTIONS: Record<KmsUse, string[]>;
export const SIZING: Record<'http' | 'anchoring' | 'scheduled', { memorySize: number; timeout: number }>;
export const FUNCTION_ENVIRONMENT: Record<string, Record<string, string>>;
export const RESERVED_CONCURRENCY: Record<string, number>;
export function isEvidenceFunction(fn: RegistryFunction): boolean;
export const naming: {
  table(key: string): string;
  role(fnName: string): string;
  logGroup(fnName: string): string;
  lambda(fnName: string): string;
  failureQueue: string;
  alarmTopic: string;
};
export function handlerOf(fn: { name: string; file: string }): string;
export function allFunctions(): RegistryFunction[];
/** Every distinct path of the HTTP functions. */
export function httpPaths(): string[];
export function isPublicRead(fn: RegistryFunction): boolean;
export function tableActions(mode: string): string[];
export function indexActions(mode: string): string[];
export function kmsNeeds(fn: RegistryFunction): Partial<Record<KmsKey, KmsUse>>;
export function validateRegistry(): string[];
export function assertValidRegistry(): void;
export function expectedGrants(fn: RegistryFunction): ExpectedGrants;
