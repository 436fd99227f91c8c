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

  it('runs the Starter block as written: timestamps over JSON and RFC 3161, a signature, trust add and verify', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'readme-starter-'));
    const register = await fetch(`${base}/api/v2/account/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `readme-starter-${Date.now()}@example.com`, password: 'a long enough password' }),
    });
    const account = (await register.json()) as { account_id: string; api_key: string };
    const upgrade = await fetch(`${base}/api/v2/admin/accounts/${account.account_id}/tier`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.ADMIN_TOKEN}` },
      body: JSON.stringify({ tier: 'starter' }),
    });
    assert.equal(upgrade.status, 200);
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
    assert.equal(out.match(/^VERIFIED: every proof was checked and holds\./gm)?.length, 2, out);
  });
});
