import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ed25519PublicKeyFromSeed,
  parseEd25519PublicKey,
  signEd25519,
  verifyDeviceSignature,
  verifyEd25519,
} from '../../lib/crypto/ed25519.js';
import { bytesToHex, hexToBytes, sha256Hex } from '../../lib/crypto/hash.js';

interface Rfc8032Vector {
  test: string;
  secretKey: string;
  publicKey: string;
  message: string;
  signature: string;
}

function loadRfc8032Vectors(): Rfc8032Vector[] {
  const dir = new URL('../vectors/', import.meta.url);
  if (!existsSync(dir)) throw new Error(`test vectors directory not found: ${fileURLToPath(dir)} (test/vectors, see its README.txt)`);
  const vectors = JSON.parse(readFileSync(new URL('ed25519-rfc8032.json', dir), 'utf8')) as Rfc8032Vector[];
  if (!Array.isArray(vectors) || vectors.length === 0) throw new Error('ed25519-rfc8032.json yields no test cases');
  return vectors;
}

describe('Ed25519 against RFC 8032 §7.1', () => {
  const vectors = loadRfc8032Vectors();

  it('has all five vectors of §7.1', () => {
    assert.deepEqual(vectors.map((v) => v.test), ['TEST 1', 'TEST 2', 'TEST 3', 'TEST 1024', 'TEST SHA(abc)']);
  });

  for (const v of vectors) {
    it(`derives the public key, reproduces and verifies the signature of ${v.test}`, () => {
      const seed = hexToBytes(v.secretKey);
      const message = hexToBytes(v.message);
      assert.equal(bytesToHex(ed25519PublicKeyFromSeed(seed)), v.publicKey);
      // Ed25519 is deterministic (RFC 8032 §5.1.6), so the bytes must match exactly.
      assert.equal(bytesToHex(signEd25519(seed, message)), v.signature);
      assert.equal(verifyEd25519(hexToBytes(v.signature), message, hexToBytes(v.publicKey)), true);
    });
  }
});

describe('device signatures', () => {
  const seed = hexToBytes('4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb');
  const publicKeyHex = bytesToHex(ed25519PublicKeyFromSeed(seed));
  const imageHash = sha256Hex('photo bytes');

  it('accepts a signature over the 32 raw bytes of image_hash', () => {
    const signature = bytesToHex(signEd25519(seed, hexToBytes(imageHash)));
    assert.equal(verifyDeviceSignature(signature, imageHash, publicKeyHex), true);
  });

  it('accepts a signature over the 64-character lower-case hex string of image_hash', () => {
    const signature = bytesToHex(signEd25519(seed, new TextEncoder().encode(imageHash)));
    assert.equal(verifyDeviceSignature(signature, imageHash, publicKeyHex), true);
  });

  it('accepts upper-case hex for every argument', () => {
    const signature = bytesToHex(signEd25519(seed, hexToBytes(imageHash)));
    assert.equal(verifyDeviceSignature(signature.toUpperCase(), imageHash.toUpperCase(), publicKeyHex.toUpperCase()), true);
  });

  it('rejects a signature made with another key', () => {
    const other = new Uint8Array(32).fill(9);
    const signature = bytesToHex(signEd25519(other, hexToBytes(imageHash)));
    assert.equal(verifyDeviceSignature(signature, imageHash, publicKeyHex), false);
  });

  it('rejects a signature with one flipped bit, and one over another image', () => {
    const signature = signEd25519(seed, hexToBytes(imageHash));
    for (const index of [0, 31, 32, 63]) {
      const flipped = Uint8Array.from(signature);
      flipped[index]! ^= 0x01;
      assert.equal(verifyDeviceSignature(bytesToHex(flipped), imageHash, publicKeyHex), false, `byte ${index}`);
    }
    assert.equal(verifyDeviceSignature(bytesToHex(signature), sha256Hex('another photo'), publicKeyHex), false);
  });

  it('rejects a signature over the upper-case hex string', () => {
    const signature = bytesToHex(signEd25519(seed, new TextEncoder().encode(imageHash.toUpperCase())));
    assert.equal(verifyDeviceSignature(signature, imageHash, publicKeyHex), false);
  });

  it('treats well-formed hex of the wrong signature length as a bad signature', () => {
    const signature = bytesToHex(signEd25519(seed, hexToBytes(imageHash)));
    assert.equal(verifyDeviceSignature(signature.slice(0, 126), imageHash, publicKeyHex), false);
    assert.equal(verifyDeviceSignature(`${signature}00`, imageHash, publicKeyHex), false);
  });

  it('throws on malformed hex, a malformed image hash or a public key of the wrong length', () => {
    const signature = bytesToHex(signEd25519(seed, hexToBytes(imageHash)));
    assert.throws(() => verifyDeviceSignature(`${signature.slice(0, 127)}g`, imageHash, publicKeyHex), TypeError);
    assert.throws(() => verifyDeviceSignature(signature, imageHash.slice(1), publicKeyHex), TypeError);
    assert.throws(() => verifyDeviceSignature(signature, imageHash, publicKeyHex.slice(2)), RangeError);
    assert.throws(() => verifyDeviceSignature(signature, imageHash, `${publicKeyHex}x`), TypeError);
  });
});

describe('Ed25519 key helpers', () => {
  it('parses a 32-byte public key and refuses other lengths or non-hex', () => {
    const key = parseEd25519PublicKey('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
    assert.equal(key.asymmetricKeyType, 'ed25519');
    assert.throws(() => parseEd25519PublicKey('d75a98'), RangeError);
    assert.throws(() => parseEd25519PublicKey('zz'.repeat(32)), TypeError);
  });

  it('refuses seeds that are not 32 bytes', () => {
    assert.throws(() => signEd25519(new Uint8Array(31), new Uint8Array(0)), RangeError);
    assert.throws(() => ed25519PublicKeyFromSeed(new Uint8Array(33)), RangeError);
  });
});
