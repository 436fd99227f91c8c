import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { loadOrCreateLocalWallet } from '../../lib/ledger/local-wallet.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'ledger-wallet-'));
  dirs.push(d);
  return d;
}

describe('local wallet key file', () => {
  it('creates an owner-only key once and loads the same key after', async () => {
    const file = path.join(await tempDir(), 'keys', 'ledger-wallet.key');
    const created = await loadOrCreateLocalWallet(file);
    assert.equal(created.created, true);
    assert.match(created.privateKey, /^0x[0-9a-f]{64}$/);
    assert.match(created.address, /^0x[0-9a-fA-F]{40}$/);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal((await readFile(file, 'utf8')).trim(), created.privateKey);
    const loaded = await loadOrCreateLocalWallet(file);
    assert.deepEqual(loaded, { ...created, created: false });
  });

  it('agrees on one key when several processes create it at once', async () => {
    const file = path.join(await tempDir(), 'w.key');
    const all = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateLocalWallet(file)));
    assert.equal(new Set(all.map((w) => w.address)).size, 1);
    assert.equal(all.filter((w) => w.created).length, 1);
  });

  it('refuses a file that is not a key, without printing its content', async () => {
    const file = path.join(await tempDir(), 'bad.key');
    await writeFile(file, 'secret-but-not-a-key', { mode: 0o600 });
    await assert.rejects(loadOrCreateLocalWallet(file), (e: Error) => !e.message.includes('secret-but-not-a-key') && /not 32 bytes/.test(e.message));
  });
});
