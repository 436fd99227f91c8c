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
 * exists: adding a function is one entry (docs/architecture.md "Add an endpoint").
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
/** Consumers of a table's DynamoDB stream (evidenceStream: the derived data, docs/decisions.md "Derived data"). */
const STREAM_FUNCTIONS = functionsJson.stream ?? [];

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
 * DynamoDB actions per access letter, each exactly what the code sends (test/infra/operations.test.ts
 * derives the commands from lib/ and functions/ and fails on an action no code needs):
 * - `r`: GetItem, Query, BatchGetItem (statistics), DescribeTable (health);
 * - `w`: PutItem, UpdateItem (every request-path write is a single-item conditional Put or Update);
 * - `b`: BatchWriteItem: the chain links' anchored marks the evidence stream derives
 *   (lib/store/chain-table.ts putAnchoredLinks) and the leaves of the batch anchor's entries
 *   (lib/store/batch-table.ts putLeaves): unconditional, idempotent puts, 25 to a request.
 *   IAM has this one action for a batch's puts and its deletes alike (no condition key tells them
 *   apart), so `b` lets a role delete by batch too: give it only to a function that batches;
 * - `d`: DeleteItem (registration clean-up, releasing a chain link, expired counters);
 * - `s`: Scan (the reconciler and the quota reset only).
 * No ConditionCheckItem, no transactions: dynalite has none and the code uses none.
 */
const DYNAMO_ACTIONS = {
  r: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:BatchGetItem', 'dynamodb:DescribeTable'],
  w: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
  b: ['dynamodb:BatchWriteItem'],
  d: ['dynamodb:DeleteItem'],
  s: ['dynamodb:Scan'],
};
/** Actions that make sense on an index ARN (`<table>/index/<name>`): reads only. */
const INDEX_ACTIONS = { r: ['dynamodb:Query'], s: ['dynamodb:Scan'] };
const WRITE_ACTIONS = new Set([...DYNAMO_ACTIONS.w, ...DYNAMO_ACTIONS.b, ...DYNAMO_ACTIONS.d]);
/**
 * What Lambda's event source mapping reads a table's stream with, on the stream's ARN (the
 * table's `StreamArn`), with the role of the function it invokes: osls adds these only to its
 * shared role, which this service does not have (every function names its own), so
 * serverless-resources.cjs grants them to each stream function's role. ListStreams is the fourth
 * action AWS's DynamoDB guide lists for a Lambda trigger, scoped to the stream as there; the
 * mapping itself reads the one stream it names.
 */
const STREAM_READ_ACTIONS = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'];
/**
 * The event source mapping of every stream function, besides its entry's own batchSize,
 * batchWindowSeconds and tumblingWindowSeconds (infra/serverless-functions.cjs, checked in the
 * packaged template by infra/template-rules.ts checkStreams). Nothing is ever skipped while the
 * stream keeps it: a failed batch is split in two (bisect) and retried without limit of attempts
 * or age, so a shard waits, in order, until its batch applies; only a change the stream itself
 * drops (24 h) is given up, and the mapping then sends the batch's description (shard, sequence
 * numbers) to the StreamFailureQueue. One batch per shard at a time (parallelization 1): the
 * statistics' checkpoints (lib/store/stats-counters.ts) count a shard's changes in order.
 * ReportBatchItemFailures: the tumbling window's answer `{ state, batchItemFailures }` (AWS's
 * TimeWindowEventResponse) is read as such; the handler never names an item (it throws, and the
 * batch is delivered again), so an empty list means the whole batch applied.
 */
const STREAM_MAPPING = {
  startingPosition: 'TRIM_HORIZON',
  parallelizationFactor: 1,
  bisectBatchOnFunctionError: true,
  maximumRetryAttempts: -1,
  maximumRecordAgeInSeconds: -1,
  functionResponseType: 'ReportBatchItemFailures',
};

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
  // The webhooks' signing secrets (docs/webhooks.md "The signing secret"): sealed by the create
  // endpoint (Encrypt only), opened by the delivery worker (Decrypt only).
  webhookSecrets: { custom: 'webhookSecretsKeyArn', envVar: 'WEBHOOK_SECRETS_KMS_KEY_ID', spec: 'SYMMETRIC_DEFAULT' },
};

/** What a function may do with a key: sign (and read the public key), only read the public key, or decrypt. */
const KMS_ACTIONS = {
  sign: ['kms:Sign', 'kms:GetPublicKey'],
  public: ['kms:GetPublicKey'],
  decrypt: ['kms:Decrypt'],
  encrypt: ['kms:Encrypt'],
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
  // A batch of 100 changes is at most 4 BatchWriteItem requests (with their retries of throttled
  // puts) and one conditional update per statistics item; a timeout is a failed batch, retried.
  stream: { memorySize: 512, timeout: 60 },
};

/**
 * The functions whose errors and throttles are alarmed one by one: `alarms: true` in
 * infra/functions.json (every function that makes, reads or checks evidence), and every scheduled
 * and stream function (the others are covered by the API's 5xx-rate alarm).
 */
function isEvidenceFunction(fn) {
  return fn.kind === 'scheduled' || fn.kind === 'stream' || fn.alarms === true;
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
  /** The SQS queue that receives the description of stream changes dropped before they applied. */
  streamFailureQueue: 'StreamFailureQueue',
  /** The SNS topic every alarm notifies. */
  alarmTopic: 'AlarmTopic',
  lambda: (fnName) => `${normalizedFunctionName(fnName)}LambdaFunction`,
};

/** `functions/v1/health.ts` → `functions/v1/health.handler` (serverless-esbuild finds the .ts). */
function handlerOf(fn) {
  if (!/^functions\/[a-z0-9/-]+\.ts$/.test(fn.file)) throw new Error(`${fn.name}: file must be functions/<path>.ts, got "${fn.file}"`);
  return `${fn.file.slice(0, -'.ts'.length)}.handler`;
}

/** Every function of the registry with its kind: `http` (with method/path/public), `scheduled`, `gateway` or `stream`. */
function allFunctions() {
  return [
    ...HTTP_FUNCTIONS.map((fn) => ({ ...fn, kind: 'http' })),
    ...SCHEDULED_FUNCTIONS.map((fn) => ({ ...fn, kind: 'scheduled' })),
    ...GATEWAY_FUNCTIONS.map((fn) => ({ ...fn, kind: 'gateway' })),
    ...STREAM_FUNCTIONS.map((fn) => ({ ...fn, kind: 'stream' })),
  ];
}

/** A public GET: anyone can call it, so it may write nothing. */
function isPublicRead(fn) {
  return fn.kind === 'http' && fn.public === true && fn.method === 'GET';
}

/** `rw` → sorted DynamoDB actions on the table ARN. Throws on an unknown access string. */
function tableActions(mode) {
  if (typeof mode !== 'string' || !/^(?=.)r?w?b?d?s?$/.test(mode)) {
    throw new Error(`access mode must be letters of r, w, b, d, s in that order; got "${mode}"`);
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
  // No reservedConcurrency: Lambda runs one invocation per shard at a time (parallelization 1), so
  // the shard count bounds it; a reservation below it would only hold shards back (iterator age).
  stream: ['name', 'file', 'table', 'batchSize', 'batchWindowSeconds', 'tumblingWindowSeconds', 'access', 'kms', 'environment', 'bundle'],
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
    } else if (fn.kind === 'stream') {
      problems.push(...streamProblems(fn));
    }
    for (const [table, mode] of Object.entries(isObject(fn.access) ? fn.access : {})) {
      if (!TABLES[table]) problems.push(`${fn.name}: access names unknown table "${table}"`);
      try {
        tableActions(mode);
      } catch (e) {
        problems.push(`${fn.name}.access.${table}: ${e.message}`);
        continue;
      }
      if (isPublicRead(fn) && /[wbd]/.test(mode)) {
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

/**
 * The problems of a stream entry's own fields, within what Lambda accepts for a DynamoDB stream
 * (CreateEventSourceMapping): its table streams old and new images (the derived data compares
 * them), a batch of 1 to 10,000 changes, a batching window of 0 to 300 s, and a tumbling window of
 * 1 to 900 s (0 would turn it off, and with it the shard in the event).
 */
function streamProblems(fn) {
  const problems = [];
  const table = TABLES[fn.table];
  if (!table) problems.push(`${fn.name}: table must name a table of infra/tables.json, got "${fn.table}"`);
  else if (table.StreamSpecification?.StreamViewType !== 'NEW_AND_OLD_IMAGES') {
    problems.push(`${fn.name}: table ${fn.table} has no StreamSpecification with StreamViewType NEW_AND_OLD_IMAGES in infra/tables.json`);
  }
  const whole = (v, lo, hi) => Number.isInteger(v) && v >= lo && v <= hi;
  if (!whole(fn.batchSize, 1, 10000)) problems.push(`${fn.name}: batchSize must be a whole number from 1 to 10000`);
  if (!whole(fn.batchWindowSeconds, 0, 300)) problems.push(`${fn.name}: batchWindowSeconds must be a whole number from 0 to 300`);
  if (!whole(fn.tumblingWindowSeconds, 1, 900)) problems.push(`${fn.name}: tumblingWindowSeconds must be a whole number from 1 to 900 (the shard comes with the window)`);
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
  // A stream function reads its table's stream (the event source mapping does, with its role) and
  // may send to the stream failure queue (the mapping's on-failure destination); nothing else does.
  const stream = fn.kind === 'stream' ? { [fn.table]: [...STREAM_READ_ACTIONS].sort() } : {};
  const queues = fn.kind === 'scheduled' ? [naming.failureQueue] : fn.kind === 'stream' ? [naming.streamFailureQueue] : [];
  return { dynamo, kms, stream, queues };
}

module.exports = {
  TABLES,
  HTTP_FUNCTIONS,
  SCHEDULED_FUNCTIONS,
  GATEWAY_FUNCTIONS,
  STREAM_FUNCTIONS,
  httpPaths,
  DYNAMO_ACTIONS,
  WRITE_ACTIONS,
  STREAM_READ_ACTIONS,
  STREAM_MAPPING,
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
