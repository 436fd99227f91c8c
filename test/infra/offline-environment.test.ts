import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import { loadConfig } from '../../lib/config.js';

// CommonJS because osls loads plugins with require(); load it the same way.
const require = createRequire(import.meta.url);
type OfflinePlugin = { hooks: Record<string, () => void> };
const OfflineLocalPlugin = require('../../infra/serverless-offline-local.cjs') as {
  new (serverless: unknown, options: Record<string, unknown>): OfflinePlugin;
  offlineEnvironment(declared: Record<string, unknown>, shell: Record<string, string | undefined>, httpPort: number | string): Record<string, string>;
  streamConsumers(functions: Record<string, unknown>): string[];
};
const { offlineEnvironment, streamConsumers } = OfflineLocalPlugin;
const registry = require('../../infra/registry.cjs') as typeof import('../../infra/registry.cjs');
const { buildFunctions } = require('../../infra/serverless-functions.cjs') as {
  buildFunctions(): Record<string, { environment?: Record<string, string> }>;
};

/** provider.environment as osls resolves serverless.yml for AWS: strings, and CloudFormation objects for refs. */
const AWS_ENVIRONMENT: Record<string, unknown> = {
  DEPLOYMENT: 'aws',
  DATA_DIR: '/tmp/evidence',
  LOG_LEVEL: 'info',
  PUBLIC_BASE_URL: { 'Fn::GetAtt': ['HttpApi', 'ApiEndpoint'] },
  PUBLIC_RATE_PER_MINUTE: '600',
  PUBLIC_RATE_LIMIT: 'edge',
  EDGE_ORIGIN_SECRET: 'an-edge-origin-secret-of-the-stage-0123456789',
  TIER_LIMITS: '',
  TABLE_ACCOUNTS: { Ref: 'AccountsTable' },
  TABLE_EVIDENCE: { Ref: 'EvidenceTable' },
  JWT_SECRET_KMS_CIPHERTEXT: 'placeholder-set-jwtSecretKmsCiphertext',
  PQ_SIGNER: 'kms',
  PQ_SIGNER_KMS_KEY_ID: 'arn:aws:kms:eu-central-1:000000000000:key/1',
  TSA_SCHEME: 'embedded',
  TSA_KMS_KEY_ID: 'arn:aws:kms:eu-central-1:000000000000:key/2',
  TSA_CERT_FILE: 'infra/keys/dev/tsa.pem',
  TSA_ROOT_FILE: 'infra/keys/dev/tsa-root.pem',
  TSA_PQ: 'on',
  TSA_PQ_KMS_KEY_ID: 'arn:aws:kms:eu-central-1:000000000000:key/7',
  TSA_PQ_CERT_FILE: 'infra/keys/dev/tsa-pq.pem',
  TSA_PQ_ROOT_FILE: 'infra/keys/dev/tsa-pq-root.pem',
  TSA_HISTORY_FILE: 'infra/keys/dev/tsa-history.json',
  PQ_PUBLIC_KEY_FILE: 'infra/keys/dev/ml-dsa-65.pub',
  LEDGER_NETWORK: 'polygon-amoy',
  LEDGER_RPC_URL: 'https://rpc-amoy.polygon.technology',
  LEDGER_WALLET: 'kms',
  LEDGER_KMS_KEY_ID: 'arn:aws:kms:eu-central-1:000000000000:key/3',
  ED25519_SIGNER: 'kms',
  ED25519_SIGNER_KMS_KEY_ID: 'arn:aws:kms:eu-central-1:000000000000:key/5',
  RETIRED_KEYS_FILE: 'infra/keys/dev/retired-keys.json',
  KEY_REGISTRY_FILE: 'infra/keys/dev/key-registry.json',
  PDF_SIGNER_KMS_KEY_ID: 'arn:aws:kms:eu-central-1:000000000000:key/6',
  PDF_SIGNER_CERT_FILE: 'infra/keys/dev/pdf-signer.pem',
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false',
  WEBHOOK_SECRETS_KMS_KEY_ID: 'arn:aws:kms:eu-central-1:000000000000:key/8',
};
/** What test/offline/run.ts hands osls: the test stack's environment (and a stray KMS setting). */
const SHELL = {
  DATA_DIR: '/tmp/evidence-test-x',
  DYNAMODB_ENDPOINT: 'http://127.0.0.1:40001',
  TABLE_PREFIX: 'test-abc-',
  ADMIN_TOKEN: 'admin-token-of-the-test-stack',
  LOG_LEVEL: 'warn',
  LEDGER_RPC_URL: 'http://127.0.0.1:40002',
  PQ_SIGNER: 'kms',
  PQ_SIGNER_KMS_KEY_ID: 'arn:aws:kms:eu-central-1:123456789012:key/shell',
  HOME: '/root',
};

describe('osls offline environment (infra/serverless-offline-local.cjs)', () => {
  const functions = buildFunctions();

  test('covers every key and signer setting serverless.yml declares for AWS (a new one must be tried offline too)', () => {
    const yml = readFileSync(new URL('../../serverless.yml', import.meta.url), 'utf8');
    const declared = [...yml.matchAll(/^ {4}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1] as string);
    const signerSettings = declared.filter((n) => /KMS|SIGNER|WALLET|_FILE$/.test(n));
    assert.ok(signerSettings.length >= 10, `${signerSettings.length} settings found`);
    const missing = signerSettings.filter((n) => !(n in AWS_ENVIRONMENT) && n !== 'PQ_TRUSTED_KEY_FINGERPRINTS');
    assert.deepEqual(missing, [], 'add them to AWS_ENVIRONMENT above');
  });

  test('every function gets the local deployment on the stack, with no KMS setting and only strings', () => {
    for (const [name, fn] of Object.entries(functions)) {
      const env = offlineEnvironment({ ...AWS_ENVIRONMENT, ...(fn.environment ?? {}) }, SHELL, 4000);
      for (const [k, v] of Object.entries(env)) assert.equal(typeof v, 'string', `${name}.${k}`);
      assert.deepEqual(Object.keys(env).filter((k) => /KMS/.test(k)), [], name);
      assert.equal(env.HOME, undefined, 'nothing else from the shell');
      const config = loadConfig(env);
      assert.equal(config.deployment, 'local');
      assert.equal(config.signer.scheme, 'local');
      assert.equal(config.ledger.walletScheme, 'local');
      assert.equal(config.jwt.source, 'file');
      assert.equal(config.dataDir, SHELL.DATA_DIR);
      assert.equal(config.aws.dynamoEndpoint, SHELL.DYNAMODB_ENDPOINT);
      assert.equal(config.tables.accounts, 'test-abc-accounts');
      assert.equal(config.ledger.network, 'local');
      assert.equal(config.ledger.rpcUrl, SHELL.LEDGER_RPC_URL);
      assert.equal(config.publicBaseUrl, 'http://localhost:4000');
      assert.equal(config.logLevel, 'warn');
      // Offline has no edge in front: the public reads are limited in process.
      assert.equal(config.publicRateLimit, 'process');
      assert.equal(config.edgeOriginSecret, undefined);
      // The stage's shipped key material is AWS's: offline trusts the keys in DATA_DIR.
      assert.equal(config.signer.publicKeyFile, `${SHELL.DATA_DIR}/keys/ml-dsa-65.pub`);
      assert.equal(env.TSA_CERT_FILE, undefined);
      assert.equal(env.TSA_ROOT_FILE, undefined);
      // The post-quantum TSA too: on, with its seeds and chain in DATA_DIR (never the stage's files),
      // and the TSA history that local rotations write.
      assert.equal(env.TSA_PQ_CERT_FILE, undefined);
      assert.equal(env.TSA_PQ_ROOT_FILE, undefined);
      assert.deepEqual(config.tsa.pq && { kmsKeyId: config.tsa.pq.kmsKeyId, certFile: config.tsa.pq.certFile, rootFile: config.tsa.pq.rootFile }, { kmsKeyId: undefined, certFile: undefined, rootFile: undefined });
      assert.equal(config.tsa.historyFile, `${SHELL.DATA_DIR}/tsa/history.json`);
    }
  });

  test('the stream consumers are left out before serverless-esbuild bundles: offline builds, serves and invokes no stream function', () => {
    const stream = registry.allFunctions().filter((fn) => fn.kind === 'stream').map((fn) => fn.name);
    assert.deepEqual(stream, ['evidenceStream', 'webhookOutbox']);
    assert.deepEqual(streamConsumers(functions), stream, 'found by their stream event');
    const service = { provider: { environment: { ...AWS_ENVIRONMENT } }, functions: structuredClone(functions) };
    const plugin = new OfflineLocalPlugin({ service, processedInput: { commands: ['offline'] } }, { httpPort: 4000 });
    plugin.hooks['before:offline:start']!();
    plugin.hooks['before:offline:start:init']!();
    assert.deepEqual(Object.keys(service.functions).sort(), Object.keys(functions).filter((n) => !stream.includes(n)).sort());
  });

  test('ADMIN_TOKEN reaches the functions that declare it and no other', () => {
    const withToken = Object.entries(functions)
      .filter(([, fn]) => offlineEnvironment({ ...AWS_ENVIRONMENT, ...(fn.environment ?? {}) }, SHELL, 4000).ADMIN_TOKEN === SHELL.ADMIN_TOKEN)
      .map(([name]) => name);
    assert.deepEqual(withToken, ['v2AdminSetTier']);
  });
});
