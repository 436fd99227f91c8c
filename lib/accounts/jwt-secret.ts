import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ProcessCache } from '../memo.js';

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

/** Decrypts a KMS ciphertext (the port the KMS source uses: lib/crypto/kms-decrypt.ts, wired by lib/deps; tests pass their own). */
export type KmsDecrypt = (ciphertext: Uint8Array) => Promise<Uint8Array>;

/** The JWT secret is shorter than {@link MIN_JWT_SECRET_BYTES} or cannot be read. */
export class JwtSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JwtSecretError';
  }
}

/**
 * Reads the HS256 secret from the configured source, once:
 * - `file`: the secret generated into DATA_DIR by lib/local/bootstrap.ts (its UTF-8 text, trimmed);
 * - `env`: JWT_SECRET (its UTF-8 bytes);
 * - `kms`: JWT_SECRET_KMS_CIPHERTEXT (base64), decrypted by `decrypt` (the plaintext bytes).
 * Throws {@link JwtSecretError} for a secret under 32 bytes, or a `kms` source without `decrypt`.
 */
export async function loadJwtSecret(jwt: JwtSecretSource, decrypt?: KmsDecrypt): Promise<Uint8Array> {
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
      if (!decrypt) throw new JwtSecretError('JWT_SECRET_KMS_CIPHERTEXT is set but no KMS decryption was given');
      secret = await decrypt(Buffer.from(jwt.kmsCiphertext ?? '', 'base64'));
      break;
  }
  if (secret.length < MIN_JWT_SECRET_BYTES) {
    throw new JwtSecretError(`the JWT secret (${jwt.source}) has ${secret.length} bytes; at least ${MIN_JWT_SECRET_BYTES} are required`);
  }
  return secret;
}

const cache = new ProcessCache<string, Promise<Uint8Array>>('JWT secrets by source', 8);

/**
 * {@link loadJwtSecret} memoised per source for the life of the process (one KMS call per Lambda
 * container). A failed load is forgotten so that the next request tries again.
 */
export function cachedJwtSecret(jwt: JwtSecretSource, decrypt?: KmsDecrypt): Promise<Uint8Array> {
  const id = [jwt.source, jwt.file, jwt.kmsCiphertext ?? '', createHash('sha256').update(jwt.value ?? '').digest('hex')].join('|');
  return cache.getOrSet(id, () => loadJwtSecret(jwt, decrypt));
}
