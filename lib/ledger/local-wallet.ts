import { randomBytes } from 'node:crypto';
import { chmod, link, mkdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Wallet } from 'ethers';

/**
 * The local ledger wallet: a secp256k1 private key in a file (hex, one line, mode 0600), created on
 * first start and reused after, so that the address (and every transaction replayed into a fresh
 * local node) stays the same. Production uses a KMS signer instead.
 */

export interface LocalWalletKey {
  /** 0x + 64 hex characters. Never log it. */
  privateKey: string;
  /** Checksummed address. */
  address: string;
  /** True when this call generated the key. */
  created: boolean;
}

const KEY_LINE = /^(0x)?([0-9a-fA-F]{64})\s*$/;

/**
 * The files of the local wallet (next to DATA_DIR/keys/ledger-wallet.key): `live` is the key the
 * stack signs with; `next` the key a rotation made (`npm run admin -- rotate-key ledger-wallet`)
 * until the next start has funded it and switched to it (lib/local/wallet-rotation.ts); `genesis`
 * the key of the wallet the local chain funded in its genesis block, kept once the first rotation
 * begins: Hardhat takes genesis accounts by private key, and the chain rebuilt at every start must
 * have the same genesis (same block hashes). Nothing signs with it after its retirement.
 */
export function localWalletFiles(live: string): { live: string; next: string; genesis: string } {
  return { live, next: `${live}.next`, genesis: path.join(path.dirname(live), 'ledger-wallet.genesis.key') };
}

/** The key in `file` (0x + 64 hex), or null when there is no such file. */
export async function readLocalWalletKey(file: string): Promise<string | null> {
  return readKey(file);
}

/** A second name for the key file `from` (a hard link: the same bytes and mode 0600), unless `to` exists. */
export async function keepKeyAs(from: string, to: string): Promise<void> {
  try {
    await link(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

async function readKey(file: string): Promise<string | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  const match = KEY_LINE.exec(text);
  if (!match?.[2]) throw new Error(`The ledger wallet key file ${file} is not 32 bytes of hex: fix or remove it`);
  return `0x${match[2].toLowerCase()}`;
}

/** Loads the key in `file`, or creates it (atomically: two processes starting together agree on one key). */
export async function loadOrCreateLocalWallet(file: string): Promise<LocalWalletKey> {
  const existing = await readKey(file);
  if (existing) {
    const mode = (await stat(file)).mode & 0o777;
    if (mode & 0o077) await chmod(file, 0o600).catch(() => undefined);
    return { privateKey: existing, address: new Wallet(existing).address, created: false };
  }
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  // A private key must be in [1, n-1]; ethers rejects the (astronomically unlikely) others, so retry.
  let wallet: Wallet | null = null;
  while (!wallet) {
    try {
      wallet = new Wallet(`0x${randomBytes(32).toString('hex')}`);
    } catch {
      wallet = null;
    }
  }
  // Write a temporary file, then hard-link it into place: link fails if the file appeared meanwhile,
  // so the key is never half-written and never replaced.
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, `${wallet.privateKey}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(tmp, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const winner = await readKey(file);
    if (!winner) throw new Error(`The ledger wallet key file ${file} appeared but could not be read`);
    return { privateKey: winner, address: new Wallet(winner).address, created: false };
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  return { privateKey: wallet.privateKey, address: wallet.address, created: true };
}
