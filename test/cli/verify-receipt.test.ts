import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { useStack } from '../support/stack.js';
import { createAccount, Device, json, randomHash } from '../support/client.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { generateTsaCertificates } from '../../lib/crypto/tsa/certificates.js';
import { RpcReader } from '../../lib/ledger/rpc-reader.js';
import { type ReceiptVerification, type VerifyReceiptOptions, formatReport, verifyReceipt } from '../../lib/cli/verify-receipt.js';

type Receipt = {
  image_hash: string;
  server_hash: string;
  pq_signature: { signature: string };
  timestamp: { token: string; tsa_certificates: string[] };
  ledger: { tx_hash: string };
  device: { signature_hex: string };
};

let photo: Buffer;
let receipt: Receipt;
let otherReceipt: Receipt;
let serviceRoot: string;
let rpc: RpcReader;

/** Anchors `bytes` through the API and fetches its receipt through the public endpoint. */
async function anchorAndFetch(bytes: Buffer, apiKey: string): Promise<Receipt> {
  const { app: anchorApp } = await import('../../functions/v2/evidence-anchor.js');
  const { app: receiptApp } = await import('../../functions/v2/evidence-receipt.js');
  const body = new Device().next(sha256Hex(bytes));
  const res = await anchorApp.request('/api/v2/evidence/anchor', json(body, { 'x-api-key': apiKey }));
  assert.equal(res.status, 200, await res.clone().text());
  const r = await receiptApp.request(`/api/v2/evidence/receipt/${body.sha256_hash}`);
  assert.equal(r.status, 200);
  return (await r.json()) as Receipt;
}

before(async () => {
  const env = await useStack();
  const pro = await createAccount('pro');
  photo = Buffer.from(`a photo ${randomHash()}`);
  receipt = await anchorAndFetch(photo, pro.apiKey);
  otherReceipt = await anchorAndFetch(Buffer.from(`another photo ${randomHash()}`), pro.apiKey);
  serviceRoot = await readFile(path.join(env.DATA_DIR ?? '', 'tsa', 'root.pem'), 'utf8');
  rpc = new RpcReader(env.LEDGER_RPC_URL ?? '');
});

const fileSubject = (bytes: Buffer = photo) => ({ kind: 'file' as const, name: 'photo.jpg', sha256: sha256Hex(bytes) });

function check(options: Partial<VerifyReceiptOptions> & { receipt?: unknown } = {}): Promise<ReceiptVerification> {
  return verifyReceipt({ receipt, subject: fileSubject(), ...options });
}

const failed = (r: ReceiptVerification) => r.checks.filter((c) => c.result === 'fail').map((c) => c.id);
const result = (r: ReceiptVerification, id: string) => r.checks.find((c) => c.id === id)?.result;

/** A deep copy of the receipt with one change. */
function tampered(change: (r: Receipt) => void): Receipt {
  const copy = structuredClone(receipt);
  change(copy);
  return copy;
}

function flipBase64(b64: string, index: (length: number) => number): string {
  const bytes = Buffer.from(b64, 'base64');
  const i = index(bytes.length);
  bytes[i] = (bytes[i] ?? 0) ^ 0x01;
  return bytes.toString('base64');
}

function flipHex(hex: string, charIndex: number): string {
  const c = hex[charIndex] ?? '0';
  return hex.slice(0, charIndex) + (c === '0' ? '1' : '0') + hex.slice(charIndex + 1);
}

describe('verifyReceipt (the offline verifier)', () => {
  it('passes a real receipt with its file; the root comes from the receipt and the ledger is skipped, not passed', async () => {
    const r = await check();
    assert.deepEqual(failed(r), [], formatReport(r).join('\n'));
    assert.equal(r.ok, true);
    assert.equal(r.root.source, 'receipt');
    for (const id of ['file', 'device_signature', 'chain_hash', 'server_hash', 'pq_signature', 'timestamp_imprint', 'timestamp_signature', 'timestamp_ess_cert_id', 'timestamp_eku', 'timestamp_chain']) {
      assert.equal(result(r, id), 'pass', id);
    }
    assert.equal(result(r, 'ledger_tx'), 'skipped');
    assert.equal(result(r, 'ledger_data'), 'skipped');
    assert.equal(result(r, 'pq_key'), 'skipped');
    assert.match(formatReport(r).join('\n'), /root: from receipt \(not pinned\)/);
    assert.match(formatReport(r).join('\n'), /--root/);
  });

  it('passes with the service TSA root pinned', async () => {
    const r = await check({ rootPem: serviceRoot, rootSource: 'tsa-root.pem' });
    assert.deepEqual(failed(r), []);
    assert.equal(r.root.source, 'pinned');
    assert.equal(result(r, 'timestamp_chain'), 'pass');
    assert.ok(r.timestamp.gen_time);
  });

  it('fails only the file check for a changed file', async () => {
    const r = await check({ subject: fileSubject(Buffer.concat([photo, Buffer.from(' ')])) });
    assert.deepEqual(failed(r), ['file']);
    assert.equal(r.ok, false);
  });

  it('fails only the device signature check for a flipped byte in the device signature', async () => {
    const r = await check({ receipt: tampered((t) => (t.device.signature_hex = flipHex(t.device.signature_hex, 10))) });
    assert.deepEqual(failed(r), ['device_signature']);
  });

  it('fails only the ML-DSA-65 check for a flipped byte in the post-quantum signature', async () => {
    const r = await check({ receipt: tampered((t) => (t.pq_signature.signature = flipBase64(t.pq_signature.signature, (n) => Math.floor(n / 2)))) });
    assert.deepEqual(failed(r), ['pq_signature']);
  });

  it('fails only the timestamp signature check for a flipped byte in the TSA token signature', async () => {
    // The last byte of the TimeStampResp is the last byte of the SignerInfo's signature value.
    const r = await check({ receipt: tampered((t) => (t.timestamp.token = flipBase64(t.timestamp.token, (n) => n - 1))) });
    assert.deepEqual(failed(r), ['timestamp_signature']);
  });

  it('fails only the chain check when another root is pinned', async () => {
    const other = await generateTsaCertificates();
    const r = await check({ rootPem: other.rootCertPem, rootSource: 'other-root.pem' });
    assert.deepEqual(failed(r), ['timestamp_chain']);
  });

  it('fails only the server_hash check for a changed server_hash', async () => {
    const r = await check({ receipt: tampered((t) => (t.server_hash = flipHex(t.server_hash, 0))), ledger: rpc });
    assert.deepEqual(failed(r), ['server_hash']);
  });

  it('reads the ledger transaction with --rpc: input data and confirmations pass', async () => {
    const r = await check({ ledger: rpc, rootPem: serviceRoot });
    assert.deepEqual(failed(r), []);
    assert.equal(result(r, 'ledger_tx'), 'pass');
    assert.equal(result(r, 'ledger_data'), 'pass');
    assert.ok((r.ledger.confirmations ?? 0) >= 1);
  });

  it('fails only the ledger data check when the transaction carries other data', async () => {
    const r = await check({ receipt: tampered((t) => (t.ledger.tx_hash = otherReceipt.ledger.tx_hash)), ledger: rpc });
    assert.deepEqual(failed(r), ['ledger_data']);
  });

  it('fails the ledger transaction check for a transaction the chain does not have', async () => {
    const r = await check({ receipt: tampered((t) => (t.ledger.tx_hash = `0x${randomHash()}`)), ledger: rpc });
    assert.deepEqual(failed(r), ['ledger_tx']);
    assert.equal(result(r, 'ledger_data'), 'skipped');
  });

  it('fails when more confirmations are required than the transaction has', async () => {
    const r = await check({ ledger: rpc, minConfirmations: 1_000_000 });
    assert.deepEqual(failed(r), ['ledger_tx']);
  });

  it('checks a bare hash against the receipt without hashing a file', async () => {
    assert.deepEqual(failed(await check({ subject: { kind: 'hash', hash: receipt.image_hash.toUpperCase() } })), []);
    assert.deepEqual(failed(await check({ subject: { kind: 'hash', hash: randomHash() } })), ['file']);
  });

  it('pins the ML-DSA-65 key by fingerprint when asked', async () => {
    const r = await check();
    const fingerprint = /fingerprint ([0-9a-f]{64})/.exec(r.checks.find((c) => c.id === 'pq_key')?.reason ?? '')?.[1] ?? '';
    assert.equal(result(await check({ pqKeyFingerprint: fingerprint }), 'pq_key'), 'pass');
    assert.deepEqual(failed(await check({ pqKeyFingerprint: randomHash() })), ['pq_key']);
  });

  it('fails a receipt with missing parts, naming the field, instead of throwing', async () => {
    const r = await check({ receipt: { image_hash: receipt.image_hash } });
    assert.equal(r.ok, false);
    assert.match(r.checks.find((c) => c.id === 'device_signature')?.reason ?? '', /device\.public_key_hex/);
    assert.equal(result(r, 'file'), 'pass');
  });
});
