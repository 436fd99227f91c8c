import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { formatReport } from '../../lib/cli/receipt-report.js';
import { type ReceiptVerification, verifyReceipt } from '../../lib/cli/verify-receipt.js';
import { mlDsaPublicKeyFingerprint } from '../../lib/crypto/ml-dsa.js';
import { RpcReader } from '../../lib/ledger/rpc-reader.js';
import { type HttpService, startHttpService } from '../support/http-server.js';
import { createAccount, Device, json, randomHash } from '../support/client.js';
import { useStack } from '../support/stack.js';

/**
 * Batch mode end to end (LEDGER_BATCH_WINDOW_MS > 0) through the public API: anchors of one window
 * answer with every documented field and the batch's transaction; their receipts carry the leaf
 * index, the inclusion path and the root; the offline verifier (library and bin/evidence.mjs), v1 and
 * v2 verify and the verify page check the path, and one flipped bit in it fails them.
 */

const WINDOW_MS = 2000;
const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'evidence.mjs');

interface Receipt {
  image_hash: string;
  pq_signature: { public_key: string };
  ledger: { tx_hash: string; from: string; input_data: string; merkle?: { leaf_index: number; tree_size: number; path: string[]; root: string; leaf_hash: string } };
}

let env: Record<string, string>;
let pro: Awaited<ReturnType<typeof createAccount>>;
let rpc: RpcReader;
let rootPem: string;
let photos: Buffer[];
let receipts: Receipt[];
let anchors: Record<string, unknown>[];
let service: HttpService | undefined;

const apps = async () => ({
  anchor: (await import('../../functions/v2/evidence-anchor.js')).app,
  receipt: (await import('../../functions/v2/evidence-receipt.js')).app,
  verify: (await import('../../functions/v2/evidence-verify.js')).app,
  v1Verify: (await import('../../functions/v1/ledger-verify.js')).app,
  page: (await import('../../functions/web/verify-page.js')).app,
  certificate: (await import('../../functions/v2/evidence-certificate.js')).app,
  explorer: (await import('../../functions/web/ledger-tx.js')).app,
});

before(async () => {
  process.env.LEDGER_BATCH_WINDOW_MS = String(WINDOW_MS);
  env = await useStack();
  process.env.LEDGER_BATCH_WINDOW_MS = String(WINDOW_MS);
  assert.equal(getConfig().ledger.batchWindowMs, WINDOW_MS);
  pro = await createAccount('pro');
  rpc = new RpcReader(env.LEDGER_RPC_URL ?? '');
  rootPem = await readFile(path.join(env.DATA_DIR ?? '', 'tsa', 'root.pem'), 'utf8');
  const { anchor, receipt } = await apps();
  // Four photos in one window, sent at a window's start. Windows are aligned to the clock, so on a
  // loaded machine the four can still straddle its end (two transactions): the four are then sent
  // again, as new photos, at the next window's start (a bounded number of times).
  for (let attempt = 0; attempt < 6 && new Set(anchors?.map((a) => a.tx_hash)).size !== 1; attempt++) {
    await new Promise((r) => setTimeout(r, WINDOW_MS - (Date.now() % WINDOW_MS) + 5));
    photos = Array.from({ length: 4 }, () => Buffer.from(`batched photo ${randomHash()}`));
    anchors = await Promise.all(
      photos.map(async (photo) => {
        const res = await anchor.request('/api/v2/evidence/anchor', json(new Device().next(sha256Hex(photo)), { 'x-api-key': pro.apiKey }));
        assert.equal(res.status, 200, await res.clone().text());
        return (await res.json()) as Record<string, unknown>;
      }),
    );
  }
  receipts = await Promise.all(
    photos.map(async (photo) => {
      const r = await receipt.request(`/api/v2/evidence/receipt/${sha256Hex(photo)}`);
      assert.equal(r.status, 200);
      return (await r.json()) as Receipt;
    }),
  );
});

after(async () => {
  await service?.close();
});

const failed = (r: ReceiptVerification) => [...(r.verdict?.failed ?? [])].sort();
const state = (r: ReceiptVerification, proof: 'merkle' | 'ledger') => r.verdict?.proofs[proof].state;
/** The offline verifier with every trust anchor pinned (the service's root, ML-DSA-65 key and wallet) and the chain read. */
const verify = (receipt: Receipt, photo: Buffer) =>
  verifyReceipt({
    receipt,
    subject: { kind: 'file', name: 'photo.jpg', sha256: sha256Hex(photo) },
    rootsPem: [rootPem],
    pqRootsPem: [readFileSync(path.join(env.DATA_DIR ?? '', 'tsa', 'pq-root.pem'), 'utf8')],
    pqKeyFingerprints: [mlDsaPublicKeyFingerprint(Buffer.from((receipts[0] as Receipt).pq_signature.public_key, 'base64'))],
    wallets: [(receipts[0] as Receipt).ledger.from],
    ledger: rpc,
  });

function flipHex(hex: string, charIndex: number): string {
  const c = hex[charIndex] ?? '0';
  return hex.slice(0, charIndex) + (c === '0' ? '1' : '0') + hex.slice(charIndex + 1);
}

describe('batch mode through the API and the verifiers', () => {
  it('answers each anchor with every documented field and one shared transaction; the receipts carry index, path and root', () => {
    for (const a of anchors) {
      assert.deepEqual(Object.keys(a).sort(), [
        'anchored_at', 'blockchain_anchored', 'has_timestamp', 'image_hash', 'ledgerscan_url', 'pq_algorithm', 'pq_signed', 'server_hash', 'status', 'tx_hash',
      ]);
    }
    assert.equal(new Set(anchors.map((a) => a.tx_hash)).size, 1, 'one transaction for the window');
    assert.deepEqual(receipts.map((r) => r.ledger.merkle?.leaf_index).sort(), [0, 1, 2, 3]);
    for (const r of receipts) {
      assert.equal(r.ledger.merkle?.tree_size, 4);
      assert.equal(r.ledger.merkle?.path.length, 2);
      assert.equal(r.ledger.input_data, `0x${Buffer.from('MERKLE-SHA256:').toString('hex')}${r.ledger.merkle?.root}`);
    }
  });

  it('verifies every receipt offline with the ledger read from the node, the inclusion path included', async () => {
    for (const [i, r] of receipts.entries()) {
      const report = await verify(r, photos[i] as Buffer);
      assert.equal(report.status, 'verified', formatReport(report).join('\n'));
      assert.equal(state(report, 'merkle'), 'holds');
      assert.equal(state(report, 'ledger'), 'holds');
    }
  });

  it('fails the receipt for one flipped bit in any element of its path, in its root or in its leaf index', async () => {
    const r = receipts[0] as Receipt;
    const m = r.ledger.merkle as NonNullable<Receipt['ledger']['merkle']>;
    for (let j = 0; j < m.path.length; j++) {
      const copy = structuredClone(r);
      const cm = copy.ledger.merkle as typeof m;
      cm.path[j] = flipHex(cm.path[j] as string, 63);
      const report = await verify(copy, photos[0] as Buffer);
      assert.deepEqual(failed(report), ['ledger', 'merkle'], formatReport(report).join('\n'));
    }
    const otherRoot = structuredClone(r);
    (otherRoot.ledger.merkle as typeof m).root = flipHex(m.root, 0);
    assert.deepEqual(failed(await verify(otherRoot, photos[0] as Buffer)), ['ledger', 'merkle']);
    const otherIndex = structuredClone(r);
    (otherIndex.ledger.merkle as typeof m).leaf_index = m.leaf_index ^ 1;
    assert.deepEqual(failed(await verify(otherIndex, photos[0] as Buffer)), ['ledger', 'merkle']);
  });

  it('the local explorer decodes the batch transaction: its Merkle root', async () => {
    const { explorer } = await apps();
    const r = receipts[0] as Receipt;
    const res = await explorer.request(`/ledger/tx/${r.ledger.tx_hash}`, { headers: { accept: 'application/json' } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { decoded: { kind: string; merkle_root?: string } };
    assert.deepEqual(body.decoded, { kind: 'batch', merkle_root: r.ledger.merkle?.root });
    const html = await (await explorer.request(`/ledger/tx/${r.ledger.tx_hash}`)).text();
    assert.ok(html.includes(r.ledger.merkle?.root ?? 'x'));
  });

  it('the PDF certificate states the batch: leaf, root and the verdict on the ledger proof', async () => {
    const { certificate } = await apps();
    const hash = sha256Hex(photos[2] as Buffer);
    const res = await certificate.request(`/api/v2/evidence/certificate/${hash}`, { headers: { 'x-api-key': pro.apiKey } });
    assert.equal(res.status, 200);
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'batch-pdf-')), 'cert.pdf');
    writeFileSync(file, Buffer.from(await res.arrayBuffer()));
    const text = execFileSync('pdftotext', [file, '-'], { encoding: 'utf8' }).replace(/\s+/g, ' ');
    const m = receipts[2]?.ledger.merkle;
    assert.match(text, new RegExp(`leaf ${m?.leaf_index} of 4`));
    assert.ok(text.includes(m?.root.slice(0, 24) ?? 'x'), 'the Merkle root is printed');
    assert.match(text, /Checks out: mined in block/);
  });

  it('v2 verify, v1 ledger verify and the verify page pass the stored proof, and fail it once a bit of the stored path flips', async () => {
    const { verify: v2, v1Verify, page } = await apps();
    const hash = sha256Hex(photos[1] as Buffer);
    const good = (await (await v2.request(`/api/v2/evidence/verify/${hash}`)).json()) as { verified: boolean; has_blockchain: boolean };
    assert.equal(good.verified, true);
    assert.equal(good.has_blockchain, true);
    const v1 = (await (await v1Verify.request(`/api/v1/ledger/verify/${hash}`)).json()) as { verified: boolean; data_matches: boolean; expected_input_data: string };
    assert.equal(v1.verified, true);
    assert.equal(v1.expected_input_data, receipts[1]?.ledger.input_data);
    const pageOk = await (await page.request(`/verify/${hash}`)).text();
    assert.match(pageOk, /<h1 id="verdict">.*?Verified<\/h1>/s);

    // One bit of the stored path flips (a corrupted or forged record): every verifier says so.
    const path0 = receipts[1]?.ledger.merkle?.path[0] as string;
    await getDb().send(
      new UpdateCommand({
        TableName: getConfig().tables.evidence,
        Key: { image_hash: hash },
        UpdateExpression: 'SET merkle.#path[0] = :p',
        ExpressionAttributeNames: { '#path': 'path' },
        ExpressionAttributeValues: { ':p': flipHex(path0, 10) },
      }),
    );
    const bad = (await (await v2.request(`/api/v2/evidence/verify/${hash}`)).json()) as typeof good;
    assert.equal(bad.verified, false);
    assert.equal(bad.has_blockchain, false);
    const v1Bad = (await (await v1Verify.request(`/api/v1/ledger/verify/${hash}`)).json()) as typeof v1;
    assert.equal(v1Bad.verified, false);
    assert.equal(v1Bad.data_matches, false);
    const pageBad = await (await page.request(`/verify/${hash}`)).text();
    assert.match(pageBad, /<h1 id="verdict">.*?Not verified<\/h1>/s);
  });

  it('bin/evidence.mjs anchors in batch mode and verifies the receipt with the ledger; a flipped root fails with exit 1', async () => {
    service = await startHttpService();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'evidence-batch-cli-'));
    const run = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(BIN, args, { cwd: dir, env: { ...process.env, EVIDENCE_API_KEY: pro.apiKey, LEDGER_RPC_URL: '', DATA_DIR: '' }, timeout: 60_000 }, (error, stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
        );
      });
    assert.equal((await run(['keygen', '--out', 'device-key.json'])).code, 0);
    writeFileSync(path.join(dir, 'photo.jpg'), Buffer.from(`cli photo ${randomHash()}`));
    const anchored = await run(['anchor', 'photo.jpg', '--url', service.url, '--key', 'device-key.json']);
    assert.equal(anchored.code, 0, anchored.stderr);
    const receiptFile = path.join(dir, 'photo.jpg.receipt.json');
    const receipt = JSON.parse(await readFile(receiptFile, 'utf8')) as Receipt;
    assert.ok(receipt.ledger.merkle, 'a batched receipt');
    // Not pinned: the service's own copy of its trust anchors proves only consistency; the verdict is "not established" (exit 3).
    const unpinned = await run(['verify', 'photo.jpg', '--root', path.join(env.DATA_DIR ?? '', 'tsa', 'root.pem'), '--rpc', env.LEDGER_RPC_URL ?? '', '--trust-file', 'none.json']);
    assert.equal(unpinned.code, 3, unpinned.stdout + unpinned.stderr);
    assert.match(unpinned.stdout, /unchecked\s+ML-DSA-65 key published by the service/);
    // Pinned once with `evidence trust add`, as the README says: verified (exit 0).
    const trusted = await run(['trust', 'add', service.url, '--trust-file', 'trust.json']);
    assert.equal(trusted.code, 0, trusted.stdout + trusted.stderr);
    const ok = await run(['verify', 'photo.jpg', '--rpc', env.LEDGER_RPC_URL ?? '', '--trust-file', 'trust.json']);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, /holds\s+Merkle inclusion \(RFC 6962 batch\)/);
    assert.match(ok.stdout, /holds\s+ledger transaction/);
    assert.match(ok.stdout, /^VERIFIED: /m);
    (receipt.ledger.merkle as NonNullable<Receipt['ledger']['merkle']>).root = flipHex(receipt.ledger.merkle?.root ?? '', 5);
    writeFileSync(receiptFile, JSON.stringify(receipt));
    const bad = await run(['verify', 'photo.jpg', '--rpc', env.LEDGER_RPC_URL ?? '', '--trust-file', 'trust.json']);
    assert.equal(bad.code, 1, bad.stdout);
    assert.match(bad.stdout, /fails\s+Merkle inclusion \(RFC 6962 batch\)/);
  });
});
