import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { useStack } from '../support/stack.js';
import { createAccount, Device, json, randomHash } from '../support/client.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { mlDsaPublicKeyFingerprint } from '../../lib/crypto/ml-dsa.js';
import { generateTsaCertificates } from '../../lib/crypto/tsa/certificates.js';
import { RpcReader } from '../../lib/ledger/rpc-reader.js';
import { formatReport } from '../../lib/cli/receipt-report.js';
import { type ReceiptVerification, type VerifyReceiptOptions, verifyReceipt } from '../../lib/cli/verify-receipt.js';

/**
 * The offline verifier gives the one verdict (lib/evidence/verdict.ts) over a receipt: each
 * tampered field fails the proof that owns it; a proof it could not establish (no node, a trust
 * anchor not pinned, too few confirmations) is unchecked or pending, never counted as holding.
 */

type Receipt = {
  image_hash: string;
  server_hash: string;
  pq_signature: { signature: string; public_key: string };
  timestamp: { token: string; tsa_certificates: string[] };
  ledger: { tx_hash: string; from: string };
  device: { signature_hex: string; public_key_hex?: string };
  timestamp_pq: { token: string };
};

let photo: Buffer;
let receipt: Receipt;
let otherReceipt: Receipt;
let serviceRoot: string;
let servicePqRoot: string;
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
  servicePqRoot = await readFile(path.join(env.DATA_DIR ?? '', 'tsa', 'pq-root.pem'), 'utf8');
  rpc = new RpcReader(env.LEDGER_RPC_URL ?? '');
});

const fileSubject = (bytes: Buffer = photo) => ({ kind: 'file' as const, name: 'photo.jpg', sha256: sha256Hex(bytes) });

/** Every trust anchor pinned (as `evidence trust add` does) and the chain read. */
const pinned = (): Partial<VerifyReceiptOptions> => ({
  rootsPem: [serviceRoot],
  rootSource: 'tsa-root.pem',
  pqRootsPem: [servicePqRoot],
  pqKeyFingerprints: [mlDsaPublicKeyFingerprint(Buffer.from(receipt.pq_signature.public_key, 'base64'))],
  wallets: [receipt.ledger.from],
  ledger: rpc,
});

function check(options: Partial<VerifyReceiptOptions> & { receipt?: unknown } = {}): Promise<ReceiptVerification> {
  return verifyReceipt({ receipt, subject: fileSubject(), ...pinned(), ...options });
}

const failed = (r: ReceiptVerification) => [...(r.verdict?.failed ?? [])].sort();
const state = (r: ReceiptVerification, proof: keyof NonNullable<ReceiptVerification['verdict']>['proofs']) => r.verdict?.proofs[proof].state;

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
  it('verifies a real receipt with its file, every anchor pinned and the chain read', async () => {
    const r = await check();
    assert.equal(r.status, 'verified', formatReport(r).join('\n'));
    assert.equal(r.ok, true);
    assert.equal(r.file.holds, true);
    assert.equal(state(r, 'merkle'), 'absent');
    assert.ok((r.ledger?.confirmations ?? 0) >= 1);
    assert.equal(r.root.source, 'pinned');
    assert.ok(r.timestamp.gen_time);
    assert.match(formatReport(r).join('\n'), /^VERIFIED: /m);
  });

  it('does not verify what it could not check: nothing pinned and no node leave the key, the timestamp, and the ledger unchecked (pending)', async () => {
    const r = await verifyReceipt({ receipt, subject: fileSubject() });
    assert.equal(r.status, 'pending');
    assert.equal(r.ok, false);
    assert.deepEqual(failed(r), []);
    assert.deepEqual([...(r.verdict?.open ?? [])].sort(), ['ledger', 'pq_key', 'timestamp', 'timestamp_pq']);
    assert.equal(r.root.source, 'receipt');
    const text = formatReport(r).join('\n');
    assert.match(text, /root: from receipt \(not pinned\)/);
    assert.match(text, /--root/);
    assert.match(text, /^NOT ESTABLISHED: /m);
  });

  it('fails only the file for a changed file', async () => {
    const r = await check({ subject: fileSubject(Buffer.concat([photo, Buffer.from(' ')])) });
    assert.equal(r.file.holds, false);
    assert.deepEqual(failed(r), []);
    assert.equal(r.status, 'failed');
  });

  const cases: [string, () => Receipt, string[]][] = [
    ['a flipped byte in the device signature (which the statement names too)', () => tampered((t) => (t.device.signature_hex = flipHex(t.device.signature_hex, 10))), ['device_signature', 'statement']],
    ['a flipped byte in the post-quantum signature', () => tampered((t) => (t.pq_signature.signature = flipBase64(t.pq_signature.signature, (n) => Math.floor(n / 2)))), ['pq_signature']],
    // The last byte of the TimeStampResp is the last byte of the SignerInfo's signature value.
    ['a flipped byte in the TSA token signature', () => tampered((t) => (t.timestamp.token = flipBase64(t.timestamp.token, (n) => n - 1))), ['timestamp']],
    ['a flipped byte in the post-quantum TSA token signature (ML-DSA-65)', () => tampered((t) => (t.timestamp_pq.token = flipBase64(t.timestamp_pq.token, (n) => n - 1))), ['timestamp_pq']],
    ['a changed server_hash', () => tampered((t) => (t.server_hash = flipHex(t.server_hash, 0))), ['statement']],
    ['the transaction of another anchor', () => tampered((t) => (t.ledger.tx_hash = otherReceipt.ledger.tx_hash)), ['ledger']],
    ['a transaction the chain does not have', () => tampered((t) => (t.ledger.tx_hash = `0x${randomHash()}`)), ['ledger']],
    ['another stated sender', () => tampered((t) => (t.ledger.from = '0x000000000000000000000000000000000000dead')), ['ledger']],
  ];
  for (const [what, make, expected] of cases) {
    it(`fails ${expected.join(' and ')} for ${what}`, async () => {
      const r = await check({ receipt: make() });
      assert.deepEqual(failed(r), expected, formatReport(r).join('\n'));
      assert.equal(r.status, 'failed');
    });
  }

  it('fails the timestamp when another root is pinned, naming the chain', async () => {
    const other = await generateTsaCertificates();
    const r = await check({ rootsPem: [other.rootCertPem], rootSource: 'other-root.pem' });
    assert.deepEqual(failed(r), ['timestamp']);
    assert.equal(r.timestamp_checks?.chain.result, 'fail');
    assert.match(formatReport(r).join('\n'), /chain to root\s+fail/);
  });

  it('fails the ledger when the pinned wallet did not send the transaction', async () => {
    const r = await check({ wallets: ['0x000000000000000000000000000000000000beef'] });
    assert.deepEqual(failed(r), ['ledger']);
  });

  it('leaves the ledger pending when more confirmations are required than the transaction has', async () => {
    const r = await check({ minConfirmations: 1_000_000 });
    assert.deepEqual(failed(r), []);
    assert.equal(state(r, 'ledger'), 'pending');
    assert.equal(r.status, 'pending');
  });

  it('leaves the ledger unchecked on a node of another chain, and on a node that cannot be reached', async () => {
    const otherChain = { ...rpc, chainId: async () => 1, getTransaction: rpc.getTransaction.bind(rpc), getTransactionReceipt: rpc.getTransactionReceipt.bind(rpc), blockNumber: rpc.blockNumber.bind(rpc) };
    const a = await check({ ledger: otherChain });
    assert.equal(state(a, 'ledger'), 'unchecked');
    assert.match(a.verdict?.proofs.ledger.reason ?? '', /chain 1/);
    const b = await check({ ledger: new RpcReader('http://127.0.0.1:9', { timeoutMs: 2000 }) });
    assert.equal(state(b, 'ledger'), 'unchecked');
    assert.equal(b.status, 'pending');
  });

  it('checks a bare hash against the receipt without hashing a file', async () => {
    assert.equal((await check({ subject: { kind: 'hash', hash: receipt.image_hash.toUpperCase() } })).status, 'verified');
    const other = await check({ subject: { kind: 'hash', hash: randomHash() } });
    assert.equal(other.file.holds, false);
    assert.equal(other.status, 'failed');
  });

  it('holds the ML-DSA-65 key to the pinned fingerprint', async () => {
    assert.deepEqual(failed(await check({ pqKeyFingerprints: [randomHash()] })), ['pq_key']);
  });

  it('gives a receipt with missing parts no verdict, naming the field, instead of throwing', async () => {
    const r = await check({ receipt: { image_hash: receipt.image_hash } });
    assert.equal(r.status, 'failed');
    assert.equal(r.verdict, null);
    assert.ok(r.problems.some((p) => p.includes('device.public_key_hex')), r.problems.join('\n'));
    assert.equal(r.file.holds, true);
  });
});
