/**
 * decisions.md "Faults and retries": every public read answers 200 (or its documented 404), or 503
 * problem+json naming the dependency that is down, never another 5xx, and never an internal
 * address or an SDK message. The dependencies are stopped for real: a chain node and a DynamoDB
 * server of this file's own, started, used, then stopped while the service still points at them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { getConfig, getDb, resetCoreDeps } from '../../lib/deps/core.js';
import { startLocalChain } from '../../lib/local/chain.js';
import { startEmbeddedDynamo } from '../../lib/local/dynamo-server.js';
import { createDocumentClient } from '../../lib/store/dynamo.js';
import { ensureTables } from '../../lib/store/tables.js';
import { createAccount, Device, json } from '../support/client.js';
import { type HttpService, startHttpService } from '../support/http-server.js';
import { freePort, useStack } from '../support/stack.js';

let service: HttpService;
let imageHash: string;
let publicKeyHex: string;
let txHash: string;
/** A record whose final receipt is stored: its verify reads no chain. */
let finalHash: string;

before(async () => {
  await useStack();
  service = await startHttpService();
  const { apiKey } = await createAccount('pro');
  const device = new Device();
  const body = device.next();
  const res = await fetch(`${service.url}/api/v2/evidence/anchor`, json(body, { 'x-api-key': apiKey }));
  assert.equal(res.status, 200, await res.clone().text());
  imageHash = body.sha256_hash;
  publicKeyHex = device.publicKeyHex;
  txHash = ((await res.json()) as { tx_hash: string }).tx_hash;
  assert.match(txHash, /^0x[0-9a-f]{64}$/);
  // The local chain's rule makes an anchor final in its own write; under the `finalized` rule
  // (Polygon) a record is confirmed but not yet final for a while, and its readers ask the chain.
  // This record is made such a one, so that the reads that ask the chain are the ones under test.
  await getDb().send(new UpdateCommand({ TableName: getConfig().tables.evidence, Key: { image_hash: imageHash }, UpdateExpression: 'REMOVE ledger_final' }));
  const other = new Device().next();
  const anchoredFinal = await fetch(`${service.url}/api/v2/evidence/anchor`, json(other, { 'x-api-key': apiKey }));
  assert.equal(anchoredFinal.status, 200, await anchoredFinal.clone().text());
  finalHash = other.sha256_hash;
});

after(() => service.close());

/** The public reads, each with the dependencies it reads. */
function reads(): { name: string; path: string; accept?: string; ledger: boolean; database: boolean }[] {
  return [
    { name: 'v2 verify', path: `/api/v2/evidence/verify/${imageHash}`, ledger: true, database: true },
    { name: 'v2 verify of a final record (its stored receipt)', path: `/api/v2/evidence/verify/${finalHash}`, ledger: false, database: true },
    { name: 'v2 verify of a final record, asking the chain again', path: `/api/v2/evidence/verify/${finalHash}?recheck=1`, ledger: true, database: true },
    { name: 'v2 receipt', path: `/api/v2/evidence/receipt/${imageHash}`, ledger: false, database: true },
    { name: 'v1 chain verify', path: `/api/v1/chain/verify/${imageHash}`, ledger: true, database: true },
    { name: 'v1 chain all', path: `/api/v1/chain/all/${publicKeyHex}`, ledger: false, database: true },
    { name: 'v1 ledger verify', path: `/api/v1/ledger/verify/${imageHash}`, ledger: true, database: true },
    { name: 'v1 ledger status', path: '/api/v1/ledger/status', ledger: true, database: true },
    { name: 'v1 pq verify', path: `/api/v1/pq/verify/${imageHash}`, ledger: false, database: true },
    { name: 'v1 stats', path: '/api/v1/stats', ledger: false, database: true },
    { name: 'verify page (JSON)', path: `/verify/${imageHash}`, accept: 'application/json', ledger: true, database: true },
    { name: 'ledger tx page (JSON)', path: `/ledger/tx/${txHash}`, accept: 'application/json', ledger: true, database: false },
  ];
}

/** Points the service at `env` for the duration of `body`. */
async function withEnv(env: Record<string, string>, body: () => Promise<void>): Promise<void> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  resetCoreDeps();
  try {
    await body();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    resetCoreDeps();
  }
}

async function assertUnavailable(name: string, res: Response, codes: string[], deadPort: number) {
  const text = await res.text();
  assert.equal(res.status, 503, `${name}: ${res.status} ${text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, name);
  assert.ok(res.headers.get('retry-after'), `${name}: Retry-After`);
  const problem = JSON.parse(text) as { status: number; code: string; detail: string; type: string };
  assert.equal(problem.status, 503, name);
  assert.ok(codes.includes(problem.code), `${name}: code ${problem.code}`);
  // `type` is the service's own public address (PUBLIC_BASE_URL, 127.0.0.1 in these tests): the
  // rest of the answer must name no address at all.
  assert.equal(problem.type, `${getConfig().publicBaseUrl}/problems/${problem.code}`, name);
  const rest = JSON.stringify({ ...problem, type: undefined });
  for (const leak of ['127.0.0.1', 'localhost', 'ECONNREFUSED', String(deadPort), 'fetch failed', 'connect ']) {
    assert.ok(!rest.includes(leak), `${name} leaks "${leak}": ${text}`);
  }
}

describe('public reads with the ledger node down', () => {
  it('answer 503 ledger_unavailable where they read the chain, 200 where they do not, and the page is a 503 page', async (t) => {
    const port = await freePort();
    const chain = await startLocalChain({
      port,
      blockTimeMs: 0,
      chainId: getConfig().ledger.chainId,
      accounts: [],
      logFile: path.join(mkdtempSync(path.join(os.tmpdir(), 'read-fault-chain-')), 'chain.log'),
    });
    // A failed assertion must not leave the node running (it would keep this file's process alive).
    t.after(() => chain.stop());
    await withEnv({ LEDGER_RPC_URL: chain.url }, async () => {
      // Up: the node answers (it does not know the transaction, which is a verdict, not a fault).
      const up = await fetch(`${service.url}/api/v2/evidence/verify/${imageHash}`);
      assert.equal(up.status, 200);
      assert.equal(((await up.json()) as { verified: boolean }).verified, false);

      await chain.stop();
      for (const read of reads()) {
        const res = await fetch(`${service.url}${read.path}`, { headers: read.accept ? { accept: read.accept } : {} });
        if (read.ledger) await assertUnavailable(read.name, res, ['ledger_unavailable'], port);
        else assert.equal(res.status, 200, `${read.name}: ${await res.text()}`);
      }
      const page = await fetch(`${service.url}/verify/${imageHash}`, { headers: { accept: 'text/html' } });
      assert.equal(page.status, 503);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.doesNotMatch(await page.text(), /ECONNREFUSED|127\.0\.0\.1:\d+[^/]/);
    });
  });
});

describe('public reads with DynamoDB down', () => {
  it('answer 503 database_unavailable where they read the tables, 200 where they do not, and the page is a 503 page', async () => {
    const dynamo = await startEmbeddedDynamo();
    const port = Number(new URL(dynamo.endpoint).port);
    const db = createDocumentClient({ region: getConfig().aws.region, endpoint: dynamo.endpoint });
    await ensureTables(db, getConfig().tables);
    db.destroy();
    await withEnv({ DYNAMODB_ENDPOINT: dynamo.endpoint }, async () => {
      // Up: an empty database answers (the hash is unknown there).
      const up = await fetch(`${service.url}/api/v2/evidence/verify/${imageHash}`);
      assert.equal(up.status, 404);
      assert.equal((await fetch(`${service.url}/api/v1/stats`)).status, 200);

      await dynamo.stop();
      for (const read of reads()) {
        const res = await fetch(`${service.url}${read.path}`, { headers: read.accept ? { accept: read.accept } : {} });
        // The wallet status reads the ledger sender's records, which its adapter reports as the ledger's.
        const codes = read.name === 'v1 ledger status' ? ['database_unavailable', 'ledger_unavailable'] : ['database_unavailable'];
        // The per-IP limit of public reads is counted in memory (or at the edge), never in
        // DynamoDB: a read that needs no table, the ledger-only transaction page, still answers.
        if (read.database) await assertUnavailable(read.name, res, codes, port);
        else assert.equal(res.status, 200, `${read.name}: ${await res.text()}`);
      }
      const page = await fetch(`${service.url}/verify/${imageHash}`, { headers: { accept: 'text/html' } });
      assert.equal(page.status, 503);
      assert.match(await page.text(), /cannot be read right now/);
    });
  });
});
