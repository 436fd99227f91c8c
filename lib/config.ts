import path from 'node:path';
import type { TableKey, TableNames } from './store/table-definitions.js';
import { DYNAMO_ATTEMPT_TIMEOUT_MS, DYNAMO_DEADLINE_MS, TABLE_DEFINITIONS, TABLE_KEYS } from './store/table-definitions.js';
import type { JwtSecretSource } from './accounts/jwt-secret.js';
import { MAX_KEY_CACHE_MS } from './accounts/key-auth.js';
import type { TierTable } from './accounts/tiers.js';
import { DEFAULT_HEADERS_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_TSA_POLICY_OID, DEFAULT_TSA_PQ_POLICY_OID, NETWORK_PRESETS, type NetworkName } from './config/presets.js';
import { type Env, parseTierLimits, Reader } from './config/reader.js';
import { DEFAULT_RETRY_SCHEDULE_SECONDS } from './webhooks/schedule.js';

/**
 * Every setting of the service, read from the environment once and validated as a whole:
 * a bad configuration fails at start with one line per bad value, never later in a request.
 * Adapters receive the parts they need; nothing else reads process.env.
 *
 * The module everyone imports: the presets (lib/config/presets.ts) are re-exported from here, and
 * the reading of single variables lives in lib/config/reader.ts.
 *
 * Hand-written, not one schema (issue 35 asked for one), because every Lambda bundle carries this
 * module and the bundles have byte budgets (infra/functions.json, test/infra/lambda-bundle.test.ts):
 * - zod: measured on 0a526b1 with a one-variable schema in loadConfig, it adds about 188 KiB to
 *   each of the four bundles that carry no zod (quotaReset, reconcile, archive, evidenceStream:
 *   evidenceStream 48.3 → 236.7 KiB), zod/mini about 14 KiB (the four then exceed their budgets by
 *   2.8 to 12.7 KiB), and methodNotAllowed, which has zod already, grows past its budget either way.
 * - A table of our own (one object naming each variable with its type, default and bound, read by
 *   one function): measured on ten of these variables, minified, 955 bytes against 597 as calls of
 *   the reader, about 36 bytes more per variable (its name is written twice, as the table's key and
 *   where the value is used), so some 2.5 KiB more in every bundle for the ~70 variables, and
 *   methodNotAllowed was 33 bytes under its budget when this was measured.
 * So the variables are read by the typed Reader, one call each, with one problem per bad value.
 */
export { DEFAULT_HEADERS_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_TSA_POLICY_OID, DEFAULT_TSA_PQ_POLICY_OID, NETWORK_PRESETS, type NetworkName } from './config/presets.js';

export interface Config {
  /** `local`: the embedded stack (dynalite, Hardhat, embedded TSA, keys in DATA_DIR). `aws`: Lambda. */
  deployment: 'local' | 'aws';
  port: number;
  host: string;
  dataDir: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  publicBaseUrl: string;
  adminToken: string | undefined;
  tiers: TierTable;
  publicRatePerMinute: number;
  /**
   * Where the per-IP limit of the public reads (PUBLIC_RATE_PER_MINUTE) is enforced
   * (PUBLIC_RATE_LIMIT): `edge` in AWS (the WAF rate-based rule of infra/serverless-resources.cjs;
   * the functions count nothing), `process` locally (lib/http/ip-rate-window.ts, in memory).
   * Either way a public read writes nothing to DynamoDB. Register and login keep their DynamoDB
   * counter (`ipauth#`) in both modes: it guards accounts, not reads.
   */
  publicRateLimit: 'edge' | 'process';
  /**
   * EDGE_ORIGIN_SECRET: the secret header (X-Edge-Origin) the edge adds to every request it passes
   * on (infra/edge-waf.cjs). Set, a request without it is refused (403 edge_required) and the
   * client address is the viewer's (CloudFront-Viewer-Address). Required with PUBLIC_RATE_LIMIT=edge.
   */
  edgeOriginSecret: string | undefined;
  /** Requests per minute of one account to the JWT account endpoints (keys, usage, info). */
  accountRatePerMinute: number;
  /**
   * API_KEY_CACHE_MS: how long an instance answers requests from an API key it read before, without
   * reading it again (lib/accounts/key-auth.ts): the bound on how late another instance sees a
   * deactivation or a tier change. 0 to 5000; default 5000.
   */
  apiKeyCacheMs: number;
  /**
   * ANCHOR_CONCURRENCY: anchors one process works on at once (lib/http/bulkhead.ts); the others wait
   * their turn up to ANCHOR_WAIT_MS, then 503 server_busy; an anchor waiting for its batch gives its
   * slot back meanwhile (lib/work-slots.ts). 0: no bound. A Lambda instance serves one
   * request at a time, so it matters where one process serves many: `npm start`.
   */
  anchorConcurrency: number;
  anchorWaitMs: number;
  /** Failed login or admin-token attempts one client address may make per 15-minute window before 429. */
  authFailuresPerWindow: number;
  /** `npm start`: how often the reconciler passes over unfinished anchors (the Lambda runs every minute). */
  reconcileIntervalMs: number;
  /**
   * `npm start`'s HTTP server (lib/local/server.ts; API Gateway has its own limits): a request whose
   * headers are not all in after HEADERS_TIMEOUT_MS, or that is not all in (body included) after
   * REQUEST_TIMEOUT_MS, is answered 408 and its connection closed (a slow client holds no
   * connection for long).
   */
  localHttp: { headersTimeoutMs: number; requestTimeoutMs: number };
  /**
   * RECONCILE_SAFETY_SCAN_ITEMS: while a safety sweep is due (at start and after the database
   * restarts), how many items of the evidence and counters tables each reconciler pass reads
   * itself (lib/store/segment-scan.ts): 1000 locally (dynalite can lose an index entry to a
   * SIGKILL), 0 in AWS (DynamoDB's indexes lose nothing; docs/decisions.md "Cost").
   */
  reconcileSafetyScanItems: number;
  /**
   * PROOF_THREADS: worker threads that make the local keys' proofs (lib/local/proof-threads.ts).
   * 0 (on the event loop) unless set; `npm start` sets 1 on a machine with more than one core
   * (lib/local/start.ts). Always 0 in AWS, where the keys are in KMS.
   */
  proofThreads: number;
  /** RFC 4998 evidence records (lib/evidence/archive.ts). */
  archive: {
    /** ARCHIVE_GROUP_SECONDS: a group is made once its oldest hash has waited this long. */
    groupAfterMs: number;
    /** ARCHIVE_MAX_GROUP: most hashes in one group. */
    maxGroupSize: number;
    /** ARCHIVE_RENEW_BEFORE_DAYS: a chain is renewed this long before its last TSA certificate's notAfter. */
    renewBeforeMs: number;
    /** `npm start` only (ARCHIVE_INTERVAL_MS): how often the archive job runs (in AWS a scheduled Lambda, every minute). */
    intervalMs: number;
    /** ARCHIVE_HASH_ALGORITHM: the hash algorithm records are renewed to (SHA-256: none renewed). */
    hashAlgorithm: 'SHA-256' | 'SHA-384' | 'SHA-512';
  };
  aws: {
    region: string;
    dynamoEndpoint: string | undefined;
    dynamoPort: number;
    /** DynamoDB deadlines (lib/store/dynamo.ts): per attempt, and per call with the SDK's retries. */
    dynamoAttemptTimeoutMs: number;
    dynamoDeadlineMs: number;
  };
  tables: TableNames;
  /** The HS256 secret's one source (lib/accounts/jwt-secret.ts) and the tokens' claims. */
  jwt: JwtSecretSource & {
    issuer: string;
    audience: string;
    ttlSeconds: number;
  };
  signer: {
    scheme: 'local' | 'kms';
    seedFile: string;
    seedHex: string | undefined;
    kmsKeyId: string | undefined;
    /** The raw ML-DSA-65 public key (1952 bytes): written next to the seed locally, shipped with the functions in AWS. */
    publicKeyFile: string;
    /** Fingerprints (SHA-256 hex) of earlier keys whose signatures still verify after a rotation. */
    trustedFingerprints: string[];
  };
  /** The service's Ed25519 key (POST /api/v2/evidence/sign): a seed in DATA_DIR, or a KMS key (`ECC_NIST_EDWARDS25519`). */
  ed25519: {
    scheme: 'local' | 'kms';
    seedFile: string;
    kmsKeyId: string | undefined;
  };
  /**
   * A JWK set (RFC 7517) of the service's earlier public keys (Ed25519, ML-DSA-65): they no longer
   * sign, but GET /.well-known/jwks.json keeps them, marked retired, so old statements still verify.
   * A missing file means no retired keys.
   */
  retiredKeysFile: string;
  /**
   * KEY_REGISTRY_FILE: the key registry (lib/crypto/key-windows.ts, decisions.md "Key validity
   * windows"): every key the service signs or signed with and its validity window. Public material
   * only; written by `npm run admin -- rotate-key` locally, shipped with the functions in AWS.
   */
  keyRegistryFile: string;
  tsa: {
    scheme: 'embedded' | 'remote';
    dir: string;
    policyOid: string;
    url: string | undefined;
    rootsFile: string | undefined;
    timeoutMs: number;
    kmsKeyId: string | undefined;
    /** With `kmsKeyId`: the TSA certificate of the KMS key and its root (PEM), shipped with the functions. */
    certFile: string | undefined;
    rootFile: string | undefined;
    /**
     * The retired TSA certificates (lib/crypto/tsa/history.ts): DATA_DIR/tsa/history.json, or
     * TSA_HISTORY_FILE (shipped with the functions in production). A missing file: none retired.
     */
    historyFile: string;
    /**
     * The post-quantum TSA (ML-DSA-65, RFC 9882), with the embedded TSA only: locally its seeds and
     * certificates in `dir`/pq-*.pem (generated at first start), in production a KMS key of key
     * spec ML_DSA_65 and its certificate and root shipped with the functions. Undefined when off
     * (TSA_PQ=off, a remote TSA, or AWS without TSA_PQ_KMS_KEY_ID).
     */
    pq:
      | {
          policyOid: string;
          kmsKeyId: string | undefined;
          certFile: string | undefined;
          rootFile: string | undefined;
        }
      | undefined;
  };
  /** The key that signs the PDF evidence certificates (PAdES), issued under the TSA's root. */
  pdfSigner: {
    /** Local: the key (0600) and its certificate, generated at first start (lib/local/bootstrap.ts). */
    dir: string;
    /** Production: an AWS KMS key of key spec ECC_NIST_P256; its certificate ships in `certFile`. */
    kmsKeyId: string | undefined;
    certFile: string | undefined;
  };
  ledger: {
    network: NetworkName;
    rpcUrl: string;
    rpcPort: number;
    blockTimeMs: number;
    chainId: number;
    explorerTxUrl: string;
    confirmationTag: 'latest' | 'finalized';
    walletScheme: 'local' | 'kms';
    walletKeyFile: string;
    walletPrivateKey: string | undefined;
    walletKmsKeyId: string | undefined;
    priorityFeeGwei: number;
    maxFeeGwei: number;
    receiptTimeoutMs: number;
    pollingIntervalMs: number;
    lowBalanceWei: bigint;
    /** A transaction still unmined after this long is re-signed with ≥ 10 % higher fees (0: never). */
    replaceAfterMinutes: number;
    /**
     * decisions.md "Ledger batching": 0 sends one transaction per anchor (direct mode); above 0 the
     * anchors accepted within one window of this many ms share one transaction carrying the Merkle
     * root of their leaves (lib/evidence/batch-publish.ts).
     */
    batchWindowMs: number;
  };
  /** Webhooks (docs/webhooks.md). */
  webhooks: {
    /** WEBHOOK_RETRY_SCHEDULE: seconds before each retry after a failed attempt (lib/webhooks/schedule.ts). */
    retryScheduleSeconds: number[];
    /**
     * WEBHOOK_ALLOW_PRIVATE_TARGETS: `true` lets `npm start` send to loopback over http (its default);
     * `false` (always in AWS: anything else is a configuration error) accepts only https URLs
     * whose every address is public unicast (lib/net/address-policy.ts).
     */
    allowPrivateTargets: boolean;
    /** WEBHOOK_SECRETS_KMS_KEY_ID (AWS): the symmetric KMS key the signing secrets are sealed with. */
    secretsKmsKeyId: string | undefined;
    /** Locally: the AES-256-GCM key the signing secrets are sealed with (lib/crypto/secret-box.ts). */
    secretsKeyFile: string;
    /** `npm start` only (WEBHOOK_INTERVAL_MS): how often the delivery worker looks at the due deliveries. */
    intervalMs: number;
  };
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}


/** Reads and validates the whole configuration; throws one ConfigError listing every bad value. */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const r = new Reader(env, problems);

  const deployment = r.oneOf('DEPLOYMENT', ['local', 'aws'] as const, 'local');
  const local = deployment === 'local';
  const dataDir = path.resolve(r.string('DATA_DIR', './.data'));
  const port = r.port('PORT', 3000);
  const host = r.string('HOST', '127.0.0.1');
  const publicBaseUrl = r.url('PUBLIC_BASE_URL', `http://127.0.0.1:${port}`).replace(/\/+$/, '');

  const dynamoPort = r.port('DYNAMODB_PORT', 8000);
  const dynamoEndpoint = r.optionalUrl('DYNAMODB_ENDPOINT') ?? (local ? `http://127.0.0.1:${dynamoPort}` : undefined);
  const tablePrefix = r.string('TABLE_PREFIX', 'evidence-local-');
  const tables = Object.fromEntries(
    TABLE_KEYS.map((key: TableKey) => [key, r.string(TABLE_DEFINITIONS[key].envVar, `${tablePrefix}${key}`)]),
  ) as Record<TableKey, string>;

  const jwtValue = r.optional('JWT_SECRET');
  const jwtKms = r.optional('JWT_SECRET_KMS_CIPHERTEXT');
  const jwtSource: Config['jwt']['source'] = jwtValue ? 'env' : jwtKms ? 'kms' : 'file';
  if (jwtValue && jwtKms) problems.push('JWT_SECRET and JWT_SECRET_KMS_CIPHERTEXT are both set: choose one');
  if (jwtValue !== undefined && Buffer.byteLength(jwtValue) < 32) {
    problems.push('JWT_SECRET must be at least 32 bytes (HS256 keys shorter than the hash are refused)');
  }
  if (!local && jwtSource === 'file') problems.push('JWT_SECRET_KMS_CIPHERTEXT (or JWT_SECRET) is required when DEPLOYMENT=aws');

  const signerScheme = r.oneOf('PQ_SIGNER', ['local', 'kms'] as const, local ? 'local' : 'kms');
  const seedHex = r.optional('PQ_SIGNER_SEED_HEX');
  if (seedHex !== undefined && !/^[0-9a-fA-F]{64}$/.test(seedHex)) {
    problems.push('PQ_SIGNER_SEED_HEX must be 64 hex characters (the 32-byte ML-DSA-65 seed)');
  }
  const signerKms = r.optional('PQ_SIGNER_KMS_KEY_ID');
  if (signerScheme === 'kms' && !signerKms) problems.push('PQ_SIGNER_KMS_KEY_ID is required when PQ_SIGNER=kms');

  const ed25519Scheme = r.oneOf('ED25519_SIGNER', ['local', 'kms'] as const, local ? 'local' : 'kms');
  const ed25519Kms = r.optional('ED25519_SIGNER_KMS_KEY_ID');
  if (ed25519Scheme === 'kms' && !ed25519Kms) problems.push('ED25519_SIGNER_KMS_KEY_ID is required when ED25519_SIGNER=kms');

  const tsaScheme = r.oneOf('TSA_SCHEME', ['embedded', 'remote'] as const, 'embedded');
  const tsaUrl = r.optionalUrl('TSA_URL');
  const tsaRoots = r.optional('TSA_ROOTS_FILE');
  if (tsaScheme === 'remote' && !tsaUrl) problems.push('TSA_URL is required when TSA_SCHEME=remote');
  if (tsaScheme === 'remote' && !tsaRoots) problems.push('TSA_ROOTS_FILE (PEM roots the TSA must chain to) is required when TSA_SCHEME=remote');
  const archiveHash = r.oneOf('ARCHIVE_HASH_ALGORITHM', ['SHA-256', 'SHA-384', 'SHA-512'] as const, 'SHA-256');
  // The remote TSA client time-stamps SHA-256 imprints only (lib/crypto/ers-stamper.ts).
  if (tsaScheme === 'remote' && archiveHash !== 'SHA-256') problems.push('ARCHIVE_HASH_ALGORITHM other than SHA-256 needs the embedded TSA (TSA_SCHEME=embedded)');
  const tsaKms = r.optional('TSA_KMS_KEY_ID');
  const tsaCertFile = r.optional('TSA_CERT_FILE');
  const tsaRootFile = r.optional('TSA_ROOT_FILE');
  if (tsaScheme === 'embedded' && tsaKms && (!tsaCertFile || !tsaRootFile)) {
    problems.push('TSA_CERT_FILE and TSA_ROOT_FILE (the PEM certificate of the TSA_KMS_KEY_ID key and its root) are required with TSA_KMS_KEY_ID');
  }
  const pdfSignerKms = r.optional('PDF_SIGNER_KMS_KEY_ID');
  const pdfSignerCertFile = r.optional('PDF_SIGNER_CERT_FILE');
  if (pdfSignerKms && !pdfSignerCertFile) problems.push('PDF_SIGNER_CERT_FILE (the PEM certificate of the PDF_SIGNER_KMS_KEY_ID key) is required with PDF_SIGNER_KMS_KEY_ID');
  const policyOid = r.string('TSA_POLICY_OID', DEFAULT_TSA_POLICY_OID);
  if (!/^[0-2](\.\d+)+$/.test(policyOid)) problems.push(`TSA_POLICY_OID must be a dotted OID, got "${policyOid}"`);
  const tsaPqSwitch = r.oneOf('TSA_PQ', ['on', 'off'] as const, 'on');
  const tsaPqKms = r.optional('TSA_PQ_KMS_KEY_ID');
  const tsaPqCertFile = r.optional('TSA_PQ_CERT_FILE');
  const tsaPqRootFile = r.optional('TSA_PQ_ROOT_FILE');
  if (tsaPqKms && (!tsaPqCertFile || !tsaPqRootFile)) {
    problems.push('TSA_PQ_CERT_FILE and TSA_PQ_ROOT_FILE (the ML-DSA-65 certificate of the TSA_PQ_KMS_KEY_ID key and its root) are required with TSA_PQ_KMS_KEY_ID');
  }
  const pqPolicyOid = r.string('TSA_PQ_POLICY_OID', DEFAULT_TSA_PQ_POLICY_OID);
  if (!/^[0-2](\.\d+)+$/.test(pqPolicyOid)) problems.push(`TSA_PQ_POLICY_OID must be a dotted OID, got "${pqPolicyOid}"`);
  if (pqPolicyOid === policyOid) problems.push('TSA_PQ_POLICY_OID must differ from TSA_POLICY_OID: the policy is how a request chooses the TSA');
  const tsaPq =
    tsaPqSwitch === 'on' && tsaScheme === 'embedded' && (local || tsaPqKms)
      ? { policyOid: pqPolicyOid, kmsKeyId: tsaPqKms, certFile: tsaPqCertFile, rootFile: tsaPqRootFile }
      : undefined;

  const network = r.oneOf('LEDGER_NETWORK', ['local', 'polygon-amoy', 'polygon', 'custom'] as const, 'local');
  const preset = network === 'custom' ? NETWORK_PRESETS.local : NETWORK_PRESETS[network];
  const rpcPort = r.port('LEDGER_RPC_PORT', 8545);
  const rpcUrl = r.optionalUrl('LEDGER_RPC_URL') ?? (network === 'local' ? `http://127.0.0.1:${rpcPort}` : undefined);
  if (!rpcUrl) problems.push(`LEDGER_RPC_URL is required for LEDGER_NETWORK=${network}`);
  const explorer = r.string('LEDGER_EXPLORER_TX_URL', preset.explorerTxUrl || `${publicBaseUrl}/ledger/tx/{tx_hash}`);
  if (!explorer.includes('{tx_hash}')) problems.push('LEDGER_EXPLORER_TX_URL must contain the placeholder {tx_hash}');
  const walletScheme = r.oneOf('LEDGER_WALLET', ['local', 'kms'] as const, local ? 'local' : 'kms');
  const walletKey = r.optional('LEDGER_PRIVATE_KEY');
  if (walletKey !== undefined && !/^(0x)?[0-9a-fA-F]{64}$/.test(walletKey)) {
    problems.push('LEDGER_PRIVATE_KEY must be 32 bytes in hex');
  }
  const walletKms = r.optional('LEDGER_KMS_KEY_ID');
  if (walletScheme === 'kms' && !walletKms) problems.push('LEDGER_KMS_KEY_ID is required when LEDGER_WALLET=kms');
  const priorityFeeGwei = r.number('LEDGER_PRIORITY_FEE_GWEI', preset.priorityFeeGwei, 0);
  const maxFeeGwei = r.number('LEDGER_MAX_FEE_GWEI', preset.maxFeeGwei, 0);
  if (maxFeeGwei < priorityFeeGwei) problems.push('LEDGER_MAX_FEE_GWEI must not be below LEDGER_PRIORITY_FEE_GWEI');

  const tiers = parseTierLimits(r.optional('TIER_LIMITS'), problems);
  const publicRateLimit = r.oneOf('PUBLIC_RATE_LIMIT', ['edge', 'process'] as const, local ? 'process' : 'edge');
  const edgeOriginSecret = r.optional('EDGE_ORIGIN_SECRET');
  // At the edge the functions count nothing: without the secret they could be called around it.
  if (publicRateLimit === 'edge' && (edgeOriginSecret?.length ?? 0) < 32) problems.push('PUBLIC_RATE_LIMIT=edge needs EDGE_ORIGIN_SECRET (32+ characters)');

  const localHttp = {
    headersTimeoutMs: r.integer('HEADERS_TIMEOUT_MS', DEFAULT_HEADERS_TIMEOUT_MS, 100),
    requestTimeoutMs: r.integer('REQUEST_TIMEOUT_MS', DEFAULT_REQUEST_TIMEOUT_MS, 100),
  };
  // Node's HTTP server needs the headers' deadline within the whole request's.
  if (localHttp.headersTimeoutMs > localHttp.requestTimeoutMs) problems.push('HEADERS_TIMEOUT_MS must not be above REQUEST_TIMEOUT_MS');

  const retrySchedule = r.list('WEBHOOK_RETRY_SCHEDULE', /^\d+(\.\d+)?$/, 'seconds (a number)').map(Number);
  if (retrySchedule.length > 20) problems.push('WEBHOOK_RETRY_SCHEDULE lists at most 20 waits');
  const allowPrivateTargets = r.oneOf('WEBHOOK_ALLOW_PRIVATE_TARGETS', ['true', 'false'] as const, local ? 'true' : 'false') === 'true';
  // A deployed stage never sends to loopback or plain http (docs/webhooks.md "Server-side request forgery").
  const proofThreads = r.integer('PROOF_THREADS', 0, 0);
  if (!local && proofThreads > 0) problems.push('PROOF_THREADS must be 0 when DEPLOYMENT=aws (the keys are in KMS)');
  if (!local && allowPrivateTargets) problems.push('WEBHOOK_ALLOW_PRIVATE_TARGETS must be false when DEPLOYMENT=aws');

  const webhooks: Config['webhooks'] = {
    retryScheduleSeconds: retrySchedule.length > 0 ? retrySchedule : [...DEFAULT_RETRY_SCHEDULE_SECONDS],
    allowPrivateTargets,
    secretsKmsKeyId: r.optional('WEBHOOK_SECRETS_KMS_KEY_ID'),
    secretsKeyFile: path.join(dataDir, 'secrets', 'webhook-secrets.key'),
    intervalMs: r.integer('WEBHOOK_INTERVAL_MS', 1000, 100),
  };

  const config: Config = {
    deployment,
    webhooks,
    port,
    host,
    dataDir,
    logLevel: r.oneOf('LOG_LEVEL', ['debug', 'info', 'warn', 'error'] as const, 'info'),
    publicBaseUrl,
    adminToken: r.optional('ADMIN_TOKEN'),
    tiers,
    publicRatePerMinute: r.integer('PUBLIC_RATE_PER_MINUTE', 600, 1),
    publicRateLimit,
    edgeOriginSecret,
    accountRatePerMinute: r.integer('ACCOUNT_RATE_PER_MINUTE', 120, 1),
    apiKeyCacheMs: r.integer('API_KEY_CACHE_MS', MAX_KEY_CACHE_MS, 0, MAX_KEY_CACHE_MS),
    anchorConcurrency: r.integer('ANCHOR_CONCURRENCY', 16, 0),
    anchorWaitMs: r.integer('ANCHOR_WAIT_MS', 20_000, 100),
    authFailuresPerWindow: r.integer('AUTH_FAILURES_PER_WINDOW', 10, 1),
    reconcileIntervalMs: r.integer('RECONCILE_INTERVAL_MS', 5000, 100),
    localHttp,
    reconcileSafetyScanItems: r.integer('RECONCILE_SAFETY_SCAN_ITEMS', local ? 1000 : 0, 0),
    proofThreads,
    archive: {
      groupAfterMs: r.integer('ARCHIVE_GROUP_SECONDS', 30, 0) * 1000,
      maxGroupSize: r.integer('ARCHIVE_MAX_GROUP', 2048, 1),
      renewBeforeMs: r.integer('ARCHIVE_RENEW_BEFORE_DAYS', 365, 1) * 24 * 3600_000,
      intervalMs: r.integer('ARCHIVE_INTERVAL_MS', 10_000, 100),
      hashAlgorithm: archiveHash,
    },
    aws: {
      region: r.string('AWS_REGION', local ? 'local' : 'eu-central-1'),
      dynamoEndpoint,
      dynamoPort,
      dynamoAttemptTimeoutMs: r.integer('DYNAMODB_ATTEMPT_TIMEOUT_MS', DYNAMO_ATTEMPT_TIMEOUT_MS, 50),
      dynamoDeadlineMs: r.integer('DYNAMODB_DEADLINE_MS', DYNAMO_DEADLINE_MS, 100),
    },
    tables,
    jwt: {
      source: jwtSource,
      file: path.join(dataDir, 'secrets', 'jwt-secret'),
      value: jwtValue,
      kmsCiphertext: jwtKms,
      issuer: r.string('JWT_ISSUER', 'evidence-anchoring-service'),
      audience: r.string('JWT_AUDIENCE', 'evidence-account-api'),
      ttlSeconds: r.integer('JWT_TTL_SECONDS', 3600, 60),
    },
    signer: {
      scheme: signerScheme,
      seedFile: path.join(dataDir, 'keys', 'ml-dsa-65.seed'),
      seedHex,
      kmsKeyId: signerKms,
      publicKeyFile: r.string('PQ_PUBLIC_KEY_FILE', path.join(dataDir, 'keys', 'ml-dsa-65.pub')),
      trustedFingerprints: r.list('PQ_TRUSTED_KEY_FINGERPRINTS', /^[0-9a-f]{64}$/, 'a SHA-256 fingerprint (64 lower-case hex)'),
    },
    ed25519: {
      scheme: ed25519Scheme,
      seedFile: path.join(dataDir, 'keys', 'ed25519.seed'),
      kmsKeyId: ed25519Kms,
    },
    retiredKeysFile: r.string('RETIRED_KEYS_FILE', path.join(dataDir, 'keys', 'retired-keys.json')),
    keyRegistryFile: r.string('KEY_REGISTRY_FILE', path.join(dataDir, 'keys', 'key-registry.json')),
    tsa: {
      scheme: tsaScheme,
      dir: path.join(dataDir, 'tsa'),
      policyOid,
      url: tsaUrl,
      rootsFile: tsaRoots,
      timeoutMs: r.integer('TSA_TIMEOUT_MS', 5000, 100),
      kmsKeyId: tsaKms,
      certFile: tsaCertFile,
      rootFile: tsaRootFile,
      historyFile: r.string('TSA_HISTORY_FILE', path.join(dataDir, 'tsa', 'history.json')),
      pq: tsaPq,
    },
    pdfSigner: { dir: path.join(dataDir, 'pdf-signer'), kmsKeyId: pdfSignerKms, certFile: pdfSignerCertFile },
    ledger: {
      network,
      rpcUrl: rpcUrl ?? '',
      rpcPort,
      blockTimeMs: r.integer('LEDGER_BLOCK_TIME_MS', 0, 0),
      chainId: r.integer('LEDGER_CHAIN_ID', preset.chainId, 1),
      explorerTxUrl: explorer,
      confirmationTag: r.oneOf('LEDGER_CONFIRMATION_TAG', ['latest', 'finalized'] as const, preset.confirmationTag),
      walletScheme,
      walletKeyFile: path.join(dataDir, 'keys', 'ledger-wallet.key'),
      walletPrivateKey: walletKey,
      walletKmsKeyId: walletKms,
      priorityFeeGwei,
      maxFeeGwei,
      receiptTimeoutMs: r.integer('LEDGER_RECEIPT_TIMEOUT_MS', 2500, 0),
      pollingIntervalMs: r.integer('LEDGER_POLLING_INTERVAL_MS', 100, 10),
      lowBalanceWei: r.bigint('LEDGER_LOW_BALANCE_WEI', 10n ** 17n),
      replaceAfterMinutes: r.number('LEDGER_REPLACE_AFTER_MINUTES', 5, 0),
      // 250 ms windows by default: measured 1.4–1.5× the anchors/s of direct mode, a lower p50 and 12× less gas per
      // anchor (BENCHMARKS.md, "The side-by-side section"); 0 sends one transaction per anchor.
      batchWindowMs: r.integer('LEDGER_BATCH_WINDOW_MS', 250, 0),
    },
  };
  // An anchor waits up to one window (plus the seal) for its answer, inside API Gateway's 29 s.
  if (config.ledger.batchWindowMs > 10_000) problems.push(`LEDGER_BATCH_WINDOW_MS must be at most 10000 (an anchor waits up to one window for its answer), got ${config.ledger.batchWindowMs}`);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
