'use strict';
/**
 * osls plugin (serverless.yml `plugins:`): `osls offline` runs the real Lambda handlers against
 * the embedded stack (dynalite, Hardhat, keys in DATA_DIR) instead of AWS. It does nothing for
 * any other command, so `osls package` and the generated template are unchanged.
 *
 * serverless-offline gives each function `provider.environment` + its own `environment` and
 * ignores the shell's variables (only AWS_* pass), and that environment is the AWS one:
 * DEPLOYMENT=aws, KMS key ids, the Amoy RPC, and `!Ref`/`!GetAtt` table names and base URL that
 * only CloudFormation can resolve. Before serverless-offline builds its functions, this plugin
 * rewrites that environment for the local deployment:
 *  - DEPLOYMENT=local, PQ_SIGNER=local, ED25519_SIGNER=local, LEDGER_WALLET=local, and no KMS
 *    variable (nor a certificate of a KMS key) at all: keys
 *    come from DATA_DIR (lib/local/bootstrap.ts generates them), never from KMS;
 *  - variables that name AWS things (table refs, the API's URL, the real network) are dropped,
 *    so lib/config.ts falls back to its local defaults (TABLE_PREFIX, 127.0.0.1 ports);
 *  - the variables lib/config.ts reads are taken from the environment osls runs in, which is
 *    how test/offline/run.ts hands over the addresses of the stack it started;
 *  - ADMIN_TOKEN only reaches the functions that declare it (v2AdminSetTier), as on AWS;
 *  - the stream consumers (infra/functions.json `stream`: evidenceStream, webhookOutbox) are left out:
 *    serverless-offline has no DynamoDB stream events, and locally the embedded stack's own change
 *    feed applies the evidence table's changes with the same code (`npm start`,
 *    lib/local/change-feed.ts), so nothing bundles, serves or invokes them offline.
 * Start it by hand next to `npm start` (which serves dynalite on 8000 and Hardhat on 8545 with
 * keys in ./.data): `npx osls offline --httpPort 3001 --lambdaPort 3003` (ADMIN_TOKEN from the shell).
 *
 * How the handlers run (what works, and why this mode):
 *  - serverless-esbuild bundles every function exactly as for `osls package` (custom.esbuild:
 *    ESM, `.mjs`, the createRequire banner, `@aws-sdk/*` external) into
 *    <work folder>/.build/functions/…/<name>.mjs and points serverless-offline there
 *    (custom['serverless-offline'].location); serverless-offline's loader tries `.js`, then
 *    `.mjs` and import()s the bundle. `@aws-sdk/*` resolves by walking up to the project's
 *    node_modules (Lambda's runtime ships it), so the work folder must stay inside the project.
 *  - Worker-thread mode (serverless-offline's default; not `--useInProcess`): one worker per
 *    function, kept warm for 60 s like a container, whose process.env is exactly the function's
 *    environment below (plus AWS_*). `--useInProcess` also passes the smoke test and is faster
 *    (no worker start per cold function), but it Object.assign()s every function's environment
 *    into the one shared process.env, on top of the shell's: a function would also see other
 *    functions' variables (ADMIN_TOKEN) and the shell's, so it would not test the deployed shape.
 */

/**
 * What serverless.yml declares for AWS only: CloudFormation references (table names, the API's
 * URL), the public network, the Lambda data directory and the public key shipped from
 * infra/keys/<stage>/. Dropped offline, so lib/config.ts falls
 * back to its local defaults (TABLE_PREFIX, 127.0.0.1 ports) unless the shell sets them.
 */
const AWS_ONLY = /^(TABLE_[A-Z_]+|PUBLIC_BASE_URL|PUBLIC_RATE_LIMIT|EDGE_ORIGIN_SECRET|LEDGER_NETWORK|LEDGER_RPC_URL|DATA_DIR|PQ_PUBLIC_KEY_FILE|TSA_HISTORY_FILE)$/;
/** Key material held in KMS on AWS (and the TSA certificates that go with the KMS keys): never offline. */
const KMS_ONLY = /KMS|^TSA_(PQ_)?(CERT|ROOT)_FILE$|^PDF_SIGNER_CERT_FILE$/;
/** The variables lib/config.ts reads that the shell may set for the local deployment. */
const FROM_SHELL = /^(DATA_DIR|DYNAMODB_[A-Z_]+|TABLE_[A-Z_]+|PUBLIC_[A-Z_]+|JWT_[A-Z_]+|PQ_[A-Z_]+|TSA_[A-Z_]+|LEDGER_[A-Z_]+|TIER_LIMITS|LOG_LEVEL)$/;
/** Forced last: whatever the shell or serverless.yml says, offline signs with the keys in DATA_DIR. */
const LOCAL = { DEPLOYMENT: 'local', PQ_SIGNER: 'local', ED25519_SIGNER: 'local', LEDGER_WALLET: 'local' };

/**
 * The environment of one function offline. `declared`: provider.environment merged with the
 * function's own, as osls resolved them; `shell`: process.env; `httpPort`: the offline port.
 */
function offlineEnvironment(declared, shell, httpPort) {
  const env = {};
  for (const [name, value] of Object.entries(declared)) {
    // Strings only: `{ Ref: … }` and `{ 'Fn::GetAtt': … }` mean something in CloudFormation only.
    if (!AWS_ONLY.test(name) && typeof value === 'string') env[name] = value;
  }
  for (const [name, value] of Object.entries(shell)) if (FROM_SHELL.test(name) && value !== undefined) env[name] = value;
  env.PUBLIC_BASE_URL ??= `http://localhost:${httpPort}`;
  // Only where serverless.yml gives it (its `environment` in infra/functions.json), as on AWS.
  if ('ADMIN_TOKEN' in declared) env.ADMIN_TOKEN = shell.ADMIN_TOKEN ?? '';
  for (const name of Object.keys(env)) if (KMS_ONLY.test(name)) delete env[name];
  return { ...env, ...LOCAL };
}

/**
 * serverless-esbuild's work folder for `osls offline` (`osls package` uses `.esbuild` and deletes
 * it when done). Under node_modules: ignored by git and eslint, and the bundles still find the
 * packages they leave external (`@aws-sdk/*`) by walking up to the project's node_modules.
 */
const OFFLINE_WORK_FOLDER = 'node_modules/.cache/evidence-offline';

/** The functions with a `stream` event (infra/serverless-functions.cjs streamEvent): AWS runs them, offline does not. */
function streamConsumers(functions) {
  return Object.entries(functions ?? {})
    .filter(([, fn]) => (fn?.events ?? []).some((event) => event && event.stream !== undefined))
    .map(([name]) => name);
}

class OfflineLocalPlugin {
  constructor(serverless, options, utils) {
    this.serverless = serverless;
    this.options = options;
    this.log = utils?.log;
    this.rewritten = false;
    const rewrite = () => this.rewriteEnvironment();
    this.hooks = {
      // Listed before serverless-esbuild in serverless.yml, so this runs before it reads its options.
      initialize: () => this.separateWorkFolder(),
      // `osls offline` runs `offline:start`, `osls offline start` runs `offline:start:init`.
      'before:offline:start': rewrite,
      'before:offline:start:init': rewrite,
    };
  }

  isOffline() {
    return this.serverless.processedInput?.commands?.[0] === 'offline';
  }

  /** Offline bundles go to their own folder: an `osls package` meanwhile cannot delete them under a running `osls offline`. */
  separateWorkFolder() {
    if (!this.isOffline()) return;
    const custom = (this.serverless.service.custom ??= {});
    custom.esbuild = { ...(custom.esbuild ?? {}), outputWorkFolder: OFFLINE_WORK_FOLDER };
  }

  rewriteEnvironment() {
    if (this.rewritten) return;
    this.rewritten = true;
    const { service } = this.serverless;
    // Before serverless-esbuild's own hook of the same event (plugin order): it bundles what is left.
    const dropped = streamConsumers(service.functions);
    for (const name of dropped) delete service.functions[name];
    if (dropped.length) this.log?.notice?.(`offline: not running ${dropped.join(', ')} (stream consumers; the local change feed applies the changes)`);
    const provider = service.provider.environment ?? {};
    const httpPort = this.options.httpPort ?? 3000;
    for (const fn of Object.values(service.functions ?? {})) {
      fn.environment = offlineEnvironment({ ...provider, ...(fn.environment ?? {}) }, process.env, httpPort);
    }
    // Everything a function gets is now in its own environment.
    service.provider.environment = {};
  }
}

module.exports = OfflineLocalPlugin;
module.exports.offlineEnvironment = offlineEnvironment;
module.exports.streamConsumers = streamConsumers;
