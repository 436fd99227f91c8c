/**
 * The service's Ed25519 signer on a KMS key (ECC_NIST_EDWARDS25519, ED25519_SHA_512, RAW) through
 * the KMS-protocol test server, the SDK's real client and serialisation; signatures checked with
 * node:crypto against the key KMS reports, not with the signer's own code.
 */
import assert from 'node:assert/strict';
import { createPublicKey, randomBytes, verify as nodeVerify } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ed25519PublicKeyFromSeed } from '../../lib/crypto/ed25519.js';
import { KmsEd25519Signer, LocalEd25519Signer, ed25519KeyId } from '../../lib/crypto/ed25519-signer.js';
import { ecdsaTestKey, ed25519TestKey, startKmsTestServer, type KmsTestServer } from '../support/kms-server.js';

const seed = randomBytes(32);
const key = ed25519TestKey('5a5a5a5a-1111-4222-8333-944445555666', seed);
const p256 = ecdsaTestKey('6b6b6b6b-1111-4222-8333-944445555666', 'ECC_NIST_P256', randomBytes(32));
const jwkOf = (publicKey: Uint8Array) => createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey).toString('base64url') }, format: 'jwk' });

describe('KmsEd25519Signer against a KMS-protocol test server', () => {
  let kms: KmsTestServer;
  before(async () => {
    kms = await startKmsTestServer([key, p256]);
  });
  after(() => kms.close());

  it('signs with ED25519_SHA_512 over the RAW message; node:crypto verifies it with the key KMS reports', async () => {
    const signer = await KmsEd25519Signer.connect(kms.client(), kms.arn(key.keyId));
    const message = new TextEncoder().encode('{"sha256_hash":"00"}');
    const signature = await signer.sign(message);
    assert.equal(signature.length, 64);
    assert.equal(nodeVerify(null, message, jwkOf(key.publicKey), signature), true);
    const sign = kms.requests.filter((r) => r.operation === 'Sign').at(-1);
    assert.equal(sign?.body.SigningAlgorithm, 'ED25519_SHA_512');
    assert.equal(sign?.body.MessageType, 'RAW');
  });

  it('has the key id and public key of the same seed held locally', async () => {
    const signer = await KmsEd25519Signer.connect(kms.client(), key.keyId);
    assert.deepEqual(await signer.publicKey(), ed25519PublicKeyFromSeed(seed));
    assert.equal(signer.keyId, ed25519KeyId(key.publicKey));
    assert.equal(signer.keyId, LocalEd25519Signer.fromSeed(seed).keyId);
  });

  it('refuses a key of another key spec', async () => {
    await assert.rejects(KmsEd25519Signer.connect(kms.client(), p256.keyId), /key spec ECC_NIST_P256, expected ECC_NIST_EDWARDS25519/);
  });

  it('refuses a signature that does not verify under the key (a faulty answer never leaves the signer)', async () => {
    const faulty = await startKmsTestServer([key], {
      transformResponse: (op, body) => (op === 'Sign' ? { ...body, Signature: Buffer.alloc(64, 7).toString('base64') } : body),
    });
    try {
      const signer = await KmsEd25519Signer.connect(faulty.client(), key.keyId);
      await assert.rejects(signer.sign(new Uint8Array([1, 2, 3])), /does not verify/);
    } finally {
      await faulty.close();
    }
  });

  it('refuses an empty message and one over KMS’s 4096-byte RAW limit before calling KMS', async () => {
    const signer = await KmsEd25519Signer.connect(kms.client(), key.keyId);
    const before = kms.requests.length;
    await assert.rejects(signer.sign(new Uint8Array(0)), RangeError);
    await assert.rejects(signer.sign(new Uint8Array(4097)), RangeError);
    assert.equal(kms.requests.length, before);
  });
});
