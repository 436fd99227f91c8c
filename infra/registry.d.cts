/** Types of infra/registry.cjs (the deployment model derived from functions.json and tables.json). */

/** Letters of r (read), w (put/update), b (batch write), d (delete), s (scan), in that order. */
export type AccessMode = string;
export type KmsKey = 'pqSigner' | 'tsa' | 'tsaPq' | 'ledgerWallet' | 'jwtSecret' | 'ed25519Signer' | 'pdfSigner' | 'webhookSecrets';
export type KmsUse = 'sign' | 'public' | 'decrypt' | 'encrypt';

export interface TableDefinition {
  envVar: string;
  description: string;
  AttributeDefinitions: { AttributeName: string; AttributeType: string }[];
  KeySchema: { AttributeName: string; KeyType: string }[];
  GlobalSecondaryIndexes?: { IndexName: string; KeySchema: { AttributeName: string; KeyType: string }[]; Projection: Record<string, unknown> }[];
  TimeToLiveAttribute?: string;
  /** The table's DynamoDB stream (the evidence table's feeds the stream function evidenceStream). */
  StreamSpecification?: { StreamViewType: string };
}

export interface RegistryFunction {
  name: string;
  file: string;
  kind: 'http' | 'scheduled' | 'gateway' | 'stream';
  method?: string;
  /** The OpenAPI operationId of an HTTP function (stable, camelCase). */
  operationId?: string;
  path?: string;
  public?: boolean;
  /** The edge caches its answers as the origin's Cache-Control says, with no credentials passed on (infra/edge-waf.cjs). */
  edgeCache?: boolean;
  anchoring?: boolean;
  /** Its errors and throttles are alarmed one by one (scheduled functions always are). */
  alarms?: boolean;
  /** HTTP only: true documents the file's `app`, false leaves it out, an object names the module function that returns the app to document. */
  openapi?: boolean | { module: string; export: string; note?: string };
  schedule?: string;
  /** Stream only: the table (key of infra/tables.json) whose stream feeds it. */
  table?: string;
  /** Stream only: changes per invocation at most. */
  batchSize?: number;
  /** Stream only: how long Lambda gathers changes before it invokes (MaximumBatchingWindowInSeconds). */
  batchWindowSeconds?: number;
  /** Stream only: the tumbling window (the event then carries the shard). */
  tumblingWindowSeconds?: number;
  access: Record<string, AccessMode>;
  kms: Partial<Record<KmsKey, KmsUse>>;
  /** Environment variables only this function gets. */
  environment?: Record<string, string>;
  reservedConcurrency?: number;
  /** What its Lambda bundle may weigh and exactly which heavy packages it carries (test/infra/lambda-bundle.test.ts). */
  bundle: BundleBudget;
}

export interface BundleBudget {
  maxKiB: number;
  heavy: string[];
  note?: string;
}

/** One documented function of the OpenAPI document: import `export` of `module`; `call`: it is a function returning the app. */
export interface OpenApiSource {
  name: string;
  module: string;
  export: string;
  call: boolean;
}

export interface ExpectedGrants {
  /** table key → sorted actions on the table ARN, sorted actions on its index ARNs, the index names. */
  dynamo: Record<string, { table: string[]; index: string[]; indexes: string[] }>;
  /** KMS key → sorted actions on that key. */
  kms: Partial<Record<KmsKey, string[]>>;
  /** Stream functions: table key → sorted actions on that table's stream ARN (StreamArn). */
  stream: Record<string, string[]>;
  /** The SQS queues (logical ids) it may send to: the failure queue of its kind, if any. */
  queues: string[];
}

export const TABLES: Record<string, TableDefinition>;
export const DYNAMO_ACTIONS: Record<'r' | 'w' | 'b' | 'd' | 's', string[]>;
export const WRITE_ACTIONS: Set<string>;
/** What the event source mapping reads a table's stream with (on its StreamArn). */
export const STREAM_READ_ACTIONS: string[];
/** The event source mapping settings every stream function shares (osls `stream` event fields). */
export const STREAM_MAPPING: {
  startingPosition: 'TRIM_HORIZON';
  parallelizationFactor: number;
  bisectBatchOnFunctionError: boolean;
  maximumRetryAttempts: number;
  maximumRecordAgeInSeconds: number;
  functionResponseType: 'ReportBatchItemFailures';
};
export const KMS_KEYS: Record<KmsKey, { custom: string; envVar: string; spec: string }>;
export const KMS_ACTIONS: Record<KmsUse, string[]>;
export const ANCHORING_KMS: Partial<Record<KmsKey, KmsUse>>;
export const SIZING: Record<'http' | 'anchoring' | 'scheduled' | 'stream', { memorySize: number; timeout: number }>;
export function isEvidenceFunction(fn: RegistryFunction): boolean;
export const naming: {
  table(key: string): string;
  role(fnName: string): string;
  logGroup(fnName: string): string;
  lambda(fnName: string): string;
  failureQueue: string;
  streamFailureQueue: string;
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
/** What the OpenAPI document is built from, in registry order. */
export function openApiSources(): OpenApiSource[];
export function validateRegistry(functions?: RegistryFunction[]): string[];
export function assertValidRegistry(): void;
export function expectedGrants(fn: RegistryFunction): ExpectedGrants;
