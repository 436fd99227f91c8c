import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { useStack } from '../support/stack.js';
import { createAccount, Device, json, randomHash } from '../support/client.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { getConfig, getDb, resetCoreDeps } from '../../lib/deps/core.js';
import { RpcReader } from '../../lib/ledger/rpc-reader.js';
import { loadV1Apps, v1Body, type V1Apps } from './support.js';
import { drainChangeFeed } from '../support/change-feed.js';

let v1: V1Apps;
let hashApp: typeof import('../../functions/v2/evidence-hash.js').app;
let pro: Awaited<ReturnType<typeof createAccount>>;

before(async () => {
  await useStack();
  v1 = await loadV1Apps();
  hashApp = (await import('../../functions/v2/evidence-hash.js')).app;
  pro = await createAccount('pro');
});

async function anchorNew(device = new Device()) {
  const body = v1Body(device, randomHash(), { device_id: 'tablet-7' });
  const res = await v1.anchor.request('/api/v1/chain/anchor', json(body, { 'x-api-key': pro.apiKey }));
  assert.equal(res.status, 201, await res.clone().text());
  return { body, result: (await res.json()) as { tx_hash: string; pq_signature: string; anchored_at: string } };
}

async function registerOnly(): Promise<string> {
  const hash = randomHash();
  const res = await hashApp.request('/api/v2/evidence/hash', json({ sha256_hash: hash }, { 'x-api-key': pro.apiKey }));
  assert.equal(res.status, 200);
  return hash;
}

const get = async <T>(app: { request(url: string): Response | Promise<Response> }, url: string) => {
  const res = await app.request(url);
  return { status: res.status, body: (await res.json()) as T, headers: res.headers };
};

describe('GET /api/v1/chain/verify/{image_hash}', () => {
  it('answers every documented field, each check computed now', async () => {
    const { body, result } = await anchorNew();
    const { status, body: v } = await get<Record<string, unknown>>(v1.verify, `/api/v1/chain/verify/${body.image_hash}`);
    assert.equal(status, 200);
    for (const field of ['found', 'chain_index', 'chain_hash', 'pq_verified', 'tx_hash', 'tx_status', 'anchored_at', 'public_key_hex']) {
      assert.ok(field in v, `missing ${field}`);
    }
    assert.equal(v.found, true);
    assert.equal(v.chain_index, 0);
    assert.equal(v.chain_hash, body.chain_hash);
    assert.equal(v.pq_verified, true);
    assert.equal(v.chain_verified, true);
    assert.equal(v.timestamp_verified, true);
    assert.equal(v.ledger_verified, true);
    assert.equal(v.verified, true);
    assert.equal(v.tx_hash, result.tx_hash);
    assert.equal(v.tx_status, 'confirmed');
    assert.equal(v.anchored_at, result.anchored_at);
    assert.equal(v.public_key_hex, body.public_key_hex);
    assert.equal(v.device_id, 'tablet-7');
  });

  it('answers 404 found:false for an unknown hash', async () => {
    const { status, body } = await get<{ found: boolean }>(v1.verify, `/api/v1/chain/verify/${randomHash()}`);
    assert.equal(status, 404);
    assert.equal(body.found, false);
  });

  it('answers 200 found:false registered:true for a hash registered through v2 but not anchored', async () => {
    const hash = await registerOnly();
    const { status, body } = await get<{ found: boolean; registered: boolean; registered_at: string; pq_verified: boolean }>(v1.verify, `/api/v1/chain/verify/${hash}`);
    assert.equal(status, 200);
    assert.equal(body.found, false);
    assert.equal(body.registered, true);
    assert.equal(body.pq_verified, false);
    assert.match(body.registered_at, /Z$/);
  });

  it('answers 400 for a malformed hash', async () => {
    assert.equal((await v1.verify.request('/api/v1/chain/verify/1234')).status, 400);
  });
});

describe('GET /api/v1/pq/info', () => {
  it('describes ML-DSA-65 and the public key that signs the evidence', async () => {
    const { status, body } = await get<Record<string, unknown> & { public_key: string; sizes: Record<string, number> }>(v1.pqInfo, '/api/v1/pq/info');
    assert.equal(status, 200);
    assert.equal(body.algorithm, 'ML-DSA-65');
    assert.equal(body.standard, 'FIPS 204');
    assert.equal(body.security_category, 3);
    const key = Buffer.from(body.public_key, 'base64');
    assert.equal(key.length, 1952);
    assert.equal(body.fingerprint, sha256Hex(key));
    assert.equal(body.key_id, `mldsa65:${sha256Hex(key).slice(0, 16)}`);
    assert.deepEqual(body.sizes, { public_key: 1952, signature: 3309, secret_key: 4032 });
  });
});

describe('GET /api/v1/pq/verify/{image_hash}', () => {
  it('re-verifies the stored signature and recomputes server_hash from the statement', async () => {
    const { body, result } = await anchorNew();
    const { status, body: v } = await get<Record<string, unknown> & { statement: string; server_hash: string }>(v1.pqVerify, `/api/v1/pq/verify/${body.image_hash}`);
    assert.equal(status, 200);
    assert.equal(v.verified, true);
    assert.equal(v.signature_valid, true);
    assert.equal(v.key_trusted, true);
    assert.equal(v.statement_matches, true);
    assert.equal(v.server_hash, sha256Hex(v.statement));
    assert.equal(v.server_hash_recomputed, v.server_hash);
    assert.equal(v.pq_signature, result.pq_signature);
  });

  it('says not verified when the stored signature was altered, and chain/verify agrees', async () => {
    const { body, result } = await anchorNew();
    const sig = Buffer.from(result.pq_signature, 'base64');
    sig[100] = (sig[100] ?? 0) ^ 0x01;
    await getDb().send(
      new UpdateCommand({
        TableName: getConfig().tables.evidence,
        Key: { image_hash: body.image_hash },
        UpdateExpression: 'SET pq_signature = :s',
        ExpressionAttributeValues: { ':s': sig.toString('base64') },
      }),
    );
    const pq = await get<{ verified: boolean; signature_valid: boolean; statement_matches: boolean }>(v1.pqVerify, `/api/v1/pq/verify/${body.image_hash}`);
    assert.equal(pq.body.verified, false);
    assert.equal(pq.body.signature_valid, false);
    assert.equal(pq.body.statement_matches, true);
    const chain = await get<{ pq_verified: boolean; verified: boolean }>(v1.verify, `/api/v1/chain/verify/${body.image_hash}`);
    assert.equal(chain.body.pq_verified, false);
    assert.equal(chain.body.verified, false);
  });

  it('answers 404 found:false for an unknown hash and 200 found:false for a registered one', async () => {
    assert.equal((await v1.pqVerify.request(`/api/v1/pq/verify/${randomHash()}`)).status, 404);
    const registered = await get<{ found: boolean; registered: boolean }>(v1.pqVerify, `/api/v1/pq/verify/${await registerOnly()}`);
    assert.equal(registered.status, 200);
    assert.deepEqual([registered.body.found, registered.body.registered], [false, true]);
  });
});

describe('GET /api/v1/ledger/verify/{image_hash}', () => {
  it('reads the transaction from the chain and checks its input data and confirmations', async () => {
    const { body, result } = await anchorNew();
    const { status, body: v } = await get<Record<string, unknown> & { expected_input_data: string; confirmations: number }>(
      v1.ledgerVerify,
      `/api/v1/ledger/verify/${body.image_hash}`,
    );
    assert.equal(status, 200);
    assert.equal(v.verified, true);
    assert.equal(v.tx_hash, result.tx_hash);
    assert.equal(v.tx_status, 'confirmed');
    assert.equal(v.data_matches, true);
    assert.ok(v.confirmations >= 1);
    const tx = await new RpcReader(getConfig().ledger.rpcUrl).getTransaction(result.tx_hash);
    assert.equal(tx?.input, v.expected_input_data);
    assert.ok(v.expected_input_data.startsWith(`0x${body.image_hash}`));
    assert.equal(v.from, v.expected_from);
  });

  it('answers 404 found:false for an unknown hash and 200 found:false for a registered one', async () => {
    assert.equal((await v1.ledgerVerify.request(`/api/v1/ledger/verify/${randomHash()}`)).status, 404);
    const registered = await get<{ found: boolean; registered: boolean }>(v1.ledgerVerify, `/api/v1/ledger/verify/${await registerOnly()}`);
    assert.equal(registered.status, 200);
    assert.deepEqual([registered.body.found, registered.body.registered], [false, true]);
  });
});

describe('GET /api/v1/stats', () => {
  it('counts a new device, an anchor, its transaction and a registration once their changes are applied, with no account data', async () => {
    const before = (await get<{ totals: Record<string, number>; last_24h: Record<string, number> }>(v1.stats, '/api/v1/stats')).body;
    await anchorNew();
    await registerOnly();
    await drainChangeFeed(); // the statistics are derived from the evidence table's changes
    const { status, body: after } = await get<{ totals: Record<string, number>; last_24h: Record<string, number> }>(v1.stats, '/api/v1/stats');
    assert.equal(status, 200);
    for (const field of ['anchored', 'devices', 'transactions', 'registered']) {
      assert.ok((after.totals[field] ?? 0) >= (before.totals[field] ?? 0) + 1, `totals.${field}`);
      assert.ok((after.last_24h[field] ?? 0) >= (before.last_24h[field] ?? 0) + 1, `last_24h.${field}`);
    }
    assert.deepEqual(Object.keys(after).sort(), ['as_of', 'last_24h', 'last_24h_since', 'totals']);
  });
});

describe('GET /api/v1/health', () => {
  it('answers 200 when every part is up', async () => {
    const { status, body } = await get<{ status: string }>(v1.health, '/api/v1/health');
    assert.equal(status, 200);
    assert.equal(body.status, 'ok');
  });

  it('counts against the per-address limit of the public endpoints', async () => {
    const res = await v1.health.request('/api/v1/health');
    assert.equal(res.headers.get('ratelimit-limit'), process.env.PUBLIC_RATE_PER_MINUTE);
    assert.ok(Number(res.headers.get('ratelimit-remaining')) < Number(process.env.PUBLIC_RATE_PER_MINUTE));
  });
});

describe('GET /api/v1/ledger/status', () => {
  it('shows the network, wallet, balance, latest block and no warning for a funded wallet', async () => {
    const { status, body } = await get<Record<string, unknown> & { balance_wei: string; latest_block: number }>(v1.ledgerStatus, '/api/v1/ledger/status');
    assert.equal(status, 200);
    assert.equal(body.network, 'local');
    assert.equal(body.chain_id, 31337);
    assert.match(body.wallet_address as string, /^0x[0-9a-f]{40}$/);
    assert.equal(body.balance_wei, String(BigInt(body.balance_wei)));
    assert.ok(BigInt(body.balance_wei) > 0n);
    assert.ok(body.latest_block >= 1);
    assert.equal(typeof body.pending_transactions, 'number');
    assert.equal(body.low_balance, false);
    assert.equal(body.warning, null);
  });

  it('warns when the balance is below the configured threshold', async () => {
    const previous = process.env.LEDGER_LOW_BALANCE_WEI;
    process.env.LEDGER_LOW_BALANCE_WEI = (10n ** 40n).toString();
    resetCoreDeps();
    try {
      const { body } = await get<{ low_balance: boolean; warning: string | null; low_balance_threshold_wei: string }>(v1.ledgerStatus, '/api/v1/ledger/status');
      assert.equal(body.low_balance, true);
      assert.equal(body.low_balance_threshold_wei, (10n ** 40n).toString());
      assert.match(body.warning ?? '', /below the threshold/);
    } finally {
      if (previous === undefined) delete process.env.LEDGER_LOW_BALANCE_WEI;
      else process.env.LEDGER_LOW_BALANCE_WEI = previous;
      resetCoreDeps();
    }
  });
});
