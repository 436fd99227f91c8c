import { DecryptCommand, type KMSClient } from '@aws-sdk/client-kms';
import { createKmsClient } from './kms-client.js';

/**
 * KMS Decrypt of a symmetric ciphertext (the key id is inside the ciphertext): what the JWT secret
 * loader (lib/accounts/jwt-secret.ts) is given for JWT_SECRET_KMS_CIPHERTEXT. Takes the region,
 * or a client (tests point one at the KMS-protocol test server).
 */
export function kmsDecrypt(region: string | KMSClient): (ciphertext: Uint8Array) => Promise<Uint8Array> {
  const client = typeof region === 'string' ? createKmsClient(region) : region;
  return async (ciphertext) => {
    const out = await client.send(new DecryptCommand({ CiphertextBlob: ciphertext }));
    if (!out.Plaintext) throw new Error('KMS returned no plaintext for JWT_SECRET_KMS_CIPHERTEXT');
    return out.Plaintext;
  };
}
