import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type HttpService, startHttpService } from './support/http-server.js';
import { useStack } from './support/stack.js';

const root = path.resolve(import.meta.dirname, '..');
let base: string;
let service: HttpService | undefined;

before(async () => {
  await useStack();
  service = await startHttpService();
  base = service.url;
});

after(() => service?.close());

/** The fenced block of the README that follows the given marker line. */
function readmeBlock(after: string, lang: string): string {
  const text = readFileSync(path.join(root, 'README.md'), 'utf8');
  const start = text.indexOf(after);
  assert.ok(start >= 0, `README has no "${after}"`);
  const fence = text.indexOf('```' + lang + '\n', start);
  const end = text.indexOf('\n```', fence + 4);
  return text.slice(fence + lang.length + 4, end + 1);
}


/** A new account through the real register endpoint, moved to `tier` by the admin endpoint, as the README's blocks do. */
async function accountOverHttp(label: string, tier: 'starter' | 'pro'): Promise<{ account_id: string; api_key: string }> {
  const register = await fetch(`${base}/api/v2/account/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `${label}-${Date.now()}@example.com`, password: 'a long enough password' }),
  });
  const account = (await register.json()) as { account_id: string; api_key: string };
  const upgrade = await fetch(`${base}/api/v2/admin/accounts/${account.account_id}/tier`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.ADMIN_TOKEN}` },
    body: JSON.stringify({ tier }),
  });
  assert.equal(upgrade.status, 200);
  return account;
}
describe('the README walk-through, over real HTTP', () => {
  it('anchors a photo with the README script, verifies it, and the receipt token passes openssl', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'readme-'));
    const register = await fetch(`${base}/api/v2/account/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `readme-${Date.now()}@example.com`, password: 'a long enough password' }),
    });
    assert.equal(register.status, 200);
    const account = (await register.json()) as { account_id: string; api_key: string };
    const upgrade = await fetch(`${base}/api/v2/admin/accounts/${account.account_id}/tier`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.ADMIN_TOKEN}` },
      body: JSON.stringify({ tier: 'pro' }),
    });
    assert.equal(upgrade.status, 200);

    const script = path.join(dir, 'anchor-photo.mjs');
    writeFileSync(script, readmeBlock('Then a short Node script', 'js'));
    const photo = path.join(dir, 'photo.jpg');
    writeFileSync(photo, `a photo of a dented car ${Date.now()}`);
    // Asynchronously: the script talks to the server this very process runs.
    const { stdout: out } = await promisify(execFile)(process.execPath, [script, photo, account.api_key, base], { encoding: 'utf8' });
    assert.match(out, /^200 /);
    assert.match(out, /status: 'anchored'/);
    const explorer = /ledgerscan_url: '([^']+)'/.exec(out)?.[1];
    const txPath = explorer ? new URL(explorer).pathname : '';
    assert.match(txPath, /^\/ledger\/tx\/0x[0-9a-f]{64}$/, out);
    // The local chain has no public explorer: the service's own page is the link (PUBLIC_BASE_URL is its host).
    assert.equal((await fetch(`${base}${txPath}`)).status, 200);

    const hash = createHash('sha256').update(readFileSync(photo)).digest('hex');
    const verify = (await (await fetch(`${base}/api/v2/evidence/verify/${hash}`)).json()) as { verified: boolean };
    assert.equal(verify.verified, true);

    writeFileSync(path.join(dir, 'receipt.json'), await (await fetch(`${base}/api/v2/evidence/receipt/${hash}`)).text());
    const extract = readmeBlock('The receipt\'s timestamp token passes OpenSSL', 'sh').split('\n').filter((l) => l.startsWith('node') || l.startsWith('  fs.'));
    execFileSync('bash', ['-c', extract.join('\n')], { cwd: dir });
    const verdict = execFileSync('openssl', ['ts', '-verify', '-data', 'photo.jpg', '-in', 'token.tsr', '-CAfile', 'root.pem'], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    assert.match(verdict, /Verification: OK/);
  });

  it('runs the Starter block as written: timestamps over JSON (classic and post-quantum) and RFC 3161, a signature, trust add and verify', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'readme-starter-'));
    const account = await accountOverHttp('readme-starter', 'starter');
    writeFileSync(path.join(dir, 'photo.jpg'), `a photo of a scratched door ${Date.now()}`);
    // Only the base URL and the key are the reader's own; `evidence` is this repository's bin.
    const block = readmeBlock('## Starter: stand-alone', 'sh')
      .replace(/^B=.*$/m, `B=${base}`)
      .replace(/^KEY=.*$/m, `KEY=${account.api_key}`);
    writeFileSync(path.join(dir, 'evidence'), `#!/bin/sh\nexec "${process.execPath}" "${path.join(root, 'bin', 'evidence.mjs')}" "$@"\n`, { mode: 0o755 });
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}`, EVIDENCE_TRUST_FILE: path.join(dir, 'trust.json') };
    delete env.NODE_OPTIONS;
    // Asynchronously: the block talks to the server this very process runs.
    const { stdout, stderr } = await promisify(execFile)('bash', ['-e', '-c', block], { cwd: dir, env, encoding: 'utf8' });
    const out = `${stdout}${stderr}`;
    assert.equal(out.match(/Verification: OK/g)?.length, 3, out);
    assert.match(out, /Ed25519: OK \(ed25519:[0-9a-f]{16}\)/);
    assert.match(out, /Trusted http/);
    assert.equal(out.match(/^VERIFIED: every proof was checked and holds\b/gm)?.length, 3, out);
    // The post-quantum answer of the block: an ML-DSA-65 token under the post-quantum policy.
    const pq = JSON.parse(readFileSync(path.join(dir, 't-pq.json'), 'utf8')) as { policy: string };
    assert.equal(pq.policy, '2.25.240188381855450738062415899808185980756');
  });

  it('runs the v1 block as written: two links of a device chain, the public reads, a timestamp and the 409', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'readme-v1-'));
    const account = await accountOverHttp('readme-v1', 'pro');
    writeFileSync(path.join(dir, 'photo1.jpg'), `a photo of a broken window ${Date.now()}`);
    writeFileSync(path.join(dir, 'photo2.jpg'), `a photo of the same window, closer ${Date.now()}`);
    // The reader's own base URL and key; every answer is then followed by its status on a line of its own.
    const block = readmeBlock('## v1: a device chain', 'sh')
      .replace(/^B=.*$/m, `B=${base}`)
      .replace(/^KEY=.*$/m, `KEY=${account.api_key}`)
      .replaceAll('curl -s ', "curl -s -w '\\n%{http_code}\\n' ");
    const { stdout } = await promisify(execFile)('bash', ['-e', '-c', block], { cwd: dir, encoding: 'utf8' });
    const lines = stdout.split('\n').filter(Boolean);
    const statuses = lines.filter((l) => /^\d{3}$/.test(l)).map(Number);
    assert.deepEqual(statuses, [201, 201, 200, 200, 200, 200, 200, 409], stdout);
    const [link0, link1, verify, all, ledger, pq, timestamp, again] = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual([link0?.chain_index, link1?.chain_index, link1?.tx_status], [0, 1, 'confirmed']);
    assert.deepEqual([verify?.verified, verify?.previous_hash === undefined], [true, false]);
    assert.equal((all?.integrity as { verdict?: string } | undefined)?.verdict, 'complete');
    assert.equal(all?.chain_length, 2);
    assert.deepEqual([ledger?.verified, ledger?.data_matches, pq?.verified, pq?.algorithm], [true, true, true, 'ML-DSA-65']);
    assert.equal(typeof timestamp?.timestamp_token, 'string');
    assert.equal(again?.code, 'hash_already_anchored');
  });
});
