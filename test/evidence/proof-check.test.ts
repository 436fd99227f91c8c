import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { ed25519PublicKeyFromSeed, signEd25519 } from '../../lib/crypto/ed25519.js';
import { computeChainHash, sha256Hex } from '../../lib/crypto/hash.js';
import { LocalMlDsaSigner } from '../../lib/crypto/ml-dsa.js';
import { generateTsaCertificates } from '../../lib/crypto/tsa/certificates.js';
import { EmbeddedTsa } from '../../lib/crypto/tsa/embedded.js';
import { verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';
import { encodeAnchorData } from '../../lib/ledger/anchor-data.js';
import {
  checkChainHash,
  checkDeviceSignature,
  checkLedgerData,
  checkLedgerTransaction,
  checkPqKey,
  checkPqSignature,
  checkPreviousHash,
  checkServerHash,
  checkTimestamp,
  deriveLinkState,
  effectiveLink,
  type LedgerRead,
} from '../../lib/evidence/proof-check.js';
import { bundleOf, type EvidenceVerdict, judgeEvidence, judgePq } from '../../lib/evidence/verdict.js';
import type { AnchoredEvidence, ChainLink } from '../../lib/evidence/repository.js';
import { buildStatement, canonicalStatement, computeServerHash } from '../../lib/evidence/statement.js';

/** Flips the lowest bit of the hex digit at `at` (default: the middle). */
function flipHex(hex: string, at = Math.floor(hex.length / 2)): string {
  const digit = parseInt(hex[at] ?? '0', 16) ^ 1;
  return hex.slice(0, at) + digit.toString(16) + hex.slice(at + 1);
}
function flipBase64(b64: string, at?: (n: number) => number): string {
  const bytes = Buffer.from(b64, 'base64');
  const i = at ? at(bytes.length) : Math.floor(bytes.length / 2);
  bytes[i] = (bytes[i] ?? 0) ^ 0x01;
  return bytes.toString('base64');
}
const failing = (v: EvidenceVerdict) => [...v.failed].sort();

let record: AnchoredEvidence;
let predecessorChainHash: string;
let rootPem: string;
let trusted: string[];
let ledgerRead: LedgerRead;

/** A record at chain index 1, every proof made by the real adapters (no service, no I/O beyond memory). */
before(async () => {
  const seed = randomBytes(32);
  const publicKeyHex = Buffer.from(ed25519PublicKeyFromSeed(seed)).toString('hex');
  const firstImage = sha256Hex('first photo');
  predecessorChainHash = computeChainHash(null, firstImage);
  const imageHash = sha256Hex(`a photo ${randomBytes(8).toString('hex')}`);
  const chainHash = computeChainHash(predecessorChainHash, imageHash);
  const signatureHex = Buffer.from(signEd25519(seed, Buffer.from(imageHash, 'hex'))).toString('hex');
  const anchoredAt = '2026-11-24T10:00:00.000Z';
  const statement = buildStatement({
    image_hash: imageHash,
    chain_index: 1,
    chain_hash: chainHash,
    previous_hash: predecessorChainHash,
    device_public_key: publicKeyHex,
    device_signature: signatureHex,
    anchored_at: anchoredAt,
  });
  const serverHash = computeServerHash(statement);
  const signer = LocalMlDsaSigner.fromSeed(randomBytes(32));
  const pqPublicKey = await signer.publicKey();
  const pqSignature = await signer.sign(Buffer.from(serverHash, 'hex'));
  const certs = await generateTsaCertificates();
  rootPem = certs.rootCertPem;
  const tsa = await EmbeddedTsa.create({ rootCertPem: certs.rootCertPem, tsaCertPem: certs.tsaCertPem, tsaKeyPkcs8Pem: certs.tsaKeyPkcs8Pem, policyOid: '1.3.6.1.4.1.99999.1.1' });
  const token = await tsa.timestamp(Buffer.from(imageHash, 'hex'));
  const from = `0x${'ab'.repeat(20)}`;
  trusted = [sha256Hex(pqPublicKey)];
  record = {
    image_hash: imageHash,
    anchor_state: 'anchored',
    anchored_at: anchoredAt,
    api_version: 'v2',
    account_id: 'acc_test',
    public_key_hex: publicKeyHex,
    signature_hex: signatureHex,
    chain_index: 1,
    chain_hash: chainHash,
    previous_hash: predecessorChainHash,
    statement: canonicalStatement(statement),
    server_hash: serverHash,
    pq_algorithm: 'ML-DSA-65',
    pq_key_id: signer.keyId,
    pq_public_key: Buffer.from(pqPublicKey).toString('base64'),
    pq_signature: Buffer.from(pqSignature).toString('base64'),
    tsa_response: Buffer.from(token.response).toString('base64'),
    tsa_gen_time: token.genTime.toISOString(),
    tsa_serial: token.serial,
    tsa_policy: token.policy,
    tsa_certificates: [certs.tsaCertPem, certs.rootCertPem],
    ledger_chain_id: 31337,
    ledger_address: from,
    tx_hash: `0x${'cd'.repeat(32)}`,
    tx_nonce: 0,
    tx_status: 'confirmed',
  };
  ledgerRead = { tx: { from, input: encodeAnchorData(imageHash, serverHash), blockNumber: 5 }, receipt: { status: 'success' }, latestBlock: 7 };
});

/** The one verdict over a (possibly changed) record, the token verified and the chain read as the API does it. */
async function verdicts(item: AnchoredEvidence, trustedKeys: string[] = trusted): Promise<EvidenceVerdict> {
  const timestamp = await verifyTimestampResponse(Buffer.from(item.tsa_response, 'base64'), {
    imprint: Buffer.from(item.image_hash, 'hex'),
    roots: [rootPem],
    hashAlgorithm: 'SHA-256',
  });
  return judgeEvidence({
    bundle: bundleOf(item),
    timestamp: checkTimestamp(timestamp),
    timestampRootTrusted: true,
    trustedPqKeys: trustedKeys,
    ledger: { kind: 'read', read: ledgerRead, expectedFrom: record.ledger_address, checkedAt: new Date() },
  });
}

describe('judgeEvidence (the one verdict over a stored record)', () => {
  it('holds every proof of a genuine record: verified, pq verified, 3 confirmations', async () => {
    const v = await verdicts(record);
    assert.deepEqual(failing(v), []);
    assert.deepEqual(v.open, []);
    assert.equal(v.status, 'verified');
    assert.equal(v.pq_verified, true);
    assert.equal(v.ledger.confirmations, 3);
    assert.equal(v.proofs.merkle.state, 'absent');
  });

  // Inputs owned by exactly one proof: one flipped bit fails that proof and no other.
  const owned: [string, (r: AnchoredEvidence) => Partial<AnchoredEvidence>, string[]][] = [
    ['the ML-DSA-65 signature', (r) => ({ pq_signature: flipBase64(r.pq_signature) }), ['pq_signature']],
    ['the RFC 3161 token (its signature)', (r) => ({ tsa_response: flipBase64(r.tsa_response, (n) => n - 1) }), ['timestamp']],
    // The signature and the ledger are held to the statement's real hash: a changed server_hash field fails the statement alone.
    ['the stored server_hash', (r) => ({ server_hash: flipHex(r.server_hash, 0) }), ['statement']],
  ];
  for (const [what, change, expected] of owned) {
    it(`fails only ${expected.join(' and ')} for a flipped bit in ${what}`, async () => {
      const v = await verdicts({ ...record, ...change(record) });
      assert.deepEqual(failing(v), expected);
      assert.equal(v.status, 'failed');
    });
  }

  // Inputs the signed statement also names: the proof that owns the input and the statement fail.
  const named: [string, (r: AnchoredEvidence) => Partial<AnchoredEvidence>, string[]][] = [
    ['the device signature', (r) => ({ signature_hex: flipHex(r.signature_hex) }), ['device_signature', 'statement']],
    ['the chain hash', (r) => ({ chain_hash: flipHex(r.chain_hash) }), ['chain_link', 'statement']],
    ['the previous hash', (r) => ({ previous_hash: flipHex(r.previous_hash ?? '') }), ['chain_link', 'statement']],
    // The statement's real hash is what the ML-DSA-65 signature and the ledger data must cover.
    ['the statement', (r) => ({ statement: r.statement.replace(r.anchored_at, '2026-11-24T10:00:00.001Z') }), ['ledger', 'pq_signature', 'statement']],
    ['the anchoring time', () => ({ anchored_at: '2020-01-01T00:00:00.000Z' }), ['statement']],
  ];
  for (const [what, change, expected] of named) {
    it(`fails ${expected.join(' and ')} for a change in ${what}`, async () => {
      assert.deepEqual(failing(await verdicts({ ...record, ...change(record) })), expected);
    });
  }

  it('fails only pq_key for a key this service does not publish, and leaves it unchecked (pending) with none pinned', async () => {
    const other = await verdicts(record, [sha256Hex('another key')]);
    assert.deepEqual(failing(other), ['pq_key']);
    assert.equal(other.pq_verified, false);
    const pq = judgePq(bundleOf(record), null);
    assert.equal(pq.pq_key.state, 'unchecked');
    assert.equal(pq.pq_verified, false, 'a key nobody pinned is not "pq verified"');
  });
});

describe('the single verdicts', () => {
  it('checkDeviceSignature: a flipped bit in the signature, the key or the image hash fails it; malformed input is a failed verdict, not a throw', () => {
    assert.equal(checkDeviceSignature(record).ok, true);
    assert.equal(checkDeviceSignature({ ...record, signature_hex: flipHex(record.signature_hex) }).ok, false);
    assert.equal(checkDeviceSignature({ ...record, public_key_hex: flipHex(record.public_key_hex, 63) }).ok, false);
    assert.equal(checkDeviceSignature({ ...record, image_hash: flipHex(record.image_hash) }).ok, false);
    assert.equal(checkDeviceSignature({ ...record, public_key_hex: 'zz' }).ok, false);
    assert.equal(checkDeviceSignature({ ...record, signature_hex: record.signature_hex.toUpperCase() }).ok, true);
  });

  it('checkChainHash: SHA-256(prev || image_hash), zeros at index 0; a flipped bit in any input fails it and names the recomputed hash', () => {
    assert.equal(checkChainHash(record).ok, true);
    for (const field of ['chain_hash', 'image_hash', 'previous_hash'] as const) {
      const v = checkChainHash({ ...record, [field]: flipHex(record[field] ?? '') });
      assert.equal(v.ok, false, field);
    }
    const wrong = checkChainHash({ ...record, chain_hash: flipHex(record.chain_hash) });
    assert.equal(wrong.expected, record.chain_hash);
    const first = { image_hash: record.image_hash, chain_index: 0, chain_hash: computeChainHash(null, record.image_hash), previous_hash: null };
    assert.equal(checkChainHash(first).ok, true);
    assert.equal(checkChainHash({ ...first, previous_hash: '0'.repeat(64) }).ok, true);
    assert.equal(checkChainHash({ ...record, previous_hash: 'not a hash' }).expected, null);
  });

  it('checkPreviousHash: links to the chain_hash before, null (or zeros) at index 0', () => {
    assert.equal(checkPreviousHash(record, predecessorChainHash).ok, true);
    assert.equal(checkPreviousHash(record, flipHex(predecessorChainHash)).ok, false);
    assert.equal(checkPreviousHash({ ...record, previous_hash: flipHex(predecessorChainHash) }, predecessorChainHash).ok, false);
    assert.equal(checkPreviousHash(record).ok, true, 'without the link before, a hash is all one record can show');
    assert.equal(checkPreviousHash({ ...record, previous_hash: null }).ok, false);
    assert.equal(checkPreviousHash({ ...record, chain_index: 0, previous_hash: '0'.repeat(64) }).ok, true);
    assert.equal(checkPreviousHash({ ...record, chain_index: 0 }).ok, false);
  });

  it('checkServerHash and the statement proof: a flipped bit in the statement or server_hash fails them', () => {
    assert.equal(checkServerHash(record.statement, record.server_hash).ok, true);
    assert.equal(checkServerHash(record.statement, flipHex(record.server_hash)).ok, false);
    assert.equal(checkServerHash(record.statement.replace('"chain_index":1', '"chain_index":2'), record.server_hash).ok, false);
    assert.equal(judgePq(bundleOf(record), trusted).statement.state, 'holds');
    assert.match(judgePq(bundleOf({ ...record, chain_index: 2 }), trusted).statement.reason, /chain_index/);
  });

  it('checkPqSignature and checkPqKey: a flipped bit in the signature, the message or the key fails them', () => {
    const publicKey = Buffer.from(record.pq_public_key, 'base64');
    const signature = Buffer.from(record.pq_signature, 'base64');
    assert.equal(checkPqSignature({ serverHash: record.server_hash, publicKey, signature }).ok, true);
    assert.equal(checkPqSignature({ serverHash: flipHex(record.server_hash), publicKey, signature }).ok, false);
    assert.equal(checkPqSignature({ serverHash: record.server_hash, publicKey, signature: Buffer.from(flipBase64(record.pq_signature), 'base64') }).ok, false);
    assert.equal(checkPqSignature({ serverHash: record.server_hash, publicKey: Buffer.from(flipBase64(record.pq_public_key), 'base64'), signature }).ok, false);
    assert.equal(checkPqSignature({ serverHash: record.server_hash, publicKey: publicKey.subarray(1), signature }).ok, false);
    assert.equal(checkPqKey(publicKey, trusted).ok, true);
    assert.equal(checkPqKey(Buffer.from(flipBase64(record.pq_public_key), 'base64'), trusted).ok, false);
  });

  it('checkTimestamp: a token that could not be verified fails every check with the reason', () => {
    const v = checkTimestamp(null, 'timestamp.token in the receipt is not base64');
    assert.equal(v.ok, false);
    assert.equal(v.checks.imprint.result, 'fail');
    assert.equal(v.checks.chain.reason, 'timestamp.token in the receipt is not base64');
  });

  it('checkTimestamp: a token for another image fails the imprint check', async () => {
    const v = checkTimestamp(
      await verifyTimestampResponse(Buffer.from(record.tsa_response, 'base64'), { imprint: Buffer.from(flipHex(record.image_hash), 'hex'), roots: [rootPem] }),
    );
    assert.equal(v.ok, false);
    assert.equal(v.checks.imprint.result, 'fail');
    assert.equal(v.checks.signature.result, 'pass');
  });

  it('checkLedgerData and checkLedgerTransaction: a flipped bit in the input data, another sender, a revert, a pending or missing transaction', () => {
    const expected = { image_hash: record.image_hash, server_hash: record.server_hash, from: record.ledger_address };
    const input = ledgerRead.tx?.input ?? '';
    assert.equal(checkLedgerData(input, expected).ok, true);
    assert.equal(checkLedgerData(flipHex(input, 10), expected).ok, false);
    assert.equal(checkLedgerData(flipHex(input, input.length - 1), expected).ok, false);
    assert.equal(checkLedgerData(input, { ...expected, server_hash: null }).ok, false);
    assert.equal(checkLedgerData('0x1234', expected).ok, false);

    const tx = ledgerRead.tx ?? { from: '', input: '', blockNumber: null };
    const data = checkLedgerTransaction({ ...ledgerRead, tx: { ...tx, input: flipHex(input, 10) } }, expected);
    assert.deepEqual([data.valid, data.data_matches, data.transaction.ok, data.status], [false, false, true, 'confirmed']);
    const sender = checkLedgerTransaction({ ...ledgerRead, tx: { ...tx, from: flipHex(tx.from, 5) } }, expected);
    assert.deepEqual([sender.valid, sender.data_matches, sender.transaction.ok], [false, true, false]);
    const reverted = checkLedgerTransaction({ ...ledgerRead, receipt: { status: 'reverted' } }, expected);
    assert.deepEqual([reverted.valid, reverted.status], [false, 'failed']);
    const pending = checkLedgerTransaction({ tx: { ...tx, blockNumber: null } }, expected);
    assert.deepEqual([pending.valid, pending.status, pending.confirmations], [false, 'pending', 0]);
    const missing = checkLedgerTransaction({ tx: null }, expected);
    assert.deepEqual([missing.found, missing.status], [false, 'not_found']);
    assert.equal(checkLedgerTransaction(ledgerRead, { ...expected, minConfirmations: 4 }).transaction.ok, false);
    assert.equal(checkLedgerTransaction(ledgerRead, { ...expected, from: undefined }).valid, true, 'no sender to compare with: not checked');
  });
});

describe('deriveLinkState (a link lags its anchored evidence item)', () => {
  const linkOf = (r: AnchoredEvidence, state: ChainLink['state']): ChainLink => ({
    public_key_hex: r.public_key_hex,
    chain_index: r.chain_index,
    image_hash: r.image_hash,
    chain_hash: r.chain_hash,
    previous_hash: r.previous_hash,
    signature_hex: r.signature_hex,
    state,
    claim_id: 'claim-1',
    ...(state === 'claimed' ? {} : { anchored_at: r.anchored_at, tx_hash: r.tx_hash }),
  });

  it('reports a claimed link as anchored when its item is anchored with the same image, key and index', () => {
    const link = linkOf(record, 'claimed');
    assert.equal(deriveLinkState(link, record), 'anchored');
    const shown = effectiveLink(link, record);
    assert.equal(shown.state, 'anchored');
    assert.equal(shown.anchored_at, record.anchored_at);
    assert.equal(shown.tx_hash, record.tx_hash);
  });

  it('keeps a claimed link claimed when the item is not anchored or is another link’s', () => {
    const link = linkOf(record, 'claimed');
    assert.equal(deriveLinkState(link, undefined), 'claimed');
    assert.equal(deriveLinkState(link, { image_hash: record.image_hash, dead_claims: new Set([link.claim_id]) }), 'claimed');
    assert.equal(deriveLinkState(link, { ...record, anchor_state: 'publishing' }), 'claimed');
    assert.equal(deriveLinkState(link, { ...record, chain_index: 2 }), 'claimed');
    assert.equal(deriveLinkState(link, { ...record, public_key_hex: flipHex(record.public_key_hex) }), 'claimed');
    assert.equal(deriveLinkState(link, { ...record, image_hash: flipHex(record.image_hash) }), 'claimed');
    assert.equal(effectiveLink(link, undefined), link);
  });

  it('keeps an anchored link anchored whatever the item', () => {
    assert.equal(deriveLinkState(linkOf(record, 'anchored'), undefined), 'anchored');
  });
});
