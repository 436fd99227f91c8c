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
