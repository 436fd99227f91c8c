import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { EncryptCommand } from '@aws-sdk/client-kms';
import { JwtSecretError, loadJwtSecret } from '../../lib/accounts/jwt-secret.js';
import { kmsDecrypt } from '../../lib/crypto/kms-decrypt.js';
import { loadConfig } from '../../lib/config.js';
import { ecdsaTestKey, startKmsTestServer, symmetricTestKey, type KmsTestServer } from '../support/kms-server.js';

/**
 * JWT_SECRET_KMS_CIPHERTEXT through the real @aws-sdk/client-kms: the ciphertext is made the way
 * docs/runbook.md makes it (`aws kms encrypt … --query CiphertextBlob --output text`, i.e. the
 * base64 CiphertextBlob of Encrypt on a SYMMETRIC_DEFAULT key) and decrypted by KMS Decrypt.
 */

const jwtKey = symmetricTestKey('3f4e5d6c-jwt0-4a1b-8c2d-000000000001');
const otherKey = symmetricTestKey('3f4e5d6c-jwt0-4a1b-8c2d-000000000002');
const signingKey = ecdsaTestKey('3f4e5d6c-p256-4a1b-8c2d-000000000003', 'ECC_NIST_P256', randomBytes(32));
let kms: KmsTestServer;

before(async () => {
  kms = await startKmsTestServer([jwtKey, otherKey, signingKey], { aliases: { 'alias/evidence-jwt': jwtKey.keyId } });
});

after(async () => {
  await kms.close();
});

async function encrypt(plaintext: Uint8Array, keyId = 'alias/evidence-jwt'): Promise<string> {
  const out = await kms.client().send(new EncryptCommand({ KeyId: keyId, Plaintext: plaintext }));
  assert.ok(out.CiphertextBlob);
  return Buffer.from(out.CiphertextBlob).toString('base64');
}

function jwtConfig(ciphertext: string) {
  return loadConfig({ JWT_SECRET_KMS_CIPHERTEXT: ciphertext }).jwt;
}

describe('the JWT secret from KMS-encrypted configuration', () => {
  it('decrypts JWT_SECRET_KMS_CIPHERTEXT with KMS Decrypt, the key named by the ciphertext itself', async () => {
    const secret = randomBytes(48);
    const jwt = jwtConfig(await encrypt(secret));
    assert.equal(jwt.source, 'kms');
    const before = kms.requests.length;
    const loaded = await loadJwtSecret(jwt, kmsDecrypt(kms.client()));
    assert.deepEqual(Buffer.from(loaded), secret);
    const calls = kms.requests.slice(before);
    assert.deepEqual(calls.map((r) => r.operation), ['Decrypt']);
    assert.equal(calls[0]?.body.KeyId, undefined, 'no key id needed for a symmetric ciphertext');
  });

  it('refuses a ciphertext that was altered', async () => {
    const blob = Buffer.from(await encrypt(randomBytes(32)), 'base64');
    blob[blob.length - 1]! ^= 0x01;
    await assert.rejects(loadJwtSecret(jwtConfig(blob.toString('base64')), kmsDecrypt(kms.client())), { name: 'InvalidCiphertextException' });
  });

  it('refuses a decrypted secret shorter than 32 bytes', async () => {
    await assert.rejects(loadJwtSecret(jwtConfig(await encrypt(randomBytes(16))), kmsDecrypt(kms.client())), JwtSecretError);
  });

  it('decrypts with the key that encrypted, whichever that is (rotation to a new key needs only a new ciphertext)', async () => {
    const secret = randomBytes(32);
    assert.deepEqual(Buffer.from(await loadJwtSecret(jwtConfig(await encrypt(secret, otherKey.keyId)), kmsDecrypt(kms.client()))), secret);
  });

  it('is answered by the test server like KMS: Encrypt on a signing key is refused', async () => {
    await assert.rejects(kms.client().send(new EncryptCommand({ KeyId: signingKey.keyId, Plaintext: randomBytes(8) })), { name: 'InvalidKeyUsageException' });
  });
});
