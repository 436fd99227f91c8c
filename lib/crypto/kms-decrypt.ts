import { DecryptCommand, type KMSClient } from '@aws-sdk/client-kms';

/**
 * KMS Decrypt of a symmetric ciphertext (the key id is inside the ciphertext): what the JWT secret
 * loader (lib/accounts/jwt-secret.ts) is given for JWT_SECRET_KMS_CIPHERTEXT. Takes the client:
 * the process's one (lib/deps/kms.ts), or a test's pointed at the KMS-protocol test server.
 */
export function kmsDecrypt(client: KMSClient): (ciphertext: Uint8Array) => Promise<Uint8Array> {
  return async (ciphertext) => {
    const out = await client.send(new DecryptCommand({ CiphertextBlob: ciphertext }));
    if (!out.Plaintext) throw new Error('KMS returned no plaintext for JWT_SECRET_KMS_CIPHERTEXT');
    return out.Plaintext;
  };
}
