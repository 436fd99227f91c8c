import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  ANCHOR_DATA_BYTES,
  InvalidLedgerDataError,
  PQ_KEY_DATA_BYTES,
  decodeAnchorData,
  decodeLedgerData,
  decodePqKeyData,
  encodeAnchorData,
  encodePqKeyData,
  explorerUrl,
  pqKeyFingerprint,
} from '../../lib/ledger/anchor-data.js';

const IMAGE = 'a'.repeat(64);
const SERVER = '0123456789abcdef'.repeat(4);

describe('anchor data', () => {
  it('round-trips image and server hash as 64 bytes', () => {
    const data = encodeAnchorData(IMAGE, SERVER);
    assert.equal(data, `0x${IMAGE}${SERVER}`);
    assert.equal((data.length - 2) / 2, ANCHOR_DATA_BYTES);
    assert.deepEqual(decodeAnchorData(data), { imageHash: IMAGE, serverHash: SERVER });
    assert.deepEqual(decodeAnchorData(Buffer.from(data.slice(2), 'hex')), { imageHash: IMAGE, serverHash: SERVER });
  });

  it('accepts upper case, 0x prefixes and raw bytes, and answers in lower case', () => {
    const data = encodeAnchorData(`0x${IMAGE.toUpperCase()}`, Buffer.from(SERVER, 'hex'));
    assert.deepEqual(decodeAnchorData(data.toUpperCase().replace('0X', '0x')), { imageHash: IMAGE, serverHash: SERVER });
  });

  it('rejects other lengths and malformed hex', () => {
    for (const bad of [`0x${IMAGE}`, `0x${IMAGE}${SERVER}00`, `0x${IMAGE}${SERVER.slice(2)}`, '0x', `${IMAGE}${SERVER}`, `0x${IMAGE}${SERVER}0`, `0x${'zz'.repeat(64)}`]) {
      assert.throws(() => decodeAnchorData(bad), InvalidLedgerDataError, bad);
    }
    assert.throws(() => encodeAnchorData(IMAGE.slice(1), SERVER), InvalidLedgerDataError);
    assert.throws(() => encodeAnchorData(IMAGE, new Uint8Array(31)), InvalidLedgerDataError);
    assert.throws(() => encodeAnchorData(`${IMAGE.slice(1)}g`, SERVER), InvalidLedgerDataError);
  });
});

describe('PQ-key registration data', () => {
  it('round-trips the ML-DSA-65 prefix and fingerprint (42 bytes)', () => {
    const publicKey = new Uint8Array(1952).fill(7);
    const fingerprint = pqKeyFingerprint(publicKey);
    assert.equal(fingerprint, createHash('sha256').update(publicKey).digest('hex'));
    const data = encodePqKeyData(fingerprint);
    assert.equal((data.length - 2) / 2, PQ_KEY_DATA_BYTES);
    assert.ok(data.startsWith(`0x${Buffer.from('ML-DSA-65:').toString('hex')}`));
    assert.deepEqual(decodePqKeyData(data), { algorithm: 'ML-DSA-65', fingerprint });
  });

  it('rejects other prefixes and lengths', () => {
    const fp = Buffer.alloc(32, 1);
    const hex = (b: Buffer) => `0x${b.toString('hex')}`;
    assert.throws(() => decodePqKeyData(hex(Buffer.concat([Buffer.from('ML-DSA-44:'), fp]))), /start with/);
    assert.throws(() => decodePqKeyData(hex(Buffer.concat([Buffer.from('ml-dsa-65:'), fp]))), InvalidLedgerDataError);
    assert.throws(() => decodePqKeyData(hex(Buffer.concat([Buffer.from('ML-DSA-65:'), fp, Buffer.alloc(1)]))), InvalidLedgerDataError);
    assert.throws(() => decodePqKeyData(hex(Buffer.concat([Buffer.from('ML-DSA-65:'), fp.subarray(1)]))), InvalidLedgerDataError);
    assert.throws(() => decodePqKeyData(encodeAnchorData(IMAGE, SERVER)), InvalidLedgerDataError);
  });
});

describe('decodeLedgerData', () => {
  it('tells the two formats apart by length and refuses anything else', () => {
    assert.deepEqual(decodeLedgerData(encodeAnchorData(IMAGE, SERVER)), { kind: 'anchor', imageHash: IMAGE, serverHash: SERVER });
    assert.deepEqual(decodeLedgerData(encodePqKeyData(SERVER)), { kind: 'pq-key', algorithm: 'ML-DSA-65', fingerprint: SERVER });
    assert.throws(() => decodeLedgerData('0x'), InvalidLedgerDataError);
    assert.throws(() => decodeLedgerData(`0x${'00'.repeat(42)}`), /start with/);
    assert.throws(() => decodeLedgerData(`0x${'00'.repeat(63)}`), InvalidLedgerDataError);
  });
});

describe('explorerUrl', () => {
  it('replaces every {tx_hash} with the lower-case hash', () => {
    const hash = `0x${'AB'.repeat(32)}`;
    assert.equal(explorerUrl('https://polygonscan.com/tx/{tx_hash}', hash), `https://polygonscan.com/tx/0x${'ab'.repeat(32)}`);
    assert.equal(explorerUrl('/a/{tx_hash}?h={tx_hash}', hash), `/a/0x${'ab'.repeat(32)}?h=0x${'ab'.repeat(32)}`);
  });

  it('refuses something that is not a transaction hash', () => {
    assert.throws(() => explorerUrl('x/{tx_hash}', 'ab'.repeat(32)), InvalidLedgerDataError);
    assert.throws(() => explorerUrl('x/{tx_hash}', '0x1234'), InvalidLedgerDataError);
    assert.throws(() => explorerUrl('x/{tx_hash}', '../../etc/passwd'), InvalidLedgerDataError);
  });
});
