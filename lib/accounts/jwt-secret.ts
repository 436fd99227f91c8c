import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { DecryptCommand, type KMSClient } from '@aws-sdk/client-kms';
import { createKmsClient } from '../crypto/kms-client.js';

/** HS256 keys shorter than the hash output (32 bytes) are refused (RFC 7518 §3.2); jose itself accepts them. */
export const MIN_JWT_SECRET_BYTES = 32;

/**
 * Where the HS256 secret comes from (the configuration's `jwt`): exactly one source, a file
 * (local, generated), a plain value (JWT_SECRET), or a KMS-encrypted value (JWT_SECRET_KMS_CIPHERTEXT).
 */
export interface JwtSecretSource {
  source: 'file' | 'env' | 'kms';
  file: string;
  value: string | undefined;
  kmsCiphertext: string | undefined;
}

/** Decrypts a KMS ciphertext (the port the KMS source uses; tests pass their own). */
export type KmsDecrypt = (ciphertext: Uint8Array) => Promise<Uint8Array>;

/** The JWT secret is shorter than {@link MIN_JWT_SECRET_BYTES} or cannot be read. */
export class JwtSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JwtSecretError';
  }
}

/**
 * A `KmsDecrypt` over the AWS SDK: one `Decrypt` call (symmetric key; the key id is inside the
 * ciphertext). Takes the region, or a client (tests point one at the KMS-protocol test server).
 */
export function kmsDecrypt(region: string | KMSClient): KmsDecrypt {
  const client = typeof region === 'string' ? createKmsClient(region) : region;
  return async (ciphertext) => {
    const out = await client.send(new DecryptCommand({ CiphertextBlob: ciphertext }));
    if (!out.Plaintext) throw new JwtSecretError('KMS returned no plaintext for JWT_SECRET_KMS_CIPHERTEXT');
    return out.Plaintext;
  };
}

/**
 * Reads the HS256 secret from the configured source, once:
 * - `file`: the secret generated into DATA_DIR by lib/local/bootstrap.ts (its UTF-8 text, trimmed);
 * - `env`: JWT_SECRET (its UTF-8 bytes);
 * - `kms`: JWT_SECRET_KMS_CIPHERTEXT (base64), decrypted with KMS (the plaintext bytes).
 * Throws {@link JwtSecretError} for a secret under 32 bytes.
 */
export async function loadJwtSecret(jwt: JwtSecretSource, decrypt?: KmsDecrypt, region = 'eu-central-1'): Promise<Uint8Array> {
  let secret: Uint8Array;
  switch (jwt.source) {
    case 'env':
      secret = Buffer.from(jwt.value ?? '', 'utf8');
      break;
    case 'file':
      try {
        secret = Buffer.from((await readFile(jwt.file, 'utf8')).trim(), 'utf8');
      } catch {
        throw new JwtSecretError(`the JWT secret file ${jwt.file} cannot be read (npm start generates it)`);
      }
      break;
    case 'kms':
      secret = await (decrypt ?? kmsDecrypt(region))(Buffer.from(jwt.kmsCiphertext ?? '', 'base64'));
      break;
  }
  if (secret.length < MIN_JWT_SECRET_BYTES) {
    throw new JwtSecretError(`the JWT secret (${jwt.source}) has ${secret.length} bytes; at least ${MIN_JWT_SECRET_BYTES} are required`);
  }
  return secret;
}

const cache = new Map<string, Promise<Uint8Array>>();

/**
 * {@link loadJwtSecret} memoised per source for the life of the process (one KMS call per Lambda
 * container). A failed load is forgotten so that the next request tries again.
 */
export function cachedJwtSecret(jwt: JwtSecretSource, region: string, decrypt?: KmsDecrypt): Promise<Uint8Array> {
  const id = [jwt.source, jwt.file, jwt.kmsCiphertext ?? '', createHash('sha256').update(jwt.value ?? '').digest('hex')].join('|');
  let secret = cache.get(id);
  if (!secret) {
    secret = loadJwtSecret(jwt, decrypt, region);
    cache.set(id, secret);
    secret.catch(() => cache.delete(id));
  }
  return secret;
}
