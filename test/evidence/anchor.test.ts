import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { useStack } from '../support/stack.js';
import { createAccount, Device, json, randomHash } from '../support/client.js';
import { verifyMlDsa65 } from '../../lib/crypto/ml-dsa.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { encodeAnchorData } from '../../lib/ledger/anchor-data.js';

type Anchor = Record<string, unknown> & { tx_hash: string; server_hash: string; ledgerscan_url: string };

let apps: {
  anchor: typeof import('../../functions/v2/evidence-anchor.js').app;
  full: typeof import('../../functions/v2/evidence-full.js').app;
  verify: typeof import('../../functions/v2/evidence-verify.js').app;
  receipt: typeof import('../../functions/v2/evidence-receipt.js').app;
  hash: typeof import('../../functions/v2/evidence-hash.js').app;
};
let pro: Awaited<ReturnType<typeof createAccount>>;

before(async () => {
  await useStack();
  apps = {
    anchor: (await import('../../functions/v2/evidence-anchor.js')).app,
    full: (await import('../../functions/v2/evidence-full.js')).app,
    verify: (await import('../../functions/v2/evidence-verify.js')).app,
    receipt: (await import('../../functions/v2/evidence-receipt.js')).app,
    hash: (await import('../../functions/v2/evidence-hash.js')).app,
  };
  pro = await createAccount('pro');
});

const anchor = (body: unknown, key = pro.apiKey, app = apps.anchor, path = '/api/v2/evidence/anchor') =>
  app.request(path, json(body, { 'x-api-key': key }));

describe('POST /api/v2/evidence/anchor', () => {
  it('anchors a signed hash with exactly the documented fields and a working explorer link', async () => {
    const device = new Device();
    const body = device.next();
    const res = await anchor(body);
    assert.equal(res.status, 200, await res.clone().text());
    const result = (await res.json()) as Anchor;
    assert.deepEqual(Object.keys(result).sort(), [
      'anchored_at', 'blockchain_anchored', 'has_timestamp', 'image_hash', 'ledgerscan_url', 'pq_algorithm', 'pq_signed', 'server_hash', 'status', 'tx_hash',
    ]);
    assert.equal(result.status, 'anchored');
    assert.equal(result.image_hash, body.sha256_hash);
    assert.equal(result.pq_algorithm, 'ML-DSA-65');
    assert.equal(result.blockchain_anchored, true);
    assert.match(result.tx_hash, /^0x[0-9a-f]{64}$/);
    assert.equal(result.ledgerscan_url, `${process.env.PUBLIC_BASE_URL ?? 'http://127.0.0.1:3000'}/ledger/tx/${result.tx_hash}`);
    // The local chain's rule (`latest`: mined is final): the anchor write stored its final receipt,
    // the transaction as the chain holds it, so the record is off the unfinished index already.
    const stored = await getEvidenceRepo().get(body.sha256_hash);
    assert.equal(stored?.pending_shard, undefined);
    assert.equal(stored?.ledger_final?.tx_hash, result.tx_hash);
    assert.equal(stored?.ledger_final?.finality, 'latest');
    assert.equal(stored?.ledger_final?.input_data, encodeAnchorData(body.sha256_hash, result.server_hash));
  });

  it('answers /evidence/full exactly like /evidence/anchor', async () => {
    const device = new Device();
    const res = await anchor(device.next(), pro.apiKey, apps.full, '/api/v2/evidence/full');
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(((await res.json()) as Anchor).status, 'anchored');
  });

  it('produces a receipt whose proofs verify independently: statement, ML-DSA-65 and openssl ts -verify', async () => {
    const device = new Device();
    const photo = Buffer.from(`photo bytes ${randomHash()}`);
    const body = device.next(sha256Hex(photo));
    assert.equal((await anchor(body)).status, 200);

    const res = await apps.receipt.request(`/api/v2/evidence/receipt/${body.sha256_hash}`);
    assert.equal(res.status, 200);
    const receipt = (await res.json()) as {
      server_hash: string;
      statement_canonical: string;
      pq_signature: { public_key: string; signature: string };
      timestamp: { token: string; tsa_certificates: string[] };
      ledger: { tx_hash: string; chain_id: number };
      device: { public_key_hex: string; signature_hex: string };
    };
    assert.equal(sha256Hex(receipt.statement_canonical), receipt.server_hash);
    assert.ok(
      verifyMlDsa65(Buffer.from(receipt.pq_signature.signature, 'base64'), Buffer.from(receipt.server_hash, 'hex'), Buffer.from(receipt.pq_signature.public_key, 'base64')),
    );
    const dir = mkdtempSync(path.join(os.tmpdir(), 'receipt-'));
    writeFileSync(path.join(dir, 'photo.jpg'), photo);
    writeFileSync(path.join(dir, 'token.tsr'), Buffer.from(receipt.timestamp.token, 'base64'));
    const certs = receipt.timestamp.tsa_certificates;
    writeFileSync(path.join(dir, 'root.pem'), certs[certs.length - 1] ?? '');
    const out = execFileSync('openssl', ['ts', '-verify', '-data', path.join(dir, 'photo.jpg'), '-in', path.join(dir, 'token.tsr'), '-CAfile', path.join(dir, 'root.pem')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    assert.match(out, /Verification: OK/);
  });

  it('lets exactly one of 50 concurrent anchors of one hash win; the others get 409', async () => {
    const imageHash = randomHash();
    const bodies = Array.from({ length: 50 }, () => new Device().next(imageHash));
    const statuses = await Promise.all(bodies.map(async (b) => {
      const res = await anchor(b);
      const text = await res.text();
      return { status: res.status, code: res.status === 409 ? (JSON.parse(text) as { code: string }).code : undefined };
    }));
    assert.equal(statuses.filter((s) => s.status === 200).length, 1, JSON.stringify(statuses.filter((s) => s.status !== 409 && s.status !== 200)));
    assert.equal(statuses.filter((s) => s.status === 409 && s.code === "hash_already_anchored").length, 49, JSON.stringify(statuses.filter((s) => s.code !== "hash_already_anchored" && s.status !== 200)));
  });
});

describe('GET /api/v2/evidence/verify/{image_hash}', () => {
  it('says verified for an anchored hash, computed from the proofs', async () => {
    const device = new Device();
    const body = device.next();
    const anchored = (await (await anchor(body)).json()) as Anchor;
    const res = await apps.verify.request(`/api/v2/evidence/verify/${body.sha256_hash.toUpperCase()}`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('cache-control') ?? '', /max-age=\d+/);
    const v = (await res.json()) as Record<string, unknown>;
    assert.equal(v.verified, true);
    assert.equal(v.has_pq_signature, true);
    assert.equal(v.has_blockchain, true);
    assert.equal(v.ledger_tx, anchored.tx_hash);
    assert.equal(v.chain_hash, body.chain_hash);
    assert.equal(v.chain_index, 0);
  });

  it('answers 404 verified:false for an unknown hash and 200 verified:false for a registered one', async () => {
    const unknown = await apps.verify.request(`/api/v2/evidence/verify/${randomHash()}`);
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { verified: boolean }).verified, false);

    const h = randomHash();
    const reg = await apps.hash.request('/api/v2/evidence/hash', json({ sha256_hash: h }, { 'x-api-key': pro.apiKey }));
    assert.equal(reg.status, 200);
    const registered = await apps.verify.request(`/api/v2/evidence/verify/${h}`);
    assert.equal(registered.status, 200);
    assert.equal(((await registered.json()) as { verified: boolean }).verified, false);
  });
});
