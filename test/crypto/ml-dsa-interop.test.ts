/**
 * Interoperability of the service's ML-DSA-65 with an independent implementation, liboqs
 * (C, compiled to WASM by @oqs/liboqs-js): pure ML-DSA with an empty context in both directions.
 * The service signs with liboqs (hedged) or noble (deterministic test mode) and verifies with
 * noble, so each direction is checked explicitly: noble → liboqs and liboqs → noble.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';
import { createMLDSA65, type MLDSA65 } from '@oqs/liboqs-js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { LocalMlDsaSigner, mlDsaKeyId, mlDsaPublicKeyFingerprint, verifyMlDsa65 } from '../../lib/crypto/ml-dsa.js';

const seed = Uint8Array.from({ length: 32 }, (_, i) => i);
// What the service signs: the 32 bytes of a server_hash (decisions.md "Evidence").
const message = Uint8Array.from(Buffer.from(sha256Hex('canonical statement'), 'hex'));

function flipBit(bytes: Uint8Array, index: number): Uint8Array {
  const copy = Uint8Array.from(bytes);
  copy[index]! ^= 0x01;
  return copy;
}

describe('ML-DSA-65 interoperability with liboqs', () => {
  let oqs: MLDSA65;

  before(async () => {
    oqs = await createMLDSA65();
  });

  after(() => {
    oqs.destroy();
  });

  it('verifies the service signer’s hedged signatures with liboqs', async () => {
    const signer = LocalMlDsaSigner.fromSeed(seed);
    const publicKey = await signer.publicKey();
    const signature = await signer.sign(message);
    assert.equal(oqs.verify(message, signature, publicKey), true);
  });

  it('verifies the service signer’s deterministic signatures with liboqs', async () => {
    const signer = LocalMlDsaSigner.fromSeed(seed, { deterministic: true });
    const signature = await signer.sign(message);
    assert.deepEqual(await signer.sign(message), signature);
    assert.equal(oqs.verify(message, signature, await signer.publicKey()), true);
  });

  it('verifies noble’s hedged signatures under the service key with liboqs', async () => {
    const { secretKey } = ml_dsa65.keygen(Uint8Array.from(seed));
    const publicKey = await LocalMlDsaSigner.fromSeed(seed).publicKey();
    for (let i = 0; i < 4; i++) {
      const signature = ml_dsa65.sign(message, secretKey, { extraEntropy: Uint8Array.from(randomBytes(32)) });
      assert.equal(oqs.verify(message, signature, publicKey), true);
    }
  });

  it('verifies liboqs signatures with verifyMlDsa65', () => {
    const { publicKey, secretKey } = oqs.generateKeyPair();
    const signature = oqs.sign(message, secretKey);
    assert.equal(verifyMlDsa65(signature, message, publicKey), true);
  });

  it('rejects a flipped bit in the signature, the message or the key in both implementations', async () => {
    const signer = LocalMlDsaSigner.fromSeed(seed);
    const publicKey = await signer.publicKey();
    const ours = await signer.sign(message);
    const { publicKey: oqsPublicKey, secretKey } = oqs.generateKeyPair();
    const theirs = oqs.sign(message, secretKey);

    for (const index of [0, 1500, ours.length - 1]) {
      assert.equal(oqs.verify(message, flipBit(ours, index), publicKey), false, `liboqs, signature byte ${index}`);
      assert.equal(verifyMlDsa65(flipBit(theirs, index), message, oqsPublicKey), false, `service, signature byte ${index}`);
    }
    assert.equal(oqs.verify(flipBit(message, 5), ours, publicKey), false);
    assert.equal(verifyMlDsa65(theirs, flipBit(message, 5), oqsPublicKey), false);
    assert.equal(oqs.verify(message, ours, flipBit(publicKey, 100)), false);
    assert.equal(verifyMlDsa65(theirs, message, flipBit(oqsPublicKey, 100)), false);
  });

  it('returns false for a signature of the wrong length and throws for a public key of the wrong length', async () => {
    const signer = LocalMlDsaSigner.fromSeed(seed);
    const publicKey = await signer.publicKey();
    const signature = await signer.sign(message);
    assert.equal(verifyMlDsa65(signature.subarray(1), message, publicKey), false);
    assert.equal(verifyMlDsa65(new Uint8Array(0), message, publicKey), false);
    assert.throws(() => verifyMlDsa65(signature, message, publicKey.subarray(1)), RangeError);
  });

  it('signs hedged by default: two signatures of one message differ and both verify', async () => {
    const signer = LocalMlDsaSigner.fromSeed(seed);
    const [a, b] = [await signer.sign(message), await signer.sign(message)];
    assert.notDeepEqual(a, b);
    assert.equal(verifyMlDsa65(a, message, await signer.publicKey()), true);
    assert.equal(verifyMlDsa65(b, message, await signer.publicKey()), true);
  });
});

describe('ML-DSA-65 key identity', () => {
  it('derives a stable keyId and fingerprint from the seed', async () => {
    const a = LocalMlDsaSigner.fromSeed(seed);
    const b = LocalMlDsaSigner.fromSeed(Uint8Array.from(seed));
    const publicKey = await a.publicKey();
    // Computed independently of the helpers: SHA-256 of the raw key, first 16 hex characters.
    const digest = sha256Hex(publicKey);
    assert.equal(a.fingerprint, digest);
    assert.equal(a.keyId, `mldsa65:${digest.slice(0, 16)}`);
    assert.match(a.keyId, /^mldsa65:[0-9a-f]{16}$/);
    assert.equal(b.keyId, a.keyId);
    assert.equal(b.fingerprint, a.fingerprint);
    assert.equal(mlDsaKeyId(publicKey), a.keyId);
    assert.equal(mlDsaPublicKeyFingerprint(publicKey), a.fingerprint);
  });

  it('gives another seed another keyId', () => {
    assert.notEqual(LocalMlDsaSigner.fromSeed(new Uint8Array(32)).keyId, LocalMlDsaSigner.fromSeed(seed).keyId);
  });

  it('refuses a seed that is not 32 bytes', () => {
    assert.throws(() => LocalMlDsaSigner.fromSeed(new Uint8Array(31)), RangeError);
    assert.throws(() => LocalMlDsaSigner.fromSeed(new Uint8Array(64)), RangeError);
  });

  it('hands out a copy of the public key, so callers cannot change the signer’s key', async () => {
    const signer = LocalMlDsaSigner.fromSeed(seed);
    const first = await signer.publicKey();
    first.fill(0);
    assert.notDeepEqual(await signer.publicKey(), first);
  });
});
