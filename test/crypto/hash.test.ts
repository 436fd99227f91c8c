import { createHash } from 'node:crypto';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  bytesToHex,
  computeChainHash,
  hexToBytes,
  isSha256Hex,
  normaliseHash,
  sha256,
  sha256Hex,
} from '../../lib/crypto/hash.js';

/** Independent reference: node:crypto directly, over the concatenated raw bytes. */
function referenceSha256Hex(...parts: Buffer[]): string {
  return createHash('sha256').update(Buffer.concat(parts)).digest('hex');
}

describe('sha256', () => {
  it('matches the FIPS 180-2 example digest of "abc"', () => {
    assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    assert.equal(bytesToHex(sha256(new TextEncoder().encode('abc'))), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('hashes strings as UTF-8', () => {
    assert.equal(sha256Hex('€'), referenceSha256Hex(Buffer.from([0xe2, 0x82, 0xac])));
  });

  it('returns a plain 32-byte Uint8Array rather than a Buffer', () => {
    const digest = sha256('x');
    assert.equal(digest.length, 32);
    assert.equal(Buffer.isBuffer(digest), false);
  });
});

describe('hex coding', () => {
  it('round-trips bytes through lower-case hex', () => {
    const bytes = Uint8Array.from([0, 1, 0x7f, 0x80, 0xff]);
    assert.equal(bytesToHex(bytes), '00017f80ff');
    assert.deepEqual(hexToBytes('00017F80ff'), bytes);
    assert.deepEqual(hexToBytes(''), new Uint8Array(0));
  });

  it('encodes a subarray without the bytes around it', () => {
    const bytes = Uint8Array.from([1, 2, 3, 4]);
    assert.equal(bytesToHex(bytes.subarray(1, 3)), '0203');
  });

  it('rejects odd lengths, non-hex characters, prefixes and whitespace', () => {
    for (const bad of ['abc', 'zz', '0x00', ' 00', '00 ', '0g']) {
      assert.throws(() => hexToBytes(bad), TypeError, bad);
    }
  });
});

describe('SHA-256 hex strings', () => {
  const upper = 'BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD';

  it('accepts 64 hex characters in either case', () => {
    assert.equal(isSha256Hex(upper), true);
    assert.equal(isSha256Hex(upper.toLowerCase()), true);
  });

  it('refuses other lengths, other characters and non-strings', () => {
    for (const bad of [upper.slice(1), `${upper}0`, `${upper.slice(1)}g`, '', 42, null, undefined]) {
      assert.equal(isSha256Hex(bad), false, String(bad));
    }
  });

  it('normalises to lower case and throws on anything else', () => {
    assert.equal(normaliseHash(upper), upper.toLowerCase());
    assert.throws(() => normaliseHash('abc'), /64 hex characters/);
  });
});

describe('device chain hash', () => {
  const image0 = Buffer.from('11'.repeat(32), 'hex');
  const image1 = Buffer.from('a2'.repeat(32), 'hex');

  it('hashes 32 zero bytes followed by the image hash at index 0', () => {
    const expected = referenceSha256Hex(Buffer.alloc(32), image0);
    assert.equal(computeChainHash(null, image0.toString('hex')), expected);
  });

  it('treats 64 zeros as previous hash the same as null', () => {
    assert.equal(computeChainHash('0'.repeat(64), image0.toString('hex')), computeChainHash(null, image0.toString('hex')));
  });

  it('chains the raw previous chain hash with the next image hash', () => {
    const chain0 = createHash('sha256').update(Buffer.concat([Buffer.alloc(32), image0])).digest();
    const expected1 = referenceSha256Hex(chain0, image1);
    assert.equal(computeChainHash(chain0.toString('hex'), image1.toString('hex')), expected1);
  });

  it('accepts upper-case input and answers in lower case', () => {
    const result = computeChainHash(null, image1.toString('hex').toUpperCase());
    assert.equal(result, referenceSha256Hex(Buffer.alloc(32), image1));
  });

  it('throws on a malformed image hash or previous hash', () => {
    assert.throws(() => computeChainHash(null, 'abcd'), TypeError);
    assert.throws(() => computeChainHash('xyz', image0.toString('hex')), TypeError);
  });
});
