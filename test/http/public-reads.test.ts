/**
 * decisions.md "Limits" and issue 18 item 4: public reads write nothing. Every public GET of the
 * registry is called over real HTTP while every command the process sends to DynamoDB is counted
 * (a middleware on the one document client the functions share): not one write. The per-IP limit
 * of the public reads is counted in memory (PUBLIC_RATE_LIMIT=process) and answers 429 with
 * Retry-After; at the edge (PUBLIC_RATE_LIMIT=edge) the functions count nothing. A final record is
 * verified from its stored finalized receipt with the ledger node unreachable, and `?recheck=1`
 * does ask the chain.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { getReconcileDeps } from '../../lib/deps/anchoring.js';
import { getConfig, getDb, resetCoreDeps } from '../../lib/deps/core.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { recordLedgerFinality } from '../../lib/evidence/ledger-finality.js';
import { isAnchored } from '../../lib/evidence/records.js';
import { reconcileAnchors } from '../../lib/evidence/reconcile.js';
import { forgetFinalRecords } from '../../lib/evidence/verify.js';
import { ROUTES } from '../../lib/http/registry.js';
import { createAccount, Device, json } from '../support/client.js';
import { type HttpService, startHttpService } from '../support/http-server.js';
import { getKeyAuthDeps } from '../../lib/deps/key-auth.js';
import { freePort, useStack } from '../support/stack.js';

let service: HttpService;
let imageHash: string;
let publicKeyHex: string;
let txHash: string;

/** Commands sent to DynamoDB through the shared document client since the last reset. */
const sent: string[] = [];
/** The same commands with the key they name, to tell the record's reads from the process's others. */
const sentKeys: { command: string; key: string }[] = [];
const WRITES = /^(Put|Update|Delete|BatchWrite|TransactWrite)/;

/** Counts every command of the current shared client (call again after resetCoreDeps()). */
function countCommands(): void {
  getDb().middlewareStack.add(
    (next, context) => async (args) => {
      sent.push(String(context.commandName));
      sentKeys.push({ command: String(context.commandName), key: JSON.stringify([(args.input as { Key?: unknown }).Key, (args.input as { ExpressionAttributeValues?: unknown }).ExpressionAttributeValues]) });
      if (process.env.DEBUG_SENT) console.log('SENT', context.commandName, JSON.stringify((args.input as { Key?: unknown }).Key), new Error().stack?.split('\n').slice(2, 14).join(' | '));
      return next(args);
    },
    { step: 'initialize', name: 'countCommandsForTest', override: true },
  );
}

/** Points the service at `env` for the duration of `body` (the shared clients are rebuilt). */
async function withEnv(env: Record<string, string>, body: () => Promise<void>): Promise<void> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  resetCoreDeps();
  countCommands();
  try {
    await body();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    resetCoreDeps();
    countCommands();
  }
}

/** Every public GET route of the registry, its path parameters filled with the anchored record. */
function publicReads(): string[] {
  const values: Record<string, string> = { image_hash: imageHash, public_key_hex: publicKeyHex, tx_hash: txHash, file: 'swagger-ui.css', code: 'rate_limit_exceeded' };
  return ROUTES.filter((r) => r.public && r.method === 'GET').map((r) =>
    r.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const v = values[name];
      assert.ok(v, `no value for {${name}} of ${r.path}`);
      return v;
    }),
  );
}

before(async () => {
  await useStack();
  service = await startHttpService();
  countCommands();
  const { apiKey } = await createAccount('pro');
  const device = new Device();
  const body = device.next();
  const res = await fetch(`${service.url}/api/v2/evidence/anchor`, json(body, { 'x-api-key': apiKey }));
  assert.equal(res.status, 200, await res.clone().text());
  imageHash = body.sha256_hash;
  publicKeyHex = device.publicKeyHex;
  txHash = ((await res.json()) as { tx_hash: string }).tx_hash;
  // The anchor's quota settle waits to ride on a later charge (lib/accounts/limits.ts): send it now,
  // so that it is not taken for a write of the reads below.
  await getKeyAuthDeps().limits.flushSettles();
});

after(() => service.close());

describe('public reads write nothing', () => {
  it('sends no write to DynamoDB for any public GET of the registry, the HTML pages included', async () => {
    const paths = publicReads();
    assert.ok(paths.length >= 20, `${paths.length} public reads`);
    sent.length = 0;
    for (const p of paths) {
      for (const accept of ['application/json', 'text/html']) {
        const res = await fetch(`${service.url}${p}`, { headers: { accept } });
        await res.arrayBuffer();
        assert.ok(res.status < 500, `${p} (${accept}): ${res.status}`);
      }
    }
    assert.ok(sent.length > 0, 'the counter sees the reads (it would see writes too)');
    assert.deepEqual(sent.filter((c) => WRITES.test(c)), []);
  });

  it('counts the writes it is meant to see (an API-key request writes its rate counter)', async () => {
    const { apiKey } = await createAccount('pro');
    sent.length = 0;
    const res = await fetch(`${service.url}/api/v2/evidence/hash`, json({ sha256_hash: 'ab'.repeat(32) }, { 'x-api-key': apiKey }));
    assert.equal(res.status, 200, await res.text());
    assert.ok(sent.some((c) => WRITES.test(c)), `commands: ${sent.join(', ')}`);
    // Its quota hold's settle waits (up to a second) to ride on a next charge: sent out now, so
    // that it is not counted as a write of the public reads the next tests make.
    await getKeyAuthDeps().limits.flushSettles();
  });
});

describe('the per-IP limit of public reads', () => {
  it('is counted in process: 429 rate_limit_exceeded with Retry-After past the budget, and still no write', async () => {
    await withEnv({ PUBLIC_RATE_PER_MINUTE: '5', PUBLIC_RATE_LIMIT: 'process' }, async () => {
      sent.length = 0;
      // At most 5 a minute: within 11 reads one is refused, even if a minute turns over among them.
      let res: Response | undefined;
      for (let i = 0; i < 11; i++) {
        res = await fetch(`${service.url}/api/v2/evidence/verify/${imageHash}`);
        assert.equal(res.headers.get('ratelimit-limit'), '5');
        assert.match(res.headers.get('ratelimit-policy') ?? '', /^"ip";q=5;w=60$/);
        if (res.status === 429) break;
        assert.equal(res.status, 200);
        await res.arrayBuffer();
      }
      assert.ok(res);
      assert.equal(res.status, 429);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      const retryAfter = Number(res.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      assert.equal(res.headers.get('ratelimit-remaining'), '0');
      const problem = (await res.json()) as { code: string; status: number; scope: string };
      assert.equal(problem.code, 'rate_limit_exceeded');
      assert.equal(problem.status, 429);
      assert.equal(problem.scope, 'ip');
      assert.deepEqual(sent.filter((c) => WRITES.test(c)), []);
    });
  });

  it('is left to the edge with PUBLIC_RATE_LIMIT=edge: no count, no RateLimit fields, no 429; a request around the edge is refused', async () => {
    const secret = 'edge-origin-secret-of-this-test-0123456789';
    await withEnv({ PUBLIC_RATE_PER_MINUTE: '2', PUBLIC_RATE_LIMIT: 'edge', EDGE_ORIGIN_SECRET: secret }, async () => {
      sent.length = 0;
      for (let i = 0; i < 4; i++) {
        const res = await fetch(`${service.url}/api/v2/evidence/receipt/${imageHash}`, { headers: { 'x-edge-origin': secret, 'cloudfront-viewer-address': '203.0.113.7:50123' } });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('ratelimit-limit'), null);
        await res.arrayBuffer();
      }
      assert.deepEqual(sent.filter((c) => WRITES.test(c)), []);
      for (const headers of [{}, { 'x-edge-origin': `${secret}x` }] as Record<string, string>[]) {
        const around = await fetch(`${service.url}/api/v2/evidence/receipt/${imageHash}`, { headers });
        assert.equal(around.status, 403);
        assert.equal(((await around.json()) as { code: string }).code, 'edge_required');
      }
    });
  });
});

describe('a final record', () => {
  it('is verified from its stored finalized receipt with the ledger node unreachable; recheck=1 asks the chain', async () => {
    // The anchor's own write stored the final receipt (on the automining chain, mined is final);
    // a reconciler pass after it finds nothing to add.
    await reconcileAnchors(await getReconcileDeps(), { fullScan: true });
    const item = await getEvidenceRepo().get(imageHash);
    assert.ok(isAnchored(item));
    const final = item.ledger_final;
    assert.ok(final, 'the final receipt is stored');
    assert.equal(final.block_number, item.block_number);
    assert.equal(final.from, item.ledger_address.toLowerCase());
    assert.equal(final.finality, getConfig().ledger.confirmationTag);
    assert.ok(final.confirmations >= 1);
    assert.ok(Date.parse(final.block_time) > 0);

    const deadPort = await freePort();
    await withEnv({ LEDGER_RPC_URL: `http://127.0.0.1:${deadPort}` }, async () => {
      forgetFinalRecords();
      sentKeys.length = 0;
      // This record's commands only: the process's own background work (a wallet read of the
      // local signer, a settle) may interleave under load and is not the verify's.
      const recordCommands = () => sentKeys.filter((c) => c.key.includes(imageHash)).map((c) => c.command);
      const res = await fetch(`${service.url}/api/v2/evidence/verify/${imageHash}`);
      const body = (await res.json()) as Record<string, unknown>;
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.verified, true);
      assert.equal(body.has_blockchain, true);
      assert.equal(body.ledger_final, true);
      assert.equal(body.confirmations, final.confirmations);
      assert.equal(body.block_time, final.block_time);
      assert.equal(body.block_number, final.block_number);
      // One strongly consistent read of the record per verify, and no chain read: a final record
      // is judged from its stored receipt, and from the bytes as they stand now.
      assert.deepEqual(recordCommands(), ['GetItemCommand']);
      const again = await fetch(`${service.url}/api/v2/evidence/verify/${imageHash}`);
      assert.equal(again.status, 200);
      assert.equal(((await again.json()) as { verified: boolean }).verified, true);
      assert.deepEqual(recordCommands(), ['GetItemCommand', 'GetItemCommand']);

      const v1 = await fetch(`${service.url}/api/v1/chain/verify/${imageHash}`);
      assert.equal(v1.status, 200);
      assert.equal(((await v1.json()) as { ledger_verified: boolean }).ledger_verified, true);
      const ledger = await fetch(`${service.url}/api/v1/ledger/verify/${imageHash}`);
      assert.equal(ledger.status, 200);
      assert.equal(((await ledger.json()) as { confirmations: number }).confirmations, final.confirmations);

      // recheck=1: the chain is asked (and is unreachable here): 503, never a verdict from the store.
      const recheck = await fetch(`${service.url}/api/v2/evidence/verify/${imageHash}?recheck=1`);
      assert.equal(recheck.status, 503);
      assert.equal(((await recheck.json()) as { code: string }).code, 'ledger_unavailable');
    });
    // With the node back, recheck=1 reads it and agrees; the answer is the live one.
    const live = await fetch(`${service.url}/api/v2/evidence/verify/${imageHash}?recheck=1`);
    const body = (await live.json()) as Record<string, unknown>;
    assert.equal(live.status, 200);
    assert.equal(body.verified, true);
    // Final stays final (docs/verify-without-us.md "What the verdict means"); the confirmations are counted now.
    assert.equal(body.ledger_final, true);
    assert.equal(body.ledger_final_since, final.recorded_at);
    assert.ok(Number(body.confirmations) >= final.confirmations);
    assert.equal(body.ledger_checked_at, undefined, 'counted for this answer: as of its Date header');
    assert.ok(Date.parse(live.headers.get('date') ?? '') >= Date.parse(final.recorded_at) - 1000);
  });

  it('is recorded once: a second recording finds it there and writes nothing new', async () => {
    const item = await getEvidenceRepo().get(imageHash);
    assert.ok(isAnchored(item) && item.ledger_final);
    const deps = await getReconcileDeps();
    assert.ok(deps.finality);
    assert.equal(await recordLedgerFinality({ repo: deps.repo, finality: deps.finality }, item, new Date()), 'already');
    const stale = { ...item, ledger_final: undefined };
    assert.equal(await recordLedgerFinality({ repo: deps.repo, finality: deps.finality }, stale, new Date()), 'already');
    const after = await getEvidenceRepo().get(imageHash);
    assert.deepEqual(after?.ledger_final, item.ledger_final);
  });
});
