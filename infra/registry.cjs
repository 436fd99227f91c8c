'use strict';
/**
 * The deployment model of the service, derived from the two registries and nothing else:
 *   infra/functions.json  every function, one entry each: its file, route, table access, KMS
 *                         needs, OpenAPI source, alarms, environment and bundle budget
 *   infra/tables.json     every DynamoDB table
 * serverless-functions.cjs and serverless-resources.cjs turn it into serverless.yml sections,
 * infra/check-template.ts and test/infra/template.test.ts check the result against it; the
 * OpenAPI document (functions/openapi-sources.ts, and the openapi-sources esbuild plugin in a
 * bundle) and test/infra/lambda-bundle.test.ts read the same entries. No other list of functions
 * exists: adding a function is one entry (README "Add an endpoint").
 *
 * CommonJS on purpose: osls loads `${file(...)}` sources with require(), which cannot load
 * ESM; a `.cjs` file is CommonJS even inside a `"type": "module"` package.
 */

const { existsSync } = require('node:fs');
const path = require('node:path');
const functionsJson = require('./functions.json');
const tablesJson = require('./tables.json');

/** Logical table key (accounts, apiKeys, …) → definition; `$comment` keys are documentation. */
const TABLES = Object.fromEntries(Object.entries(tablesJson).filter(([key]) => !key.startsWith('$')));

const HTTP_FUNCTIONS = functionsJson.http;
const SCHEDULED_FUNCTIONS = functionsJson.scheduled;
/** Functions on the gateway's own routes: methodNotAllowed, on `ANY <path>` for every distinct HTTP path. */
const GATEWAY_FUNCTIONS = functionsJson.gateway ?? [];

/** Every distinct path of the HTTP functions (each gets an `ANY` route to methodNotAllowed). */
function httpPaths() {
  return [...new Set(HTTP_FUNCTIONS.map((fn) => fn.path))].sort();
}

/**
 * A public GET function writes no table (decisions.md "Limits": a public read writes nothing to
 * DynamoDB). Its per-IP limit is the WAF rate-based rule at the edge (infra/edge-waf.cjs), or an
 * in-memory window locally (lib/accounts/ip-rate-window.ts); register and login are POSTs and keep
 * their DynamoDB counter.
 */

/**
 * DynamoDB actions per access letter, each exactly what the code sends (test/infra/template.test.ts
 * derives the commands from lib/ and fails on an action no code needs):
 * - `r`: GetItem, Query, BatchGetItem (statistics), DescribeTable (health);
 * - `w`: PutItem, UpdateItem (every write is a single-item conditional Put or Update);
 * - `d`: DeleteItem (registration clean-up, releasing a chain link, expired counters);
 * - `s`: Scan (the reconciler and the quota reset only).
 * No BatchWriteItem, no ConditionCheckItem, no transactions: dynalite has none and the code
 * uses none.
 */
const DYNAMO_ACTIONS = {
  r: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:BatchGetItem', 'dynamodb:DescribeTable'],
  w: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
  d: ['dynamodb:DeleteItem'],
  s: ['dynamodb:Scan'],
};
/** Actions that make sense on an index ARN (`<table>/index/<name>`): reads only. */
const INDEX_ACTIONS = { r: ['dynamodb:Query'], s: ['dynamodb:Scan'] };
const WRITE_ACTIONS = new Set([...DYNAMO_ACTIONS.w, ...DYNAMO_ACTIONS.d]);

/**
 * KMS keys the service uses. Each is a serverless.yml `custom.kms.<key>` value (a key ARN;
 * IAM cannot scope Sign to an alias) and the environment variable the function reads.
 */
const KMS_KEYS = {
  pqSigner: { custom: 'pqSignerKeyArn', envVar: 'PQ_SIGNER_KMS_KEY_ID', spec: 'ML_DSA_65' },
  tsa: { custom: 'tsaKeyArn', envVar: 'TSA_KMS_KEY_ID', spec: 'ECC_NIST_P256' },
  // The post-quantum TSA (RFC 9882 tokens; docs/decisions.md "Post-quantum time"): Sign only
  // (ML_DSA_SHAKE_256, RAW), its certificate chain ships as files (TSA_PQ_CERT_FILE, TSA_PQ_ROOT_FILE).
  tsaPq: { custom: 'tsaPqKeyArn', envVar: 'TSA_PQ_KMS_KEY_ID', spec: 'ML_DSA_65' },
  ledgerWallet: { custom: 'ledgerWalletKeyArn', envVar: 'LEDGER_KMS_KEY_ID', spec: 'ECC_SECG_P256K1' },
  jwtSecret: { custom: 'jwtSecretKeyArn', envVar: 'JWT_SECRET_KMS_CIPHERTEXT', spec: 'SYMMETRIC_DEFAULT' },
  ed25519Signer: { custom: 'ed25519SignerKeyArn', envVar: 'ED25519_SIGNER_KMS_KEY_ID', spec: 'ECC_NIST_EDWARDS25519' },
  pdfSigner: { custom: 'pdfSignerKeyArn', envVar: 'PDF_SIGNER_KMS_KEY_ID', spec: 'ECC_NIST_P256' },
};

/** What a function may do with a key: sign (and read the public key), only read the public key, or decrypt. */
const KMS_ACTIONS = {
  sign: ['kms:Sign', 'kms:GetPublicKey'],
  public: ['kms:GetPublicKey'],
  decrypt: ['kms:Decrypt'],
};

/**
 * Every key an anchoring function signs with (`anchoring: true` in infra/functions.json): the
 * ML-DSA signature, the RFC 3161 timestamp, its post-quantum twin (every anchor carries both
 * tokens, docs/decisions.md "Post-quantum time") and the ledger transaction.
 */
const ANCHORING_KMS = { pqSigner: 'sign', tsa: 'sign', tsaPq: 'sign', ledgerWallet: 'sign' };

/*
 * The `kms` of each function in infra/functions.json, and why:
 * - anchoring functions sign with all four keys (ANCHORING_KMS; checked below);
 * - timestamp signs RFC 3161 tokens with the TSA key;
 * - the post-quantum TSA key (tsaPq) signs only where an ML-DSA-65 token is issued: the anchoring
 *   functions, POST /api/v2/tsa and POST /api/v2/evidence/timestamp (a request with the
 *   post-quantum policy). The v1 timestamps, the PDF's signature timestamp and the archive job's
 *   archive timestamps are the classic TSA's, and no function reads its public key from KMS (its
 *   chain ships as files), so it has no `public` grant anywhere;
 * - the reconciler finishes interrupted anchors (a new transaction when one can never be mined,
 *   with the proofs already made) and replaces stuck transactions, so it signs with the wallet;
 * - account endpoints issue (register, login) or verify (the rest) HS256 JWTs whose secret is
 *   KMS-encrypted configuration (jwtSecret: decrypt); admin-set-tier authenticates with
 *   ADMIN_TOKEN instead;
 * - public reads that show a key, an address or "keys loaded" only read public keys;
 * - the Starter endpoints: the stand-alone timestamps sign with the TSA key, /evidence/sign with
 *   the Ed25519 key; the JWK set and the trust-anchor document only read public keys (the ML-DSA
 *   public key and the TSA chain ship as files, so those need no KMS at all);
 * - the PDF certificate: its PAdES signature (PDF key) and the signature's timestamp (TSA key).
 */

/** Lambda settings by kind. API Gateway HTTP APIs stop waiting at 30 s, so HTTP functions stay below. */
const SIZING = {
  http: { memorySize: 512, timeout: 10 },
  anchoring: { memorySize: 1024, timeout: 29 },
  scheduled: { memorySize: 512, timeout: 120 },
};

/**
 * The functions whose errors and throttles are alarmed one by one: `alarms: true` in
 * infra/functions.json (every function that makes, reads or checks evidence), and every scheduled
 * function (the others are covered by the API's 5xx-rate alarm).
 */
function isEvidenceFunction(fn) {
  return fn.kind === 'scheduled' || fn.alarms === true;
}

/** osls naming: `v1Health` → `V1Health` (see osls lib/plugins/aws/lib/naming.js getNormalizedFunctionName). */
function normalizedFunctionName(name) {
  const n = name.replace(/-/g, 'Dash').replace(/_/g, 'Underscore');
  return n.charAt(0).toUpperCase() + n.slice(1);
}

const naming = {
  table: (key) => `${key.charAt(0).toUpperCase()}${key.slice(1)}Table`,
  role: (fnName) => `${normalizedFunctionName(fnName)}IamRole`,
  /** Created by osls for every function (merge-iam-templates.js). */
  logGroup: (fnName) => `${normalizedFunctionName(fnName)}LogGroup`,
  /** The SQS queue that receives scheduled runs that failed after their retries. */
  failureQueue: 'ScheduledFailureQueue',
  /** The SNS topic every alarm notifies. */
  alarmTopic: 'AlarmTopic',
  lambda: (fnName) => `${normalizedFunctionName(fnName)}LambdaFunction`,
};

/** `functions/v1/health.ts` → `functions/v1/health.handler` (serverless-esbuild finds the .ts). */
function handlerOf(fn) {
  if (!/^functions\/[a-z0-9/-]+\.ts$/.test(fn.file)) throw new Error(`${fn.name}: file must be functions/<path>.ts, got "${fn.file}"`);
  return `${fn.file.slice(0, -'.ts'.length)}.handler`;
}

/** Every function of the registry with its kind: `http` (with method/path/public) or `scheduled`. */
function allFunctions() {
  return [
    ...HTTP_FUNCTIONS.map((fn) => ({ ...fn, kind: 'http' })),
    ...SCHEDULED_FUNCTIONS.map((fn) => ({ ...fn, kind: 'scheduled' })),
    ...GATEWAY_FUNCTIONS.map((fn) => ({ ...fn, kind: 'gateway' })),
  ];
}

/** A public GET: anyone can call it, so it may write nothing. */
function isPublicRead(fn) {
  return fn.kind === 'http' && fn.public === true && fn.method === 'GET';
}

/** `rw` → sorted DynamoDB actions on the table ARN. Throws on an unknown access string. */
function tableActions(mode) {
  if (typeof mode !== 'string' || !/^(?=.)r?w?d?s?$/.test(mode)) {
    throw new Error(`access mode must be letters of r, w, d, s in that order; got "${mode}"`);
  }
  return [...new Set([...mode].flatMap((letter) => DYNAMO_ACTIONS[letter]))].sort();
}

/** Actions on the table's index ARNs for an access mode (reads only; none for write-only). */
function indexActions(mode) {
  return [...new Set([...mode].flatMap((letter) => INDEX_ACTIONS[letter] ?? []))].sort();
}

/** The KMS needs of one function: key → sign|public|decrypt (its `kms` in infra/functions.json). */
function kmsNeeds(fn) {
  return fn.kms ?? {};
}

/**
 * What the OpenAPI document is built from, in registry order: for every HTTP function whose
 * `openapi` is not false, the module to import and its export: `app` of the function's own file
 * (`openapi: true`), or a function of another module that returns the app to document
 * (`openapi: { module, export }`: the route alone). functions/openapi-sources.ts imports these
 * by path; in a Lambda bundle the openapi-sources esbuild plugin imports them statically.
 */
function openApiSources() {
  return HTTP_FUNCTIONS.filter((fn) => fn.openapi !== false).map((fn) =>
    fn.openapi === true
      ? { name: fn.name, module: fn.file, export: 'app', call: false }
      : { name: fn.name, module: fn.openapi.module, export: fn.openapi.export, call: true },
  );
}

const ROOT = path.resolve(__dirname, '..');
const SOURCE_FILE = /^(functions|lib)\/[a-z0-9/-]+\.ts$/;
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
/** The fields an entry may have, by kind (a misspelt field is an error, not a silent default). */
const FIELDS = {
  http: ['name', 'operationId', 'file', 'method', 'path', 'public', 'edgeCache', 'anchoring', 'alarms', 'openapi', 'access', 'kms', 'environment', 'reservedConcurrency', 'bundle'],
  scheduled: ['name', 'file', 'schedule', 'access', 'kms', 'environment', 'reservedConcurrency', 'bundle'],
  gateway: ['name', 'file', 'alarms', 'access', 'kms', 'environment', 'reservedConcurrency', 'bundle'],
};
const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The problems of one entry's own fields besides route and access: alarms, OpenAPI, KMS, environment, concurrency, bundle. */
function entryProblems(fn) {
  const problems = [];
  for (const key of Object.keys(fn)) if (key !== 'kind' && !FIELDS[fn.kind].includes(key)) problems.push(`${fn.name}: unknown field "${key}" (${fn.kind} entries have ${FIELDS[fn.kind].join(', ')})`);
  if (typeof fn.file === 'string' && !existsSync(path.join(ROOT, fn.file))) problems.push(`${fn.name}: file ${fn.file} does not exist`);
  if (fn.alarms !== undefined && typeof fn.alarms !== 'boolean') problems.push(`${fn.name}: alarms must be true or false`);
  if (fn.anchoring !== undefined && typeof fn.anchoring !== 'boolean') problems.push(`${fn.name}: anchoring must be true or false`);
  // The edge caches these paths with no credentials passed on (infra/edge-waf.cjs): public GETs only.
  if (fn.edgeCache !== undefined && (fn.edgeCache !== true || fn.method !== 'GET' || fn.public !== true)) problems.push(`${fn.name}: edgeCache: true is for public GET functions only`);
  if (!isObject(fn.access)) problems.push(`${fn.name}: access must be an object (table → r|w|d|s letters; {} for none)`);
  if (fn.kind === 'http') {
    const o = fn.openapi;
    if (isObject(o)) {
      if (!SOURCE_FILE.test(o.module ?? '') || !existsSync(path.join(ROOT, o.module))) problems.push(`${fn.name}: openapi.module must be an existing functions/ or lib/ .ts file, got "${o.module}"`);
      if (!IDENTIFIER.test(o.export ?? '')) problems.push(`${fn.name}: openapi.export must name an export of ${o.module}, got "${o.export}"`);
      for (const key of Object.keys(o)) if (!['module', 'export', 'note'].includes(key)) problems.push(`${fn.name}: unknown field openapi.${key}`);
    } else if (typeof o !== 'boolean') {
      problems.push(`${fn.name}: openapi must be true (its app), false (not documented) or { module, export }`);
    }
  }
  if (!isObject(fn.kms)) {
    problems.push(`${fn.name}: kms must be an object (key → sign|public|decrypt; {} for none)`);
  } else if (fn.anchoring) {
    for (const [key, use] of Object.entries(ANCHORING_KMS)) if (fn.kms[key] !== use) problems.push(`${fn.name}: an anchoring function needs kms.${key}: "${use}"`);
  }
  if (fn.environment !== undefined) {
    if (!isObject(fn.environment)) problems.push(`${fn.name}: environment must be an object of strings`);
    else for (const [name, value] of Object.entries(fn.environment)) {
      if (!/^[A-Z][A-Z0-9_]*$/.test(name) || typeof value !== 'string') problems.push(`${fn.name}: environment.${name} must be an UPPER_CASE name with a string value`);
    }
  }
  if (fn.reservedConcurrency !== undefined && !(Number.isInteger(fn.reservedConcurrency) && fn.reservedConcurrency >= 0)) problems.push(`${fn.name}: reservedConcurrency must be a whole number`);
  const b = fn.bundle;
  if (!isObject(b)) {
    problems.push(`${fn.name}: bundle must be { maxKiB, heavy } (test/infra/lambda-bundle.test.ts measures it)`);
  } else {
    if (!(Number.isInteger(b.maxKiB) && b.maxKiB > 0)) problems.push(`${fn.name}: bundle.maxKiB must be a positive whole number of KiB`);
    if (!Array.isArray(b.heavy) || b.heavy.some((h) => typeof h !== 'string') || new Set(b.heavy).size !== b.heavy.length) problems.push(`${fn.name}: bundle.heavy must list package names, each once`);
    if (b.note !== undefined && typeof b.note !== 'string') problems.push(`${fn.name}: bundle.note must be a string`);
    for (const key of Object.keys(b)) if (!['maxKiB', 'heavy', 'note'].includes(key)) problems.push(`${fn.name}: unknown field bundle.${key}`);
  }
  return problems;
}

/**
 * Checks the registries once; every generator and check calls this first. Returns the list of
 * problems. `functions` (default: every entry of infra/functions.json, with its kind) lets the
 * tests check entries of their own.
 */
function validateRegistry(functions = allFunctions()) {
  const problems = [];
  const names = new Set();
  const routes = new Set();
  const operationIds = new Set();
  for (const fn of functions) {
    if (!/^[a-zA-Z][a-zA-Z0-9]*$/.test(fn.name)) problems.push(`function name "${fn.name}" must be alphanumeric`);
    problems.push(...entryProblems(fn));
    if (names.has(fn.name)) problems.push(`function name "${fn.name}" is used twice`);
    names.add(fn.name);
    try {
      handlerOf(fn);
    } catch (e) {
      problems.push(e.message);
    }
    if (fn.kind === 'http') {
      if (!['GET', 'POST', 'PUT', 'DELETE', 'PATCH'].includes(fn.method)) problems.push(`${fn.name}: unknown method ${fn.method}`);
      if (!/^\/[A-Za-z0-9_./{}-]*$/.test(fn.path)) problems.push(`${fn.name}: bad path ${fn.path}`);
      if (!/^[a-z][A-Za-z0-9]*$/.test(fn.operationId ?? '')) problems.push(`${fn.name}: operationId must be camelCase, got "${fn.operationId}"`);
      else if (operationIds.has(fn.operationId)) problems.push(`${fn.name}: operationId ${fn.operationId} is used twice`);
      operationIds.add(fn.operationId);
      const route = `${fn.method} ${fn.path}`;
      if (routes.has(route)) problems.push(`${fn.name}: route ${route} is used twice`);
      routes.add(route);
    } else if (fn.kind === 'scheduled' && !/^(rate|cron)\(.+\)$/.test(fn.schedule ?? '')) {
      problems.push(`${fn.name}: schedule must be rate(...) or cron(...), got "${fn.schedule}"`);
    }
    for (const [table, mode] of Object.entries(isObject(fn.access) ? fn.access : {})) {
      if (!TABLES[table]) problems.push(`${fn.name}: access names unknown table "${table}"`);
      try {
        tableActions(mode);
      } catch (e) {
        problems.push(`${fn.name}.access.${table}: ${e.message}`);
        continue;
      }
      if (isPublicRead(fn) && /[wd]/.test(mode)) {
        problems.push(`${fn.name}: a public GET function may write no table, not ${table}`);
      }
    }
    for (const [key, use] of Object.entries(isObject(fn.kms) ? fn.kms : {})) {
      if (!KMS_KEYS[key]) problems.push(`${fn.name}: unknown KMS key "${key}"`);
      if (!KMS_ACTIONS[use]) problems.push(`${fn.name}: unknown KMS use "${use}" for ${key}`);
    }
  }
  for (const [key, def] of Object.entries(TABLES)) {
    if (!/^TABLE_[A-Z_]+$/.test(def.envVar ?? '')) problems.push(`table ${key}: envVar must be TABLE_<NAME>`);
  }
  return problems;
}

function assertValidRegistry() {
  const problems = validateRegistry();
  if (problems.length > 0) throw new Error(`infra/functions.json or infra/tables.json is invalid:\n  - ${problems.join('\n  - ')}`);
}

/**
 * The expected IAM grants of a function as plain data, for the generators and both checks:
 * table key → sorted actions on the table, on its indexes; KMS key → sorted actions.
 */
function expectedGrants(fn) {
  const dynamo = {};
  for (const [table, mode] of Object.entries(fn.access ?? {})) {
    const indexes = (TABLES[table].GlobalSecondaryIndexes ?? []).map((i) => i.IndexName);
    dynamo[table] = { table: tableActions(mode), index: indexes.length ? indexActions(mode) : [], indexes };
  }
  const kms = {};
  for (const [key, use] of Object.entries(kmsNeeds(fn))) kms[key] = [...KMS_ACTIONS[use]].sort();
  return { dynamo, kms };
}

module.exports = {
  TABLES,
  HTTP_FUNCTIONS,
  SCHEDULED_FUNCTIONS,
  GATEWAY_FUNCTIONS,
  httpPaths,
  DYNAMO_ACTIONS,
  WRITE_ACTIONS,
  KMS_KEYS,
  KMS_ACTIONS,
  ANCHORING_KMS,
  SIZING,
  isEvidenceFunction,
  naming,
  handlerOf,
  allFunctions,
  isPublicRead,
  tableActions,
  indexActions,
  kmsNeeds,
  openApiSources,
  validateRegistry,
  assertValidRegistry,
  expectedGrants,
};
