import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_TIERS } from '../lib/accounts/tiers.js';
import { ConfigError, loadConfig } from '../lib/config.js';

describe('loadConfig', () => {
  it('gives a complete local configuration with no environment at all', () => {
    const config = loadConfig({});
    assert.equal(config.deployment, 'local');
    assert.equal(config.port, 3000);
    assert.equal(config.ledger.rpcUrl, 'http://127.0.0.1:8545');
    assert.equal(config.ledger.chainId, 31337);
    assert.equal(config.ledger.explorerTxUrl, 'http://127.0.0.1:3000/ledger/tx/{tx_hash}');
    assert.equal(config.aws.dynamoEndpoint, 'http://127.0.0.1:8000');
    assert.equal(config.tables.evidence, 'evidence-local-evidence');
    assert.deepEqual(config.tiers, DEFAULT_TIERS);
    assert.equal(config.jwt.source, 'file');
  });

  it('reports every bad value at once, one line each', () => {
    const bad = {
      PORT: 'eighty',
      LEDGER_BLOCK_TIME_MS: '-5',
      TIER_LIMITS: '{"gold":{"monthly_quota":1}}',
      JWT_SECRET: 'too-short',
      LEDGER_EXPLORER_TX_URL: 'https://example.test/tx/',
    };
    assert.throws(
      () => loadConfig(bad),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.problems.length, 5, error.message);
        for (const name of ['PORT', 'LEDGER_BLOCK_TIME_MS', 'TIER_LIMITS', 'JWT_SECRET', 'LEDGER_EXPLORER_TX_URL']) {
          assert.ok(error.problems.some((p) => p.startsWith(name)), `no line names ${name}`);
        }
        return true;
      },
    );
  });

  it("gives npm start's HTTP server deadlines (headers 10 s, the whole request 30 s), and refuses headers' above the request's", () => {
    assert.deepEqual(loadConfig({}).localHttp, { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 });
    assert.deepEqual(loadConfig({ HEADERS_TIMEOUT_MS: '2000', REQUEST_TIMEOUT_MS: '5000' }).localHttp, { headersTimeoutMs: 2000, requestTimeoutMs: 5000 });
    for (const [env, line] of [
      [{ HEADERS_TIMEOUT_MS: '40000' }, /^HEADERS_TIMEOUT_MS must not be above REQUEST_TIMEOUT_MS/],
      [{ REQUEST_TIMEOUT_MS: '0x10' }, /^REQUEST_TIMEOUT_MS must be an integer ≥ 100/],
      [{ HEADERS_TIMEOUT_MS: '0' }, /^HEADERS_TIMEOUT_MS must be an integer ≥ 100/],
    ] as const) {
      assert.throws(() => loadConfig(env), (error: unknown) => error instanceof ConfigError && error.problems.length === 1 && line.test(error.problems[0] ?? ''));
    }
  });

  it('merges TIER_LIMITS over the document tier table', () => {
    const config = loadConfig({ TIER_LIMITS: '{"free":{"monthly_quota":5,"rate_per_minute":100}}' });
    assert.deepEqual(config.tiers.free, { monthly_quota: 5, rate_per_minute: 100, price_eur_per_month: 0 });
    assert.deepEqual(config.tiers.pro, DEFAULT_TIERS.pro);
  });

  it('requires KMS keys and a JWT secret source in AWS', () => {
    assert.throws(
      () => loadConfig({ DEPLOYMENT: 'aws', LEDGER_NETWORK: 'polygon-amoy' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        const text = error.problems.join('\n');
        for (const needed of ['JWT_SECRET_KMS_CIPHERTEXT', 'PQ_SIGNER_KMS_KEY_ID', 'LEDGER_KMS_KEY_ID', 'LEDGER_RPC_URL']) {
          assert.match(text, new RegExp(needed));
        }
        return true;
      },
    );
  });

  /*
   * Every kind of bad value and every rule between variables, with its line word for word: the
   * messages are the operators' interface (one line names the variable and what is wrong), so a
   * rewrite of the parsing (issue 35: one schema) must give these same lines.
   */
  it('says what is wrong with each kind of value and each rule between variables, word for word', () => {
    const cases: [Record<string, string>, string[]][] = [
      [{ DEPLOYMENT: 'cloud' }, ['DEPLOYMENT must be one of local, aws, got "cloud"']],
      [{ PORT: '70000' }, ['PORT must be a TCP port (1-65535), got "70000"']],
      [{ PUBLIC_BASE_URL: 'ftp://x' }, ['PUBLIC_BASE_URL must be an http(s) URL, got "ftp://x"']],
      [{ DYNAMODB_ENDPOINT: 'not a url' }, ['DYNAMODB_ENDPOINT must be an http(s) URL, got "not a url"']],
      [{ ANCHOR_WAIT_MS: '99' }, ['ANCHOR_WAIT_MS must be an integer ≥ 100, got "99"']],
      [{ API_KEY_CACHE_MS: '5001' }, ['API_KEY_CACHE_MS must be an integer ≥ 0 and ≤ 5000, got "5001"']],
      [{ LEDGER_LOW_BALANCE_WEI: '1e18' }, ['LEDGER_LOW_BALANCE_WEI must be a non-negative integer (wei), got "1e18"']],
      [{ LEDGER_PRIORITY_FEE_GWEI: 'abc' }, ['LEDGER_PRIORITY_FEE_GWEI must be a number ≥ 0, got "abc"']],
      [{ PQ_TRUSTED_KEY_FINGERPRINTS: 'ABC' }, ['PQ_TRUSTED_KEY_FINGERPRINTS: "ABC" is not a SHA-256 fingerprint (64 lower-case hex)']],
      [{ JWT_SECRET: 'x'.repeat(32), JWT_SECRET_KMS_CIPHERTEXT: 'c' }, ['JWT_SECRET and JWT_SECRET_KMS_CIPHERTEXT are both set: choose one']],
      [{ PQ_SIGNER_SEED_HEX: 'zz' }, ['PQ_SIGNER_SEED_HEX must be 64 hex characters (the 32-byte ML-DSA-65 seed)']],
      [{ ED25519_SIGNER: 'kms' }, ['ED25519_SIGNER_KMS_KEY_ID is required when ED25519_SIGNER=kms']],
      [
        { TSA_SCHEME: 'remote', ARCHIVE_HASH_ALGORITHM: 'SHA-512' },
        [
          'TSA_URL is required when TSA_SCHEME=remote',
          'TSA_ROOTS_FILE (PEM roots the TSA must chain to) is required when TSA_SCHEME=remote',
          'ARCHIVE_HASH_ALGORITHM other than SHA-256 needs the embedded TSA (TSA_SCHEME=embedded)',
        ],
      ],
      [{ PDF_SIGNER_KMS_KEY_ID: 'k' }, ['PDF_SIGNER_CERT_FILE (the PEM certificate of the PDF_SIGNER_KMS_KEY_ID key) is required with PDF_SIGNER_KMS_KEY_ID']],
      [{ TSA_POLICY_OID: 'abc' }, ['TSA_POLICY_OID must be a dotted OID, got "abc"']],
      [{ TSA_PQ_KMS_KEY_ID: 'k' }, ['TSA_PQ_CERT_FILE and TSA_PQ_ROOT_FILE (the ML-DSA-65 certificate of the TSA_PQ_KMS_KEY_ID key and its root) are required with TSA_PQ_KMS_KEY_ID']],
      [{ TSA_POLICY_OID: '1.2', TSA_PQ_POLICY_OID: '1.2' }, ['TSA_PQ_POLICY_OID must differ from TSA_POLICY_OID: the policy is how a request chooses the TSA']],
      [{ LEDGER_NETWORK: 'custom' }, ['LEDGER_RPC_URL is required for LEDGER_NETWORK=custom']],
      [{ LEDGER_PRIVATE_KEY: '0x12' }, ['LEDGER_PRIVATE_KEY must be 32 bytes in hex']],
      [{ LEDGER_MAX_FEE_GWEI: '0.5' }, ['LEDGER_MAX_FEE_GWEI must not be below LEDGER_PRIORITY_FEE_GWEI']],
      [{ TIER_LIMITS: '{' }, ['TIER_LIMITS is not valid JSON']],
      [{ TIER_LIMITS: '[1]' }, ['TIER_LIMITS must be a JSON object keyed by tier']],
      [
        { TIER_LIMITS: '{"free":3,"pro":{"x":1,"monthly_quota":-1}}' },
        [
          'TIER_LIMITS.free must be an object',
          'TIER_LIMITS.pro.x is not a known limit (monthly_quota, rate_per_minute, price_eur_per_month)',
          'TIER_LIMITS.pro.monthly_quota must be a non-negative integer',
        ],
      ],
      [{ PUBLIC_RATE_LIMIT: 'edge' }, ['PUBLIC_RATE_LIMIT=edge needs EDGE_ORIGIN_SECRET (32+ characters)']],
      [{ LEDGER_BATCH_WINDOW_MS: '10001' }, ['LEDGER_BATCH_WINDOW_MS must be at most 10000 (an anchor waits up to one window for its answer), got 10001']],
    ];
    for (const [env, lines] of cases) {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError, JSON.stringify(env));
          assert.deepEqual(error.problems, lines, JSON.stringify(env));
          return true;
        },
      );
    }
  });

  it('gives the AWS defaults once the keys and secrets are named', () => {
    const config = loadConfig({
      DEPLOYMENT: 'aws',
      JWT_SECRET_KMS_CIPHERTEXT: 'c',
      PQ_SIGNER_KMS_KEY_ID: 'k',
      ED25519_SIGNER_KMS_KEY_ID: 'k',
      LEDGER_KMS_KEY_ID: 'k',
      EDGE_ORIGIN_SECRET: 'e'.repeat(32),
    });
    assert.equal(config.jwt.source, 'kms');
    assert.equal(config.signer.scheme, 'kms');
    assert.equal(config.ed25519.scheme, 'kms');
    assert.equal(config.ledger.walletScheme, 'kms');
    assert.equal(config.publicRateLimit, 'edge');
    assert.equal(config.aws.region, 'eu-central-1');
    assert.equal(config.aws.dynamoEndpoint, undefined);
    assert.equal(config.reconcileSafetyScanItems, 0);
    assert.equal(config.tsa.pq, undefined, 'no post-quantum TSA in AWS without TSA_PQ_KMS_KEY_ID');
  });

  it('takes chain id, explorer and fee floor from the Amoy preset', () => {
    const config = loadConfig({
      LEDGER_NETWORK: 'polygon-amoy',
      LEDGER_RPC_URL: 'https://rpc.example.test',
    });
    assert.equal(config.ledger.chainId, 80002);
    assert.equal(config.ledger.explorerTxUrl, 'https://amoy.polygonscan.com/tx/{tx_hash}');
    assert.equal(config.ledger.priorityFeeGwei, 25);
    assert.equal(config.ledger.confirmationTag, 'finalized');
  });
});
