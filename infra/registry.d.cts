/** Types of infra/registry.cjs (the deployment model derived from functions.json and tables.json). */

/** Letters of r (read), w (put/update), d (delete), s (scan), in that order. */
export type AccessMode = string;
export type KmsKey = 'pqSigner' | 'tsa' | 'tsaPq' | 'ledgerWallet' | 'jwtSecret' | 'ed25519Signer' | 'pdfSigner';
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
  /** The edge caches its answers as the origin's Cache-Control says, with no credentials passed on (infra/edge-waf.cjs). */
  edgeCache?: boolean;
  anchoring?: boolean;
  /** Its errors and throttles are alarmed one by one (scheduled functions always are). */
  alarms?: boolean;
  /** HTTP only: true documents the file's `app`, false leaves it out, an object names the module function that returns the app to document. */
  openapi?: boolean | { module: string; export: string; note?: string };
  schedule?: string;
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
}

export const TABLES: Record<string, TableDefinition>;
export const DYNAMO_ACTIONS: Record<'r' | 'w' | 'd' | 's', string[]>;
export const WRITE_ACTIONS: Set<string>;
export const KMS_KEYS: Record<KmsKey, { custom: string; envVar: string; spec: string }>;
export const KMS_ACTIONS: Record<KmsUse, string[]>;
export const ANCHORING_KMS: Partial<Record<KmsKey, KmsUse>>;
export const SIZING: Record<'http' | 'anchoring' | 'scheduled', { memorySize: number; timeout: number }>;
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
/** What the OpenAPI document is built from, in registry order. */
export function openApiSources(): OpenApiSource[];
export function validateRegistry(functions?: RegistryFunction[]): string[];
export function assertValidRegistry(): void;
export function expectedGrants(fn: RegistryFunction): ExpectedGrants;
