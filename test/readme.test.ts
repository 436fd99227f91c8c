import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createWebhookDispatcher } from '../lib/deps/webhooks.js';
import { drainChangeFeed } from './support/change-feed.js';
import { type HttpService, startHttpService } from './support/http-server.js';
import { useStack } from './support/stack.js';
import { waitFor } from './support/wait.js';

const root = path.resolve(import.meta.dirname, '..');
let base: string;
let service: HttpService | undefined;

before(async () => {
  await useStack();
  // The default ledger mode, as a newcomer's `npm start` runs it (batches; the test stack runs direct).
  delete process.env.LEDGER_BATCH_WINDOW_MS;
  service = await startHttpService();
  base = service.url;
});

after(() => service?.close());

/** A port of 127.0.0.1 nothing listens on now (the receiver's, instead of the README's 4000, which another run may hold). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** The fenced block of a document (README.md by default) that follows the given marker line. */
function readmeBlock(after: string, lang: string, file = 'README.md'): string {
  const text = readFileSync(path.join(root, file), 'utf8');
  const start = text.indexOf(after);
  assert.ok(start >= 0, `${file} has no "${after}"`);
  const fence = text.indexOf('```' + lang + '\n', start);
  const end = text.indexOf('\n```', fence + 4);
  return text.slice(fence + lang.length + 4, end + 1);
}

/** Every fenced block of one language in a section of a document (from its heading to the next heading of that level), in order. */
function sectionBlocks(file: string, heading: string, lang: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  const start = text.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `${file} has no "${heading}"`);
  const level = /^#+ /.exec(heading)?.[0] ?? '## ';
  const next = text.indexOf(`\n${level}`, start + heading.length + 2);
  const section = text.slice(start, next < 0 ? undefined : next);
  return [...section.matchAll(new RegExp('^```' + lang + '\\n([\\s\\S]*?)^```$', 'gm'))].map((m) => m[1] ?? '');
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
  it('runs the five-minute walk as written: register, set-tier, the anchor script, verify online, openssl against the pinned root, trust add and evidence verify; then the webhook walk (a standardwebhooks receiver verifies both events)', async () => {
    // The walk runs in the clone: `npm run admin` finds package.json above it, bin/ and .data are
    // where the walk names them (.data being the stack's DATA_DIR). .cache/ is ignored by git.
    mkdirSync(path.join(root, '.cache'), { recursive: true });
    const dir = mkdtempSync(path.join(root, '.cache', 'readme-walk-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    symlinkSync(path.join(root, 'bin'), path.join(dir, 'bin'));
    symlinkSync(process.env.DATA_DIR ?? '', path.join(dir, '.data'));
    writeFileSync(path.join(dir, 'photo.jpg'), `a photo of a dented car ${Date.now()}`);
    writeFileSync(path.join(dir, 'anchor-photo.mjs'), readmeBlock('Save it as `anchor-photo.mjs`', 'js'));
    const blocks = sectionBlocks('README.md', '## The five-minute walk', 'sh');
    assert.equal(blocks.length, 6, 'the walk: register and upgrade, anchor, verify online, openssl, evidence, sync');
    // Then Content Credentials (README "Content Credentials with our time"): the sample photo from test/fixtures.
    symlinkSync(path.join(root, 'test'), path.join(dir, 'test'));
    blocks.push(readmeBlock('## Content Credentials with our time', 'sh'));
    // Then the PDF certificate of the same photo (docs/starter.md), with `evidence` as `npm link` puts it on the PATH.
    blocks.push(readmeBlock('## The PDF certificate', 'sh', 'docs/starter.md'));
    writeFileSync(path.join(dir, 'evidence'), `#!/bin/sh\nexec "${process.execPath}" "${path.join(root, 'bin', 'evidence.mjs')}" "$@"\n`, { mode: 0o755 });
    // Then the webhook walk (README "Webhooks"): its receiver of a few lines on standardwebhooks, the
    // subscription with curl, another anchor; the receiver is stopped afterwards (the reader's Ctrl-C).
    const hookPort = await freePort();
    writeFileSync(path.join(dir, 'receiver.mjs'), readmeBlock('save it as `receiver.mjs`', 'js').replaceAll('4000', String(hookPort)));
    blocks.push(readmeBlock('## Webhooks', 'sh'), 'kill $!');
    // Only the addresses are the test's own: its API, its chain node, its receiver's port, and an e-mail no other run took.
    const email = `readme-walk-${Date.now()}@example.com`;
    const script = blocks
      .join('\n')
      .replaceAll('http://127.0.0.1:3000', base)
      .replaceAll('http://127.0.0.1:8545', process.env.LEDGER_RPC_URL ?? '')
      .replaceAll('127.0.0.1:4000', `127.0.0.1:${hookPort}`)
      .replaceAll('alice@example.com', email);
    // What `npm start` runs every second meanwhile: the change feed (with the webhooks' outbox) and the delivery worker.
    const received = () => (existsSync(path.join(dir, 'received.log')) ? readFileSync(path.join(dir, 'received.log'), 'utf8') : '');
    const worker = createWebhookDispatcher();
    let walking = true;
    let stopped = false;
    after(() => (stopped = true));
    const ticking = (async () => {
      while (!stopped && (walking || !/evidence\.final/.test(received()))) {
        await drainChangeFeed().catch(() => 0);
        await worker.tick().catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}`, EVIDENCE_TRUST_FILE: path.join(dir, 'trust.json') };
    delete env.NODE_OPTIONS;
    // Asynchronously: the walk talks to the server this very process runs; -e: every command must succeed.
    const { stdout, stderr } = await promisify(execFile)('bash', ['-e', '-c', script], { cwd: dir, env, encoding: 'utf8' }).finally(() => (walking = false));
    const out = `${stdout}${stderr}`;

    // The webhook walk: the receiver verified both events of the second photo (waited for: the walk's `sleep 5` is the reader's).
    const photo2 = createHash('sha256').update(readFileSync(path.join(dir, 'photo2.jpg'))).digest('hex');
    await waitFor('both events in received.log', 60_000, () => (/evidence\.final/.test(received()) ? true : undefined), 200);
    await ticking;
    await worker.idle();
    const lines = received().trim().split('\n');
    assert.deepEqual(
      lines.map((l) => l.replace(/msg_[0-9a-f]{32}/, 'msg_…')).sort(),
      [`verified msg_… evidence.anchored ${photo2}`, `verified msg_… evidence.final ${photo2}`],
      received(),
    );
    const webhook = JSON.parse(readFileSync(path.join(dir, 'webhook.json'), 'utf8')) as { secret: string; status: string };
    assert.match(webhook.secret, /^whsec_/);

    assert.match(out, /^200 /m, out);
    assert.match(out, /status: 'anchored'/);
    const explorer = /ledgerscan_url: '([^']+)'/.exec(out)?.[1];
    const txPath = explorer ? new URL(explorer).pathname : '';
    assert.match(txPath, /^\/ledger\/tx\/0x[0-9a-f]{64}$/, out);
    // The local chain has no public explorer: the service's own page is the link (PUBLIC_BASE_URL is its host).
    assert.equal((await fetch(`${base}${txPath}`)).status, 200);

    const hash = createHash('sha256').update(readFileSync(path.join(dir, 'photo.jpg'))).digest('hex');
    // curl prints the verdict without a newline: the line is the JSON, then what openssl printed next.
    const verify = JSON.parse(/^(\{"verified":.*\})(?:Verification: OK)?$/m.exec(stdout)?.[1] ?? '{}') as { verified?: boolean; image_hash?: string };
    assert.deepEqual([verify.verified, verify.image_hash], [true, hash], stdout);
    // The receipt the walk saved; the default (batch) mode, as a newcomer's npm start: the inclusion path is in it.
    const receipt = JSON.parse(readFileSync(path.join(dir, 'photo.jpg.receipt.json'), 'utf8')) as { image_hash: string; ledger: { merkle?: unknown } };
    assert.equal(receipt.image_hash, hash);
    assert.ok(receipt.ledger.merkle, 'batch mode by default: the receipt has ledger.merkle');
    assert.match(stdout, /Verification: OK/);
    assert.match(out, /Trusted http/);
    assert.match(stdout, /^VERIFIED: every proof was checked and holds\b/m, out);
    // The sync block: three photos, three receipts beside them, links 0 to 2 of the new device's chain.
    assert.match(stdout, /^synced 3 photos of 3 without a receipt; 3 receipts saved beside their photos$/m, out);
    for (const i of [1, 2, 3]) {
      const synced = JSON.parse(readFileSync(path.join(dir, 'photos', `IMG_${i}.jpg.receipt.json`), 'utf8')) as { image_hash: string; device: { chain_index: number } };
      assert.equal(synced.image_hash, createHash('sha256').update(readFileSync(path.join(dir, 'photos', `IMG_${i}.jpg`))).digest('hex'));
      assert.equal(synced.device.chain_index, i - 1);
    }
    for (const proof of ['ML-DSA-65 signature', 'RFC 3161 timestamp', 'ledger transaction', 'Merkle inclusion']) assert.match(stdout, new RegExp(`holds\\s+${proof}`), stdout);
    // The PDF block: pdfsig's verdict, the text, the receipt it carries, and the CLI's verdict on the PDF.
    assert.match(stdout, /Signature is Valid/, out);
    assert.ok(stdout.includes(hash), 'the certificate\'s text names the hash');
    assert.equal((JSON.parse(readFileSync(path.join(dir, 'receipt.json'), 'utf8')) as { image_hash: string }).image_hash, hash);
    // Content Credentials: signed, charged, anchored, and the official reader's verdict next to ours.
    assert.match(stdout, /^signed shot\.c2pa\.jpg: Content Credentials \(C2PA\) by Alice Photographer, time-stamped by /m, out);
    assert.match(stdout, /^shot\.c2pa\.jpg — Content Credentials \(C2PA\), the official reader's verdict$/m, out);
    assert.match(stdout, /^ {2}state {8}Trusted /m, out);
    assert.match(stdout, /^ {2}time-stamp {3}our TSA .*timeStamp\.trusted/m, out);
    // The walk's verify, the signed photo's, then the certificate's: the receipt it carries and the PDF's own signature.
    assert.equal(stdout.match(/^VERIFIED: every proof was checked and holds\b/gm)?.length, 4, out);
    assert.match(stdout, /holds\s+PDF signature \(PAdES\) over the whole file/, out);
  });

  it('runs docs/verify-without-us.md as written: the integrator block (keygen, anchor, verify with every anchor pinned by a flag), then the standard-tools blocks on its batched receipt', async () => {
    const account = await accountOverHttp('readme-integrator', 'pro');
    mkdirSync(path.join(root, '.cache'), { recursive: true });
    const dir = mkdtempSync(path.join(root, '.cache', 'readme-tools-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    symlinkSync(process.env.DATA_DIR ?? '', path.join(dir, '.data'));
    writeFileSync(path.join(dir, 'evidence'), `#!/bin/sh\nexec "${process.execPath}" "${path.join(root, 'bin', 'evidence.mjs')}" "$@"\n`, { mode: 0o755 });
    writeFileSync(path.join(dir, 'photo.jpg'), `a photo of a flooded cellar ${Date.now()}`);
    const doc = 'docs/verify-without-us.md';
    const integrator = readmeBlock('## Anchor from the command line', 'sh', doc);
    const blocks = sectionBlocks(doc, '## With standard tools only', 'sh');
    // The two blocks the document says no test runs: OpenSSL 3.5's ML-DSA and Foundry's cast.
    const notRun = blocks.filter((b) => b.includes('openssl pkeyutl -verify') || b.startsWith('cast '));
    assert.deepEqual([blocks.length, notRun.length], [6, 2]);
    const script = [integrator, ...blocks.filter((b) => !notRun.includes(b))]
      .join('\n')
      .replace(/^B=.*$/m, `B=${base}`)
      .replace(/^KEY=.*$/m, `KEY=${account.api_key}`)
      .replaceAll('http://127.0.0.1:8545', process.env.LEDGER_RPC_URL ?? '');
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}`, EVIDENCE_TRUST_FILE: path.join(dir, 'no-trust.json') };
    delete env.NODE_OPTIONS;
    const { stdout, stderr } = await promisify(execFile)('bash', ['-e', '-c', script], { cwd: dir, env, encoding: 'utf8' });
    const out = `${stdout}${stderr}`;
    // Every anchor pinned by its flag, no trust file: verified (bash -e: exit 0).
    assert.match(stdout, /^VERIFIED: every proof was checked and holds\b/m, out);
    const receipt = JSON.parse(readFileSync(path.join(dir, 'photo.jpg.receipt.json'), 'utf8')) as { server_hash: string; ledger: { input_data: string; merkle?: unknown } };
    assert.ok(receipt.ledger.merkle, 'batch mode by default');
    for (const line of ['file: OK', 'Verification: OK', 'server_hash: OK', 'ML-DSA-65: OK', 'inclusion: OK']) assert.match(stdout, new RegExp(`^${line}$`, 'm'), out);
    // The canonical statement recomputed by Python hashes to server_hash.
    assert.match(stdout, new RegExp(`^${receipt.server_hash}  -$`, 'm'), out);
    // The expected input the block computes is the one the chain holds, in a successful transaction.
    const expected = /^expected input: (0x[0-9a-f]+)$/m.exec(stdout)?.[1];
    assert.equal(expected, receipt.ledger.input_data);
    assert.match(stdout, new RegExp(`^${expected}$`, 'm'), out);
    assert.match(stdout, /^0x1$/m, out);
  });

  it('runs the Starter block as written: timestamps over JSON (classic and post-quantum) and RFC 3161, a signature, trust add and verify', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'readme-starter-'));
    const account = await accountOverHttp('readme-starter', 'starter');
    writeFileSync(path.join(dir, 'photo.jpg'), `a photo of a scratched door ${Date.now()}`);
    // Only the base URL and the key are the reader's own; `evidence` is this repository's bin.
    const block = readmeBlock('# Starter: stand-alone', 'sh', 'docs/starter.md')
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
    const block = readmeBlock('# v1: a device chain', 'sh', 'docs/v1-walkthrough.md')
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
