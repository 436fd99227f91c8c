/**
 * DATA_DIR owner-only (decisions.md "Running it"): it holds e-mail addresses, scrypt password
 * hashes, API key hashes, the JWT secret and every private key of the local stack, so `npm start`
 * makes it, and what the stack keeps in it, readable by its owner alone, whatever the user's umask
 * and however the directory was made (`mkdir -m755`, a copy, a restored backup):
 *
 * - its umask becomes 077 before anything is written, so every file and directory the stack and
 *   its children (dynalite, the Hardhat node: they inherit it) create from then on is 0600 / 0700,
 *   SQLite's database and its -wal and -shm files included (SQLite gives those the database's mode);
 * - DATA_DIR itself becomes 0700: no other user can even look inside;
 * - what the stack keeps there ({@link STACK_ENTRIES}, walked to the bottom) becomes 0700 for
 *   directories and 0600 for files. Nothing else in DATA_DIR is touched (DATA_DIR set to a
 *   directory with other files in it must not lose their modes); the 0700 of DATA_DIR covers them.
 *   Symbolic links are not followed.
 *
 * A mode that cannot be set (a directory or file of another user, a read-only file system) stops
 * the start before anything is written: {@link DataDirError}, whose message names the path.
 */
import { chmod, lstat, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';

/** What the local stack writes into DATA_DIR (a name, or a prefix ending in `*`). */
export const STACK_ENTRIES = [
  'dynamodb', // dynalite's items (SQLite: items.sqlite, -wal, -shm)
  'dynamodb.*', // dynamodb.log; dynamodb.migrating and dynamodb.leveldb-<time> of a LevelDB migration
  'chain.log',
  'chain-blocks.jsonl', // the local chain's block journal
  'chain-blocks.jsonl.*',
  'keys', // seeds, the wallet keys, the key registry
  'secrets', // the JWT secret
  'tsa', // the TSAs' keys and certificates, their history
  'pdf-signer',
] as const;

export class DataDirError extends Error {}

const matches = (name: string) => STACK_ENTRIES.some((e) => (e.endsWith('*') ? name.startsWith(e.slice(0, -1)) : name === e));

/** Makes `dir` (created if missing) and the stack's entries in it owner-only; see the module comment. */
export async function ownerOnlyDataDir(dir: string): Promise<void> {
  process.umask(0o077);
  const refuse = (p: string, error: unknown, want: string): never => {
    const code = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
    throw new DataDirError(
      `DATA_DIR ${dir} cannot be made owner-only (${want}): ${p === dir ? 'chmod' : `chmod of ${p}`} failed (${code}); ` +
        'it holds password hashes and private keys: use a DATA_DIR of your own, or make it yours (chown) first',
    );
  };
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new DataDirError(`DATA_DIR ${dir} cannot be created: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  if (!(await lstat(dir).then((s) => s.isDirectory() || s.isSymbolicLink()))) throw new DataDirError(`DATA_DIR ${dir} is not a directory`);
  await chmod(dir, 0o700).catch((error: unknown) => refuse(dir, error, '0700'));
  const tighten = async (p: string): Promise<void> => {
    const s = await lstat(p);
    if (s.isDirectory()) {
      if ((s.mode & 0o777) !== 0o700) await chmod(p, 0o700).catch((error: unknown) => refuse(p, error, '0700'));
      for (const name of await readdir(p)) await tighten(path.join(p, name));
    } else if (s.isFile() && (s.mode & 0o777) !== 0o600) {
      await chmod(p, 0o600).catch((error: unknown) => refuse(p, error, '0600'));
    }
  };
  for (const name of await readdir(dir)) if (matches(name)) await tighten(path.join(dir, name));
}
