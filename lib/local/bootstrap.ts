import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.js';

/**
 * Local secrets live in DATA_DIR, generated on first start and reused after: the JWT secret,
 * the ML-DSA-65 seed, the ledger wallet key and the embedded TSA's root and certificate.
 * Files are written owner-only (0600) and never logged. Production takes them from KMS instead.
 */
export async function ensureLocalSecrets(config: Config): Promise<{ created: string[] }> {
  const created: string[] = [];
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  if (config.jwt.source === 'file' && (await writeIfMissing(config.jwt.file, () => randomBytes(32).toString('base64url')))) {
    created.push('jwt secret');
  }
  if (config.signer.scheme === 'local' && !config.signer.seedHex && (await writeIfMissing(config.signer.seedFile, () => randomBytes(32).toString('hex')))) {
    created.push('ML-DSA-65 seed');
  }
  return { created };
}

/** Writes `make()` to `file` (0600) unless it exists; true when it wrote. */
export async function writeIfMissing(file: string, make: () => string | Promise<string>): Promise<boolean> {
  try {
    await readFile(file);
    return false;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(file, await make(), { mode: 0o600, flag: 'wx' });
  return true;
}
