/**
 * GET /api/v2/evidence/certificate/{image_hash}: the signed PDF certificate, checked with the tools a
 * reader has (poppler's pdftotext, pdfsig, pdftoppm and pdfdetach, zbarimg, qpdf) and with the
 * evidence CLI, plus who may have one (404/403) and what it costs (one unit of quota).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { resetCoreDeps } from '../../lib/deps/core.js';
import { getLedgerSender } from '../../lib/deps/anchoring.js';
import { loadPqFingerprints } from '../../lib/deps/verification.js';
import { main as evidenceCli } from '../../lib/cli/evidence.js';
import { createAccount, Device, json, randomHash } from '../support/client.js';
import { useStack } from '../support/stack.js';

const run = promisify(execFile);
const RESULTS = path.resolve(import.meta.dirname, '..', '..', 'test-results');

let app: typeof import('../../functions/v2/evidence-certificate.js').app;
let anchorApp: typeof import('../../functions/v2/evidence-anchor.js').app;
let hashApp: typeof import('../../functions/v2/evidence-hash.js').app;
let usageApp: typeof import('../../functions/v2/account-usage.js').app;
let timestampApp: typeof import('../../functions/v2/evidence-timestamp.js').app;
let signApp: typeof import('../../functions/v2/evidence-sign.js').app;
let jwksApp: typeof import('../../functions/web/jwks.js').app;
let dir: string;
let pro: Awaited<ReturnType<typeof createAccount>>;
let photo: Buffer;
let imageHash: string;
let txHash: string;
let pdfFile: string;

async function getCertificate(hash: string, apiKey: string): Promise<Response> {
  return app.request(`/api/v2/evidence/certificate/${hash}`, { headers: { 'x-api-key': apiKey } });
}

before(async () => {
  await useStack();
  ({ app } = await import('../../functions/v2/evidence-certificate.js'));
  ({ app: anchorApp } = await import('../../functions/v2/evidence-anchor.js'));
  ({ app: hashApp } = await import('../../functions/v2/evidence-hash.js'));
  ({ app: usageApp } = await import('../../functions/v2/account-usage.js'));
  ({ app: timestampApp } = await import('../../functions/v2/evidence-timestamp.js'));
  ({ app: signApp } = await import('../../functions/v2/evidence-sign.js'));
  ({ app: jwksApp } = await import('../../functions/web/jwks.js'));
  dir = await mkdtemp(path.join(os.tmpdir(), 'evidence-certificate-'));
  pro = await createAccount('pro');
  photo = Buffer.from(`JPEG bytes of a photo ${randomHash()}`);
  imageHash = sha256Hex(photo);
  const res = await anchorApp.request('/api/v2/evidence/anchor', json(new Device().next(imageHash), { 'x-api-key': pro.apiKey }));
  assert.equal(res.status, 200, await res.clone().text());
  txHash = ((await res.json()) as { tx_hash: string }).tx_hash;
  const cert = await getCertificate(imageHash, pro.apiKey);
  assert.equal(cert.status, 200, await cert.clone().text());
  assert.equal(cert.headers.get('content-type'), 'application/pdf');
  pdfFile = path.join(dir, 'certificate.pdf');
  await writeFile(pdfFile, Buffer.from(await cert.arrayBuffer()));
  // Kept for a person to look at (test-results/ is ignored by git).
  mkdirSync(RESULTS, { recursive: true });
  await writeFile(path.join(RESULTS, 'certificate.pdf'), await readFile(pdfFile));
  await writeFile(path.join(dir, 'photo.jpg'), photo);
});

after(async () => {
  resetCoreDeps();
  await rm(dir, { recursive: true, force: true });
});

describe('the certificate of an anchored photo', () => {
  it('reads as text with the hash, the transaction and ML-DSA-65 (pdftotext)', async () => {
    const { stdout } = await run('pdftotext', ['-layout', pdfFile, '-']);
    assert.ok(stdout.includes(imageHash), 'the SHA-256');
    assert.ok(stdout.replace(/\s+/g, '').includes(txHash), 'the ledger transaction');
    assert.ok(stdout.includes('ML-DSA-65'));
    assert.match(stdout, /VERIFIED/);
    assert.match(stdout, /openssl ts -verify -data photo\.jpg/);
    // The root OpenSSL is given is the one the service publishes, never the receipt's own copy.
    assert.match(stdout.replace(/\s+/g, ' '), /root\.pem, the TSA root the service publishes \(not the receipt's copy\)/);
    assert.doesNotMatch(stdout, /tsa_certificates\[-1\]/);
  });

  it('is one or two A4 pages whose structure qpdf --check accepts', async () => {
    const { stdout } = await run('qpdf', ['--check', pdfFile]);
    assert.match(stdout, /No syntax or stream encoding errors found/);
    const info = (await run('pdfinfo', [pdfFile])).stdout;
    const pages = Number(/Pages:\s+(\d+)/.exec(info)?.[1]);
    assert.ok(pages === 1 || pages === 2, `${pages} pages`);
    assert.match(info, /Page size:\s+595\.28 x 841\.89 pts \(A4\)/);
  });

  it('carries a PAdES signature with a timestamp that pdfsig reports valid', async () => {
    const { stdout } = await run('pdfsig', [pdfFile]);
    assert.match(stdout, /Signature Validation: Signature is Valid\./);
    assert.match(stdout, /Signature Type: ETSI\.CAdES\.detached/);
    assert.match(stdout, /Total document signed/);
  });

  it('is invalid after one byte of its content changed (pdfsig)', async () => {
    const bytes = await readFile(pdfFile);
    const text = bytes.toString('latin1');
    // A byte inside the signed range: a digit of the page's content stream length is left alone;
    // the document's /Title string changes one character.
    const at = text.indexOf('Evidence certificate ');
    assert.ok(at > 0);
    const tampered = Buffer.from(bytes);
    tampered[at] = 'e'.charCodeAt(0);
    const file = path.join(dir, 'tampered.pdf');
    await writeFile(file, tampered);
    const out = await run('pdfsig', [file]).then((r) => r.stdout, (e: { stdout: string }) => e.stdout);
    assert.doesNotMatch(out, /Signature is Valid/);
    assert.match(out, /Signature Validation: (Digest Mismatch|Signature is Invalid)/);
  });

  it('shows a QR code that zbarimg reads as PUBLIC_BASE_URL/verify/{image_hash} (pdftoppm rendering)', async () => {
    mkdirSync(RESULTS, { recursive: true });
    const prefix = path.join(RESULTS, 'certificate');
    await run('pdftoppm', ['-png', '-r', '150', '-f', '1', '-l', '1', pdfFile, prefix]);
    const png = (await run('sh', ['-c', `ls ${prefix}-*1.png`])).stdout.trim();
    const { stdout } = await run('zbarimg', ['--quiet', '--raw', png]);
    const base = process.env.PUBLIC_BASE_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`;
    assert.equal(stdout.trim(), `${base.replace(/\/+$/, '')}/verify/${imageHash}`);
  });

  it('embeds the receipt, which `evidence verify photo.jpg --certificate` checks', async () => {
    const lines: string[] = [];
    // Every trust anchor pinned: the service's TSA root, its published ML-DSA-65 key and its wallet.
    const [pqKey] = await loadPqFingerprints();
    const wallet = await (await getLedgerSender()).address();
    const args = ['verify', path.join(dir, 'photo.jpg'), '--certificate', pdfFile, '--rpc', process.env.LEDGER_RPC_URL ?? '', '--root', path.join(process.env.DATA_DIR ?? '', 'tsa', 'root.pem'), '--pq-root', path.join(process.env.DATA_DIR ?? '', 'tsa', 'pq-root.pem'), '--pq-key', pqKey ?? '', '--wallet', wallet];
    const code = await evidenceCli(args, { out: (l) => lines.push(l), err: () => {} });
    const report = lines.join('\n');
    assert.equal(code, 0, report);
    for (const proof of ['ML-DSA-65 signature', 'RFC 3161 timestamp', 'ledger transaction', "device's Ed25519 signature"]) assert.match(report, new RegExp(`holds\\s+${proof}`), report);
    assert.match(report, /^VERIFIED: /m);
    // The extraction command the certificate prints gives the receipt the CLI checked.
    const text = (await run('pdftotext', [pdfFile, '-'])).stdout;
    assert.match(text, /pdfdetach -save 1 -o receipt\.json certificate\.pdf/);
    await run('pdfdetach', ['-save', '1', '-o', path.join(dir, 'receipt.json'), pdfFile]);
    const receipt = JSON.parse(await readFile(path.join(dir, 'receipt.json'), 'utf8')) as { image_hash: string; ledger: { tx_hash: string } };
    assert.equal(receipt.image_hash, imageHash);
    assert.equal(receipt.ledger.tx_hash, txHash);
  });

  it('`evidence verify --certificate` checks the PDF\'s own signature: PAdES over the whole file, its timestamp, the signer under the pinned root; a changed byte or an appended revision fails it', async () => {
    const root = path.join(process.env.DATA_DIR ?? '', 'tsa', 'root.pem');
    const verifyPdf = async (file: string) => {
      const lines: string[] = [];
      const code = await evidenceCli(['verify', path.join(dir, 'photo.jpg'), '--certificate', file, '--root', root], { out: (l) => lines.push(l), err: () => {} }, { EVIDENCE_TRUST_FILE: path.join(dir, 'no-trust.json') });
      return { code, out: lines.join('\n') };
    };
    const ok = await verifyPdf(pdfFile);
    assert.match(ok.out, /holds\s+PDF signature \(PAdES\) over the whole file\s+signature verified \(ecdsa-with-SHA256 on prime256v1\)/, ok.out);
    assert.match(ok.out, /holds\s+signature timestamp \(RFC 3161\)\s+the RFC 3161 token verifies as of its genTime/);
    assert.match(ok.out, /holds\s+PDF signing certificate pinned\s+.*Document Signing.* is issued under the pinned TSA root; valid as of \S+ \(RFC 3161 genTime\)/);
    // Without --pq-root, --pq-key and --rpc the receipt is not established (exit 3), but nothing fails.
    assert.equal(ok.code, 3, ok.out);

    const bytes = await readFile(pdfFile);
    const changed = Buffer.from(bytes);
    const at = bytes.toString('latin1').indexOf('Evidence certificate ');
    changed[at] = 'e'.charCodeAt(0);
    const changedFile = path.join(dir, 'changed.pdf');
    await writeFile(changedFile, changed);
    const tampered = await verifyPdf(changedFile);
    assert.equal(tampered.code, 1, tampered.out);
    assert.match(tampered.out, /fails\s+PDF signature \(PAdES\) over the whole file\s+the SHA-256 digest of the signed bytes is not the one the signature states/);

    const appendedFile = path.join(dir, 'appended.pdf');
    const revision = Buffer.from('\n% a revision added after signing\n');
    await writeFile(appendedFile, Buffer.concat([bytes, revision]));
    const appended = await verifyPdf(appendedFile);
    assert.equal(appended.code, 1, appended.out);
    assert.match(appended.out, new RegExp(`fails\\s+PDF signature \\(PAdES\\) over the whole file\\s+.*the file has ${revision.length} bytes after the signed ranges`));
  });

  it('fails the CLI check for another photo', async () => {
    const other = path.join(dir, 'other.jpg');
    await writeFile(other, 'another photo');
    const code = await evidenceCli(['verify', other, '--certificate', pdfFile], { out: () => {}, err: () => {} });
    assert.equal(code, 1);
  });
});

describe('who gets a certificate', () => {
  it('a Starter account gets one for a hash it registered, saying plainly what is not there', async () => {
    const starter = await createAccount('starter');
    const hash = randomHash();
    const reg = await hashApp.request('/api/v2/evidence/hash', json({ sha256_hash: hash }, { 'x-api-key': starter.apiKey }));
    assert.equal(reg.status, 200);
    const res = await getCertificate(hash, starter.apiKey);
    assert.equal(res.status, 200, await res.clone().text());
    const file = path.join(dir, 'registered.pdf');
    await writeFile(file, Buffer.from(await res.arrayBuffer()));
    const text = (await run('pdftotext', [file, '-'])).stdout;
    assert.ok(text.includes(hash));
    assert.match(text, /Not anchored on a public ledger/);
    assert.match((await run('pdfsig', [file])).stdout, /Signature is Valid/);
  });

  it('another account’s hash and an unknown hash are both 404', async () => {
    const other = await createAccount('pro');
    const res = await getCertificate(imageHash, other.apiKey);
    assert.equal(res.status, 404);
    const unknown = await getCertificate(randomHash(), pro.apiKey);
    assert.equal(unknown.status, 404);
    for (const r of [res, unknown]) assert.equal(((await r.json()) as { code: string }).code, 'evidence_not_found');
  });

  it('a Free account gets 403', async () => {
    const free = await createAccount('free');
    const res = await getCertificate(randomHash(), free.apiKey);
    assert.equal(res.status, 403);
    assert.equal(((await res.json()) as { code: string }).code, 'tier_insufficient');
  });

  it('counts one unit of quota for a certificate and none for a 404', async () => {
    const account = await createAccount('starter');
    const hash = randomHash();
    await hashApp.request('/api/v2/evidence/hash', json({ sha256_hash: hash }, { 'x-api-key': account.apiKey }));
    const used = async () =>
      ((await (await usageApp.request('/api/v2/account/usage', { headers: { authorization: `Bearer ${account.token}` } })).json()) as { used: number }).used;
    const before = await used();
    assert.equal((await getCertificate(hash, account.apiKey)).status, 200);
    assert.equal(await used(), before + 1);
    assert.equal((await getCertificate(randomHash(), account.apiKey)).status, 404);
    assert.equal(await used(), before + 1);
  });
});

describe('the certificate of a hash a Starter account only time-stamped or signed', () => {
  /** A fresh photo, its stand-alone answer, and its certificate saved as a file. */
  async function standalone(kind: 'timestamp' | 'sign', account: { apiKey: string }) {
    const bytes = Buffer.from(`JPEG bytes of a ${kind} photo ${randomHash()}`);
    const hash = sha256Hex(bytes);
    const fn = kind === 'timestamp' ? timestampApp : signApp;
    const res = await fn.request(`/api/v2/evidence/${kind}`, json({ sha256_hash: hash }, { 'x-api-key': account.apiKey }));
    assert.equal(res.status, 200, await res.clone().text());
    const answer = (await res.json()) as Record<string, unknown>;
    const cert = await getCertificate(hash, account.apiKey);
    assert.equal(cert.status, 200, await cert.clone().text());
    const file = path.join(dir, `${kind}-only.pdf`);
    await writeFile(file, Buffer.from(await cert.arrayBuffer()));
    const photoFile = path.join(dir, `${kind}-photo.jpg`);
    await writeFile(photoFile, bytes);
    return { hash, answer, file, photoFile };
  }

  async function cli(args: string[]): Promise<{ code: number; report: string }> {
    const lines: string[] = [];
    // No trust file but the flags' (a trust file in the user's home must not decide the outcome).
    const code = await evidenceCli(args, { out: (l) => lines.push(l), err: () => {} }, { ...process.env, EVIDENCE_TRUST_FILE: path.join(dir, 'no-trust.json') });
    return { code, report: lines.join('\n') };
  }

  const root = () => path.join(process.env.DATA_DIR ?? '', 'tsa', 'root.pem');

  it('time-stamped only: the RFC 3161 block, the absent proofs, a valid signature, timestamp.json that the CLI checks', async () => {
    const starter = await createAccount('starter');
    const { hash, answer, file, photoFile } = await standalone('timestamp', starter);
    const text = (await run('pdftotext', ['-layout', file, '-'])).stdout;
    assert.ok(text.includes(hash));
    assert.match(text, /TIME-STAMPED/);
    assert.match(text, /Independent timestamp \(RFC 3161\)/);
    assert.ok(text.includes(String(answer.gen_time)), 'genTime');
    assert.ok(text.includes(String(answer.serial_number)), 'serial');
    assert.match(text, /openssl ts -verify -data photo\.jpg -in token\.tsr -CAfile root\.pem/);
    assert.match(text.replace(/\s+/g, ' '), /root\.pem, the TSA root the service publishes \(GET \/api\/v2\/tsa\/certificates, last; not the attachment's copy\)/);
    assert.doesNotMatch(text, /tsa_certificates\[-1\]/);
    assert.match(text, /Not anchored on a public ledger/);
    assert.match(text, /No Ed25519 signature by the service/);
    assert.doesNotMatch(text, /No RFC 3161 timestamp/);
    assert.match((await run('pdfsig', [file])).stdout, /Signature is Valid/);
    assert.match((await run('qpdf', ['--check', file])).stdout, /No syntax or stream encoding errors found/);
    // The attached answer is the API's, byte for byte as JSON, and the printed command extracts it.
    assert.match(text, /pdfdetach -save 2 -o timestamp\.json certificate\.pdf/);
    const out = path.join(dir, 'timestamp.json');
    await run('pdfdetach', ['-save', '2', '-o', out, file]);
    assert.deepEqual(JSON.parse(await readFile(out, 'utf8')), answer);
    const ok = await cli(['verify', photoFile, '--certificate', file, '--root', root()]);
    assert.equal(ok.code, 0, ok.report);
    assert.match(ok.report, /holds\s+RFC 3161 timestamp/);
    const other = path.join(dir, 'not-the-photo.jpg');
    await writeFile(other, 'another photo');
    assert.equal((await cli(['verify', other, '--certificate', file, '--root', root()])).code, 1);
  });

  it('signed only: the Ed25519 block with the statement and the jwks check, signature.json that the CLI checks', async () => {
    const starter = await createAccount('starter');
    const { hash, answer, file, photoFile } = await standalone('sign', starter);
    const text = (await run('pdftotext', ['-layout', file, '-'])).stdout;
    assert.ok(text.includes(hash));
    assert.match(text, /SIGNED/);
    assert.match(text, /Service signature \(Ed25519\)/);
    assert.ok(text.includes(String(answer.key_id)), 'key id');
    assert.ok(text.includes(String((answer.statement as { signed_at: string }).signed_at)), 'signed_at');
    assert.match(text, /jwks\.json/);
    assert.match(text, /No RFC 3161 timestamp/);
    assert.match(text, /Not anchored on a public ledger/);
    assert.match((await run('pdfsig', [file])).stdout, /Signature is Valid/);
    const out = path.join(dir, 'signature.json');
    await run('pdfdetach', ['-save', '2', '-o', out, file]);
    assert.deepEqual(JSON.parse(await readFile(out, 'utf8')), answer);
    const jwks = path.join(dir, 'jwks.json');
    await writeFile(jwks, await (await jwksApp.request('/.well-known/jwks.json')).text());
    const ok = await cli(['verify', photoFile, '--certificate', file, '--jwks', jwks]);
    assert.equal(ok.code, 0, ok.report);
    assert.match(ok.report, /holds\s+Ed25519 signature over JCS\(statement\)/);
    // Without a pinned key set the signature cannot be checked: not established (exit 3), never verified.
    const unpinned = await cli(['verify', photoFile, '--certificate', file, '--trust-file', path.join(dir, 'no-trust.json')]);
    assert.equal(unpinned.code, 3, unpinned.report);
    assert.match(unpinned.report, /unchecked\s+Ed25519 signature over JCS\(statement\)/);
  });

  it('both: one certificate shows both blocks and attaches both answers', async () => {
    const starter = await createAccount('starter');
    const { hash } = await standalone('timestamp', starter);
    const res = await signApp.request('/api/v2/evidence/sign', json({ sha256_hash: hash }, { 'x-api-key': starter.apiKey }));
    assert.equal(res.status, 200);
    const cert = await getCertificate(hash, starter.apiKey);
    assert.equal(cert.status, 200);
    const file = path.join(dir, 'both.pdf');
    await writeFile(file, Buffer.from(await cert.arrayBuffer()));
    const text = (await run('pdftotext', ['-layout', file, '-'])).stdout;
    assert.match(text, /TIME-STAMPED AND SIGNED/);
    assert.doesNotMatch(text, /No RFC 3161 timestamp|No Ed25519 signature/);
    const list = (await run('pdfdetach', ['-list', file])).stdout;
    assert.match(list, /1: receipt\.json[\s\S]*2: signature\.json[\s\S]*3: timestamp\.json/);
    mkdirSync(RESULTS, { recursive: true });
    await writeFile(path.join(RESULTS, 'certificate-standalone.pdf'), await readFile(file));
  });

  it('answers of other accounts live in items of their own: the hash\'s evidence item stays exactly as it was, and each certificate shows its own account\'s answer only', async () => {
    const owner = await createAccount('starter');
    const bytes = Buffer.from(`a photo many accounts time-stamp ${randomHash()}`);
    const hash = sha256Hex(bytes);
    assert.equal((await hashApp.request('/api/v2/evidence/hash', json({ sha256_hash: hash }, { 'x-api-key': owner.apiKey }))).status, 200);
    const { getConfig, getDb } = await import('../../lib/deps/core.js');
    const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
    const raw = async () => (await getDb().send(new GetCommand({ TableName: getConfig().tables.evidence, Key: { image_hash: hash }, ConsistentRead: true }))).Item;
    const itemBefore = await raw();
    const others = await Promise.all([createAccount('starter'), createAccount('starter'), createAccount('starter')]);
    for (const other of others) {
      for (const kind of ['timestamp', 'sign'] as const) {
        const fn = kind === 'timestamp' ? timestampApp : signApp;
        assert.equal((await fn.request(`/api/v2/evidence/${kind}`, json({ sha256_hash: hash }, { 'x-api-key': other.apiKey }))).status, 200);
      }
    }
    assert.deepEqual(await raw(), itemBefore);
    const ownerPdf = path.join(dir, 'many-owner.pdf');
    await writeFile(ownerPdf, Buffer.from(await (await getCertificate(hash, owner.apiKey)).arrayBuffer()));
    assert.match((await run('pdftotext', ['-layout', ownerPdf, '-'])).stdout, /No RFC 3161 timestamp/);
    const otherPdf = path.join(dir, 'many-other.pdf');
    await writeFile(otherPdf, Buffer.from(await (await getCertificate(hash, others[0]?.apiKey ?? '')).arrayBuffer()));
    assert.match((await run('pdftotext', ['-layout', otherPdf, '-'])).stdout, /TIME-STAMPED AND SIGNED/);
  });

  it('another account that time-stamped nothing for that hash gets 404, and pays nothing', async () => {
    const starter = await createAccount('starter');
    const { hash } = await standalone('timestamp', starter);
    const other = await createAccount('starter');
    const res = await getCertificate(hash, other.apiKey);
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { code: string }).code, 'evidence_not_found');
    const used = ((await (await usageApp.request('/api/v2/account/usage', { headers: { authorization: `Bearer ${other.token}` } })).json()) as { used: number }).used;
    assert.equal(used, 0);
  });
});
