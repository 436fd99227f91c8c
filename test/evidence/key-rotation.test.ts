/**
 * Issue 27, parts 1 and 2 for the ML-DSA-65, Ed25519 and PDF signing keys: each is rotated with
 * `npm run admin -- rotate-key <kind>` (the same function), and the evidence made before every
 * rotation verifies next to the evidence made after it, online (v2 and v1 verify, the verify page,
 * the JWK set, the trust-anchor document), offline (`evidence verify` with a trust file) and with
 * pdfsig; again "five years on" (an injected clock). A signature dated after its key's retirement
 * fails, online and offline (decisions.md "Key validity windows"); offline, `evidence verify
 * --certificate` holds the PDF's own signature to the pdf-signing windows of the trust file.
 *
 * The test rotates the keys of its own copy of the run's DATA_DIR (the other test files keep
 * theirs); the database, the chain node and the wallet are the run's.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it, mock } from 'node:test';
import { PDFDocument } from 'pdf-lib';
import { runAdmin } from '../../lib/cli/admin.js';
import { main as evidenceCli } from '../../lib/cli/evidence.js';
import { rotateLocalKey } from '../../lib/cli/rotate-key.js';
import { LocalEd25519Signer } from '../../lib/crypto/ed25519-signer.js';
import { LocalMlDsaSigner } from '../../lib/crypto/ml-dsa.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { canonicalizeToBytes } from '../../lib/crypto/jcs.js';
import { readKeyRegistry, writeKeyRegistry } from '../../lib/crypto/key-windows.js';
import { pdfSignerFiles } from '../../lib/crypto/pdf-sign/files.js';
import { importPrivateKey } from '../../lib/crypto/tsa/certificates.js';
import { tsaFiles } from '../../lib/crypto/tsa/files.js';
import { WebCryptoTsaKeySigner } from '../../lib/crypto/tsa/key-signer.js';
import { pemToDer } from '../../lib/crypto/tsa/pem.js';
import { extractTimestampToken } from '../../lib/crypto/tsa/verify.js';
import { getTsa } from '../../lib/deps/anchoring.js';
import { getConfig, resetCoreDeps } from '../../lib/deps/core.js';
import { signPdf } from '../../lib/pdf/sign.js';
import { createAccount, Device, json, randomHash } from '../support/client.js';
import { type HttpService, startHttpService } from '../support/http-server.js';
import { freePort, useStack } from '../support/stack.js';

const exec = promisify(execFile);
const FIVE_YEARS_MS = 5 * 365.25 * 24 * 3600 * 1000;

let service: HttpService;
let dir: string;
let rpcUrl: string;
let apiKey: string;

interface Made {
  hash: string;
  photo: string;
  receipt: { pq_signature: { key_id: string; public_key: string }; timestamp: { gen_time: string } } & Record<string, unknown>;
  signature: string;
  pdf: string;
}
const made: Record<'before' | 'after', Made | undefined> = { before: undefined, after: undefined };
const rotations: Record<string, { retired: { kid: string; retired_at: string } | null; active: { kid: string; not_before: string | null } }> = {};
let oldEdSeed = '';
/** The PDF signing key and certificate before the rotation (the rotation keeps only the certificate, in the registry). */
let oldPdfSigner = { keyPem: '', certPem: '' };
let sharedDataDir = '';
/** The trust file pinned before the rotations, and the address it pinned (the port changes at each restart). */
let staleTrust = '';
let staleUrl = '';

async function restart(): Promise<void> {
  await service.close();
  resetCoreDeps();
  service = await startHttpService();
}

async function post(p: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${service.url}${p}`, json(body, { 'x-api-key': apiKey }));
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

/** Anchors a new photo, signs its hash (Ed25519) and fetches its receipt and PDF certificate. */
async function makeEvidence(label: string): Promise<Made> {
  const bytes = Buffer.from(`photo ${label} ${randomHash()}`);
  const hash = sha256Hex(bytes);
  const photo = path.join(dir, `${label}.jpg`);
  await writeFile(photo, bytes);
  await post('/api/v2/evidence/anchor', new Device().next(hash));
  const receipt = (await (await fetch(`${service.url}/api/v2/evidence/receipt/${hash}`)).json()) as Made['receipt'];
  await writeFile(`${photo}.receipt.json`, JSON.stringify(receipt));
  const signature = path.join(dir, `${label}.sig.json`);
  await writeFile(signature, JSON.stringify(await post('/api/v2/evidence/sign', { sha256_hash: hash })));
  const res = await fetch(`${service.url}/api/v2/evidence/certificate/${hash}`, { headers: { 'x-api-key': apiKey } });
  assert.equal(res.status, 200);
  const pdf = path.join(dir, `${label}.pdf`);
  await writeFile(pdf, Buffer.from(await res.arrayBuffer()));
  return { hash, photo, receipt, signature, pdf };
}

/** `evidence trust add` of the service as it is now, into an empty trust file (the port changes at each restart). */
async function trustNow(): Promise<void> {
  await writeFile(path.join(dir, 'trust.json'), JSON.stringify({ version: 1, services: [] }));
  const r = await cli('trust', 'add', service.url);
  assert.equal(r.code, 0, r.out);
}

async function cli(...argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await evidenceCli(argv, { out: (l) => lines.push(l), err: (l) => lines.push(l) }, { ...process.env, EVIDENCE_TRUST_FILE: path.join(dir, 'trust.json') });
  return { code, out: lines.join('\n') };
}

async function verifyV2(hash: string): Promise<{ status: string; summary: string; proofs: Record<string, { state: string; reason: string }> }> {
  const res = await fetch(`${service.url}/api/v2/evidence/verify/${hash}`);
  assert.equal(res.status, 200);
  return (await res.json()) as never;
}

interface Jwk {
  kty: string;
  kid: string;
  status: string;
  not_before: string | null;
  not_after: string | null;
  retired_at: string | null;
}

before(async () => {
  const shared = await useStack();
  sharedDataDir = shared.DATA_DIR ?? '';
  rpcUrl = shared.LEDGER_RPC_URL ?? '';
  dir = await mkdtemp(path.join(os.tmpdir(), 'rotate-'));
  staleTrust = path.join(dir, 'trust-before-rotation.json');
  const dataDir = path.join(dir, 'data');
  await cp(shared.DATA_DIR ?? '', dataDir, { recursive: true });
  process.env.DATA_DIR = dataDir;
  // The port `npm start` would bind: free, as for a stopped stack (rotate-key refuses a busy one).
  process.env.PORT = String(await freePort());
  resetCoreDeps();
  service = await startHttpService();
  apiKey = (await createAccount('pro')).apiKey;
  made.before = await makeEvidence('before');
  // A relying party pins the service now, before any rotation, and keeps that trust file (issue 34, F6).
  await trustNow();
  await cp(path.join(dir, 'trust.json'), staleTrust);
  staleUrl = service.url;
  oldEdSeed = (await readFile(getConfig().ed25519.seedFile, 'utf8')).trim();
  const pdfFiles = pdfSignerFiles(getConfig().pdfSigner.dir);
  oldPdfSigner = { keyPem: await readFile(pdfFiles.key, 'utf8'), certPem: await readFile(pdfFiles.cert, 'utf8') };

  // One command per key; the admin CLI's own entry for the first, the same function for the others.
  const out: string[] = [];
  assert.equal(await runAdmin(['rotate-key', 'ml-dsa-65'], { out: (l) => out.push(l), err: (l) => out.push(l) }), 0, out.join('\n'));
  rotations['ml-dsa-65'] = JSON.parse(out.join('\n')) as never;
  for (const kind of ['ed25519', 'pdf-signing'] as const) rotations[kind] = await rotateLocalKey(getConfig(), kind);
  await restart();
  made.after = await makeEvidence('after');
});
after(() => service.close());

describe('rotate-key', () => {
  it('recorded each key of the stack when it was made, with its window starting then', async () => {
    const registry = await readKeyRegistry(path.join(sharedDataDir, 'keys', 'key-registry.json'));
    assert.deepEqual(registry.keys.map((k) => k.kind).sort(), ['ed25519', 'ledger-wallet', 'ml-dsa-65', 'pdf-signing']);
    assert.ok(registry.keys.every((k) => k.not_before !== null && k.retired_at === null));
  });

  it('retires the old key and activates a new one at the same instant, for each kind', async () => {
    const registry = await readKeyRegistry(getConfig().keyRegistryFile);
    for (const kind of ['ml-dsa-65', 'ed25519', 'pdf-signing']) {
      const r = rotations[kind];
      assert.ok(r?.retired, kind);
      const entries = registry.keys.filter((k) => k.kind === kind);
      assert.equal(entries.length, 2, kind);
      assert.equal(entries.filter((k) => k.retired_at === null).length, 1, `${kind}: one active key`);
      if (kind !== 'pdf-signing') assert.equal(r.active.not_before, r.retired.retired_at, `${kind}: the new window starts where the old one ends`);
    }
  });

  it('signs new evidence with the new ML-DSA-65 key: the two receipts name two keys', () => {
    assert.equal(made.before?.receipt.pq_signature.key_id, rotations['ml-dsa-65']?.retired?.kid);
    assert.equal(made.after?.receipt.pq_signature.key_id, rotations['ml-dsa-65']?.active.kid);
    assert.notEqual(made.before?.receipt.pq_signature.public_key, made.after?.receipt.pq_signature.public_key);
  });

  it('refuses an unknown kind (usage, exit 2); the wallet is rotated by test/evidence/wallet-rotation.test.ts', async () => {
    const lines: string[] = [];
    const sink = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
    assert.equal(await runAdmin(['rotate-key', 'rsa'], sink), 2);
    assert.match(lines.join('\n'), /known: ml-dsa-65, ed25519, pdf-signing, ledger-wallet/);
  });

  it('refuses while the stack runs (its API port is bound): it would go on signing with the old key', async () => {
    const { createServer } = await import('node:net');
    const config = getConfig();
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(config.port, config.host, resolve));
    try {
      const lines: string[] = [];
      assert.equal(await runAdmin(['rotate-key', 'ed25519'], { out: (l) => lines.push(l), err: (l) => lines.push(l) }), 1);
      assert.match(lines.join('\n'), /stop npm start first/);
    } finally {
      await new Promise<void>((resolve) => busy.close(() => resolve()));
    }
  });

  it('finishes a rotation a crash interrupted, with the key the crashed run made (never a third one)', async () => {
    const config = getConfig();
    const next = `${config.ed25519.seedFile}.next`;
    const seed = 'ab'.repeat(32);
    await writeFile(next, seed, { mode: 0o600 });
    const r = await rotateLocalKey(config, 'ed25519');
    assert.equal(r.resumed, true);
    assert.equal((await readFile(config.ed25519.seedFile, 'utf8')).trim(), seed);
    assert.equal(r.active.kid, (await import('../../lib/crypto/ed25519-signer.js')).ed25519KeyId(await LocalEd25519Signer.fromSeed(Buffer.from(seed, 'hex')).publicKey()));
    rotations.ed25519b = r;
    await restart();
  });
});

describe('old and new evidence side by side', () => {
  for (const [when, shift] of [
    ['now', 0],
    ['five years on', FIVE_YEARS_MS],
  ] as const) {
    describe(when, () => {
      before(() => {
        if (shift) mock.timers.enable({ apis: ['Date'], now: Date.now() + shift });
      });
      after(() => mock.timers.reset());

      it('v2 verify: both verified, as of their RFC 3161 genTime; the old key said retired', async () => {
        for (const m of [made.before, made.after]) {
          const v = await verifyV2(m?.hash ?? '');
          assert.equal(v.status, 'verified', v.summary);
          assert.match(v.summary, /as of \S+Z \(RFC 3161 genTime\)/);
        }
        const old = await verifyV2(made.before?.hash ?? '');
        assert.match(old.proofs.pq_key?.reason ?? '', /retired since/);
      });

      it('v1 pq verify and the verify page: both verified; /api/v1/pq/info trusts both keys', async () => {
        const info = (await (await fetch(`${service.url}/api/v1/pq/info`)).json()) as { trusted_fingerprints: string[] };
        for (const m of [made.before, made.after]) assert.ok(info.trusted_fingerprints.includes(sha256Hex(Buffer.from(m?.receipt.pq_signature.public_key ?? '', 'base64'))));
        for (const m of [made.before, made.after]) {
          const pq = (await (await fetch(`${service.url}/api/v1/pq/verify/${m?.hash}`)).json()) as { verified: boolean };
          assert.equal(pq.verified, true);
          const page = await (await fetch(`${service.url}/verify/${m?.hash}`)).text();
          assert.match(page, /as of/);
          assert.doesNotMatch(page, /Not verified/);
        }
      });

      it('evidence verify with a trust file fetched now: receipts, PDFs and signatures of both verify', async () => {
        await trustNow();
        for (const m of [made.before, made.after]) {
          const receipt = await cli('verify', m?.photo ?? '', '--rpc', rpcUrl);
          assert.equal(receipt.code, 0, receipt.out);
          assert.match(receipt.out, /^VERIFIED: .*as of/m);
          const pdf = await cli('verify', m?.photo ?? '', '--certificate', m?.pdf ?? '', '--rpc', rpcUrl);
          assert.equal(pdf.code, 0, pdf.out);
          // The PDF's own signature: its certificate is one the trust file pins, valid at the signature timestamp's genTime.
          assert.match(pdf.out, /holds\s+PDF signature \(PAdES\) over the whole file/);
          assert.match(pdf.out, /holds\s+signature timestamp \(RFC 3161\)/);
          const signer = pdf.out.split('\n').find((l) => /PDF signing certificate pinned/.test(l)) ?? '';
          assert.match(signer, /^\s*holds\s+PDF signing certificate pinned\s+.* is a PDF signing certificate of the trust file/, pdf.out);
          if (m === made.before) assert.match(signer, / \(retired: it no longer signs.*\); valid as of \S+ \(RFC 3161 genTime\) \(retired since \S+\)$/);
          else assert.match(signer, /of the trust file; valid as of \S+ \(RFC 3161 genTime\)$/);
          const sig = await cli('verify', m?.photo ?? '', '--signature', m?.signature ?? '');
          assert.equal(sig.code, 0, sig.out);
          assert.match(sig.out, /holds\s+Ed25519 key pinned\s+.*valid as of/);
        }
      });
    });
  }

  it('pdfsig: the PDF signed before the rotation and the one after are both valid, by two certificates', async () => {
    for (const m of [made.before, made.after]) {
      const { stdout } = await exec('pdfsig', [m?.pdf ?? '']);
      assert.match(stdout, /Signature Validation: Signature is Valid\./);
      // The PDF states the verdict as of the time the proofs were made.
      const text = (await exec('pdftotext', [m?.pdf ?? '', '-'])).stdout.replace(/\s+/g, ' ');
      assert.match(text, /Each proof holds as of \S+ \(RFC 3161 genTime\)/);
    }
    const anchors = (await (await fetch(`${service.url}/.well-known/evidence-trust-anchors.json`)).json()) as { pdf_signing: { status: string; certificate_pem: string }[] };
    assert.deepEqual(anchors.pdf_signing.map((p) => p.status), ['active', 'retired']);
    // Each PDF carries the certificate of its time in its CMS.
    const [active, retired] = anchors.pdf_signing.map((p) => Buffer.from(p.certificate_pem.replace(/-----[^-]+-----|\s/g, ''), 'base64'));
    assert.ok(active && retired);
    const hexOf = async (file: string) => (await readFile(file)).toString('latin1');
    const contents = async (file: string) => {
      const m = /\/Contents\s*<([0-9a-fA-F]+)>/.exec(await hexOf(file));
      return Buffer.from(m?.[1] ?? '', 'hex');
    };
    assert.ok((await contents(made.before?.pdf ?? '')).includes(retired));
    assert.ok((await contents(made.after?.pdf ?? '')).includes(active));
  });

  it('the JWK set and the trust-anchor document list current and retired keys, each with its window', async () => {
    const { keys } = (await (await fetch(`${service.url}/.well-known/jwks.json`)).json()) as { keys: Jwk[] };
    const ml = keys.filter((k) => k.kty === 'AKP');
    const ed = keys.filter((k) => k.kty === 'OKP');
    assert.equal(ml.length, 2);
    assert.equal(ed.length, 3, 'two rotations of the Ed25519 key');
    const mlActive = ml.find((k) => k.status === 'active');
    const mlRetired = ml.find((k) => k.status === 'retired');
    assert.equal(mlRetired?.kid, rotations['ml-dsa-65']?.retired?.kid);
    assert.equal(mlRetired?.retired_at, rotations['ml-dsa-65']?.retired?.retired_at);
    assert.equal(mlActive?.not_before, rotations['ml-dsa-65']?.retired?.retired_at);
    assert.equal(mlActive?.retired_at, null);
    const anchors = (await (await fetch(`${service.url}/.well-known/evidence-trust-anchors.json`)).json()) as { signing_keys: Jwk[] };
    assert.deepEqual(
      anchors.signing_keys.map((k) => [k.kid, k.retired_at]).sort(),
      keys.map((k) => [k.kid, k.retired_at]).sort(),
    );
  });
});

/** The receipt with its ML-DSA-65 key and signature replaced by those of a key the service never had (a forgery). */
async function forgedPq(receipt: Made['receipt'], label: string): Promise<string> {
  const copy = structuredClone(receipt) as Made['receipt'] & { server_hash: string; pq_signature: { signature: string } };
  const forger = LocalMlDsaSigner.fromSeed(randomBytes(32));
  copy.pq_signature.public_key = Buffer.from(await forger.publicKey()).toString('base64');
  copy.pq_signature.signature = Buffer.from(await forger.sign(Buffer.from(copy.server_hash, 'hex'))).toString('base64');
  const file = path.join(dir, `${label}.forged.receipt.json`);
  await writeFile(file, JSON.stringify(copy));
  return file;
}

describe('a trust file pinned before the rotation (issue 34, F6)', () => {
  const stale = (...argv: string[]) => cli(...argv, '--trust-file', staleTrust);
  const refresh = () => new RegExp(`Refresh the trust file: evidence trust add ${staleUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`);

  it('leaves the keys made since not established (exit 3), naming the refresh, for the receipt, the PDF and the signature made after it; never failed', async () => {
    const receipt = await stale('verify', made.after?.photo ?? '', '--rpc', rpcUrl);
    assert.equal(receipt.code, 3, receipt.out);
    const key = receipt.out.split('\n').find((l) => /^\s+\w+\s+ML-DSA-65 key published by the service/.test(l)) ?? '';
    assert.match(key, /^\s*unchecked\s+ML-DSA-65 key published by the service\s+the ML-DSA-65 key \S+ is not among the keys the trust file pinned/, receipt.out);
    assert.match(key, /; it signed after that, as of \S+ \(RFC 3161 genTime\)/);
    assert.match(key, refresh());
    assert.match(receipt.out, /^NOT ESTABLISHED: /m);
    assert.doesNotMatch(receipt.out, /\bfails\b|NOT VERIFIED/);
    // The other proofs hold: nothing else was rotated, or it is pinned.
    assert.match(receipt.out, /holds\s+ML-DSA-65 signature/);
    assert.match(receipt.out, /holds\s+ledger transaction/);

    const pdf = await stale('verify', made.after?.photo ?? '', '--certificate', made.after?.pdf ?? '', '--rpc', rpcUrl);
    assert.equal(pdf.code, 3, pdf.out);
    const signer = pdf.out.split('\n').find((l) => /^\s+\w+\s+PDF signing certificate pinned/.test(l)) ?? '';
    assert.match(signer, /^\s*unchecked\s+PDF signing certificate pinned\s+.* is not among the PDF signing certificates the trust file pinned/, pdf.out);
    assert.match(signer, refresh());
    assert.doesNotMatch(pdf.out, /\bfails\b|NOT VERIFIED/);

    const sig = await stale('verify', made.after?.photo ?? '', '--signature', made.after?.signature ?? '');
    assert.equal(sig.code, 3, sig.out);
    const edKey = sig.out.split('\n').find((l) => /^\s+\w+\s+Ed25519 key pinned/.test(l)) ?? '';
    assert.match(edKey, /^\s*unchecked\s+Ed25519 key pinned\s+the Ed25519 key \S+ is not among the keys of the JWK set the trust file pinned/, sig.out);
    assert.match(edKey, refresh());
    assert.doesNotMatch(sig.out, /\bfails\b|NOT VERIFIED/);
  });

  it('still verifies what was made before the rotation with it', async () => {
    const m = made.before;
    for (const argv of [
      [m?.photo ?? '', '--rpc', rpcUrl],
      [m?.photo ?? '', '--certificate', m?.pdf ?? '', '--rpc', rpcUrl],
      [m?.photo ?? '', '--signature', m?.signature ?? ''],
    ]) {
      const r = await stale('verify', ...argv);
      assert.equal(r.code, 0, r.out);
    }
  });

  it('fails a key the trust file does not hold for a record signed before it was pinned: the service had published all its keys by then', async () => {
    const r = await stale('verify', made.before?.photo ?? '', '--receipt', await forgedPq(made.before?.receipt as Made['receipt'], 'before'), '--rpc', rpcUrl);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /^\s*fails\s+ML-DSA-65 key published by the service\s+.*is not trusted; it signed as of \S+ \(RFC 3161 genTime\), before the trust file pinned/m);
    assert.match(r.out, /holds\s+ML-DSA-65 signature/, 'the forged signature verifies with its own key');
  });

  it('fails, once the trust file is refreshed, a key the service never published; the stale file could not tell', async () => {
    const forged = await forgedPq(made.after?.receipt as Made['receipt'], 'after');
    const before = await stale('verify', made.after?.photo ?? '', '--receipt', forged, '--rpc', rpcUrl);
    assert.equal(before.code, 3, before.out);
    await trustNow();
    const r = await cli('verify', made.after?.photo ?? '', '--receipt', forged, '--rpc', rpcUrl);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /^\s*fails\s+ML-DSA-65 key published by the service/m);
    // The genuine receipt verifies with the refreshed file.
    assert.equal((await cli('verify', made.after?.photo ?? '', '--rpc', rpcUrl)).code, 0);
  });
});

describe('a signature dated after its key retired fails', () => {
  it('Ed25519: a statement the old key signs after its retirement fails offline (evidence verify --signature)', async () => {
    const answer = JSON.parse(await readFile(made.before?.signature ?? '', 'utf8')) as { statement: { signed_at: string }; signature: string };
    answer.statement.signed_at = new Date(Date.parse(rotations.ed25519?.retired?.retired_at ?? '') + 60_000).toISOString();
    answer.signature = Buffer.from(await LocalEd25519Signer.fromSeed(Buffer.from(oldEdSeed, 'hex')).sign(canonicalizeToBytes(answer.statement))).toString('base64url');
    const file = path.join(dir, 'late.sig.json');
    await writeFile(file, JSON.stringify(answer));
    const r = await cli('verify', made.before?.photo ?? '', '--signature', file);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /fails\s+Ed25519 key pinned\s+.*outside its validity window: dated \S+, after the key's retirement at/);
    // The same answer dated inside the window still holds (the signature check is not what failed).
    const ok = await cli('verify', made.before?.photo ?? '', '--signature', made.before?.signature ?? '');
    assert.equal(ok.code, 0, ok.out);
  });

  it('PDF signing: a certificate the old key signs after its retirement fails offline (evidence verify --certificate), though pdfsig calls it valid', async () => {
    const config = getConfig();
    const root = await readFile(tsaFiles(config.tsa.dir).rootCert, 'utf8');
    const identity = {
      signer: new WebCryptoTsaKeySigner(await importPrivateKey(oldPdfSigner.keyPem)),
      certificateDer: pemToDer(oldPdfSigner.certPem, 'CERTIFICATE'),
      chainDer: [pemToDer(root, 'CERTIFICATE')],
    };
    // A certificate of the old photo, as the service makes one (the receipt attached), signed now
    // with the retired key and stamped by the TSA: its genTime is the clock of now, after the retirement.
    const doc = await PDFDocument.create();
    doc.addPage();
    await doc.attach(new TextEncoder().encode(JSON.stringify(made.before?.receipt)), 'receipt.json', { mimeType: 'application/json' });
    const signed = await signPdf(doc, { name: 'late', reason: 'signed after the retirement', location: service.url, contactInfo: service.url, signingTime: new Date() }, identity, async (imprint) =>
      extractTimestampToken((await (await getTsa()).timestamp(imprint)).response),
    );
    const late = path.join(dir, 'late.pdf');
    await writeFile(late, signed);
    const retiredAt = rotations['pdf-signing']?.retired?.retired_at ?? '';
    await trustNow();
    const r = await cli('verify', made.before?.photo ?? '', '--certificate', late, '--rpc', rpcUrl);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /holds\s+PDF signature \(PAdES\) over the whole file/, 'the signature itself verifies');
    const genTime = /holds\s+signature timestamp \(RFC 3161\)\s+the RFC 3161 token verifies as of its genTime (\S+):/.exec(r.out)?.[1] ?? '';
    assert.ok(Date.parse(genTime) > Date.parse(retiredAt), `genTime ${genTime} after the retirement at ${retiredAt}`);
    assert.match(r.out, new RegExp(`fails\\s+PDF signing certificate pinned\\s+.*signed outside its validity window: dated ${genTime}, after the key's retirement at ${retiredAt} \\(RFC 3161 genTime\\)`));
    assert.match(r.out, /VERIFIED: every proof was checked and holds/, 'the receipt it carries still holds');
    assert.match(r.out, /NOT VERIFIED: pdf_signer did not check out/);
    // pdfsig checks the signature and the certificate, not the service's retirement of it.
    assert.match((await exec('pdfsig', [late])).stdout, /Signature Validation: Signature is Valid\./);
  });

  it('PDF signing: a certificate signed outside the window the trust file states fails offline (before the window began)', async () => {
    await trustNow();
    const file = path.join(dir, 'trust.json');
    const trust = JSON.parse(await readFile(file, 'utf8')) as { services: { pdf_signing: { status: string; not_before: string | null }[] }[] };
    const active = trust.services[0]?.pdf_signing.find((p) => p.status === 'active');
    assert.ok(active);
    const later = new Date(Date.now() + 3600_000).toISOString();
    active.not_before = later;
    await writeFile(file, JSON.stringify(trust));
    const r = await cli('verify', made.after?.photo ?? '', '--certificate', made.after?.pdf ?? '', '--rpc', rpcUrl);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, new RegExp(`fails\\s+PDF signing certificate pinned\\s+.*signed outside its validity window: dated \\S+, before the key's validity began \\(${later}\\)`));
    await trustNow();
  });

  it('ML-DSA-65: a record whose genTime is after the key retirement the registry states fails online, and offline', async () => {
    const config = getConfig();
    const original = await readKeyRegistry(config.keyRegistryFile);
    const genTime = Date.parse(made.before?.receipt.timestamp.gen_time ?? '');
    assert.ok(Number.isFinite(genTime));
    const early = new Date(genTime - 1000).toISOString();
    const moved = { ...original, keys: original.keys.map((k) => (k.kind === 'ml-dsa-65' && k.retired_at !== null ? { ...k, retired_at: early } : k)) };
    await writeKeyRegistry(config.keyRegistryFile, moved);
    try {
      await restart();
      const v = await verifyV2(made.before?.hash ?? '');
      assert.equal(v.status, 'failed');
      assert.equal(v.proofs.pq_key?.state, 'fails');
      assert.match(v.proofs.pq_key?.reason ?? '', /outside its validity window: dated \S+, after the key's retirement at .* \(RFC 3161 genTime\)/);
      assert.equal((await verifyV2(made.after?.hash ?? '')).status, 'verified');
      // Offline: the trust file holds what the service published then.
      await trustNow();
      const r = await cli('verify', made.before?.photo ?? '', '--rpc', rpcUrl);
      assert.equal(r.code, 1, r.out);
      assert.match(r.out, /fails\s+ML-DSA-65 key published by the service\s+.*after the key's retirement/);
    } finally {
      await writeKeyRegistry(config.keyRegistryFile, original);
      await restart();
      await trustNow();
    }
  });
});

describe('a retired key never signs again', () => {
  it('the stack refuses to anchor or sign with a configured key the registry retired (503), and says which', async () => {
    const config = getConfig();
    const original = await readKeyRegistry(config.keyRegistryFile);
    const retireActive = (kind: string) => ({ ...original, keys: original.keys.map((k) => (k.kind === kind && k.retired_at === null ? { ...k, retired_at: new Date().toISOString() } : k)) });
    try {
      await writeKeyRegistry(config.keyRegistryFile, retireActive('ml-dsa-65'));
      await restart();
      const anchor = await fetch(`${service.url}/api/v2/evidence/anchor`, json(new Device().next(randomHash()), { 'x-api-key': apiKey }));
      assert.equal(anchor.status, 503, await anchor.clone().text());
      assert.equal(((await anchor.json()) as { code: string }).code, 'signer_unavailable');
      await writeKeyRegistry(config.keyRegistryFile, retireActive('ed25519'));
      await restart();
      const sign = await fetch(`${service.url}/api/v2/evidence/sign`, json({ sha256_hash: randomHash() }, { 'x-api-key': apiKey }));
      assert.equal(sign.status, 503, await sign.clone().text());
      // Publishing goes on: the JWK set lists the key, retired.
      const { keys } = (await (await fetch(`${service.url}/.well-known/jwks.json`)).json()) as { keys: Jwk[] };
      assert.equal(keys.filter((k) => k.kty === 'OKP' && k.status === 'active').length, 0);
    } finally {
      await writeKeyRegistry(config.keyRegistryFile, original);
      await restart();
    }
  });
});

describe('the ledger wallet: a retired wallet verifies what it sent within its window', () => {
  it('online and offline, the old anchor holds with the wallet retired after it, and fails with the wallet retired before it', async () => {
    const config = getConfig();
    const original = await readKeyRegistry(config.keyRegistryFile);
    const from = String((made.before?.receipt as { ledger?: { from?: string } }).ledger?.from);
    assert.match(from, /^0x[0-9a-fA-F]{40}$/);
    const genTime = Date.parse(made.before?.receipt.timestamp.gen_time ?? '');
    const wallet = (retiredAt: number) => ({
      kind: 'ledger-wallet' as const,
      kid: from,
      sha256: sha256Hex(Buffer.from(from.slice(2), 'hex')),
      address: from,
      not_before: null,
      not_after: null,
      retired_at: new Date(retiredAt).toISOString(),
    });
    try {
      for (const [retiredAt, expected] of [
        [genTime + 60_000, 'verified'],
        [genTime - 1000, 'failed'],
      ] as const) {
        const others = original.keys.filter((k) => !(k.kind === 'ledger-wallet' && k.kid.toLowerCase() === from.toLowerCase()));
        await writeKeyRegistry(config.keyRegistryFile, { version: 1, keys: [...others, wallet(retiredAt)] });
        await restart();
        const v = await verifyV2(made.before?.hash ?? '');
        assert.equal(v.status, expected, v.summary);
        if (expected === 'verified') assert.match(v.proofs.ledger?.reason ?? '', /the wallet was valid as of \S+ \(RFC 3161 genTime\) \(retired since/);
        else assert.match(v.proofs.ledger?.reason ?? '', /sender 0x[0-9a-fA-F]{40} was outside its validity window: dated \S+, after the key's retirement/);
        const anchors = (await (await fetch(`${service.url}/.well-known/evidence-trust-anchors.json`)).json()) as { ledger: { wallets: { address: string; retired_at: string | null }[] } };
        assert.ok(anchors.ledger.wallets.some((w) => w.address.toLowerCase() === from.toLowerCase()));
        await trustNow();
        const r = await cli('verify', made.before?.photo ?? '', '--rpc', rpcUrl);
        assert.equal(r.code, expected === 'verified' ? 0 : 1, r.out);
      }
    } finally {
      await writeKeyRegistry(config.keyRegistryFile, original);
      await restart();
    }
  });
});

describe('production: rotate-key <kind> --new, then retire-key (registry only; the keys live in KMS)', () => {
  let registryFile: string;
  const admin = async (...argv: string[]) => {
    const lines: string[] = [];
    const code = await runAdmin(argv, { out: (l) => lines.push(l), err: (l) => lines.push(l) });
    return { code, out: lines.join('\n') };
  };
  before(() => {
    registryFile = path.join(dir, 'prod-key-registry.json');
    process.env.KEY_REGISTRY_FILE = registryFile;
    resetCoreDeps();
  });
  after(async () => {
    delete process.env.KEY_REGISTRY_FILE;
    await restart();
  });

  it('records each new key active from now next to the old one, and retires the old one on its own command', async () => {
    const pub = path.join(dir, 'new-ml-dsa-65.pub');
    const { LocalMlDsaSigner } = await import('../../lib/crypto/ml-dsa.js');
    await writeFile(pub, await LocalMlDsaSigner.fromSeed(Buffer.alloc(32, 7)).publicKey());
    const spki = path.join(dir, 'new-ed25519.pem');
    const { createPublicKey } = await import('node:crypto');
    const edRaw = await LocalEd25519Signer.fromSeed(Buffer.alloc(32, 9)).publicKey();
    await writeFile(spki, createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(edRaw).toString('base64url') }, format: 'jwk' }).export({ type: 'spki', format: 'pem' }));
    const cert = path.join(getConfig().pdfSigner.dir, 'cert.pem');
    for (const [kind, material] of [
      ['ml-dsa-65', pub],
      ['ed25519', spki],
      ['pdf-signing', cert],
      ['ledger-wallet', `0x${'5a'.repeat(20)}`],
    ] as const) {
      const r = await admin('rotate-key', kind, '--new', material, '--kms-key-id', 'arn:aws:kms:eu-central-1:111122223333:key/example');
      assert.equal(r.code, 0, r.out);
      const added = (JSON.parse(r.out) as { added: { kid: string; not_before: string; retired_at: null } }).added;
      assert.equal(added.retired_at, null);
      // Again: the same key, nothing changes (idempotent).
      assert.equal((await admin('rotate-key', kind, '--new', material)).code, 0);
      const retired = await admin('retire-key', kind, added.kid);
      assert.equal(retired.code, 0, retired.out);
      assert.match((JSON.parse(retired.out) as { retired: { retired_at: string } }).retired.retired_at, /Z$/);
    }
    const registry = await readKeyRegistry(registryFile);
    assert.equal(registry.keys.length, 4);
    assert.ok(registry.keys.every((k) => k.retired_at !== null && k.kms_key_id?.startsWith('arn:aws:kms:')));
    assert.equal((await admin('rotate-key', 'ed25519', '--new', path.join(dir, 'missing.pem'))).code, 1);
    assert.equal((await admin('rotate-key', 'ed25519', '--new', spki, '--bogus', 'x')).code, 2);
  });

  it('--old records the key in service before the registry existed: active, its window unknown below', async () => {
    const fresh = path.join(dir, 'fresh-ml-dsa-65.pub');
    const { LocalMlDsaSigner } = await import('../../lib/crypto/ml-dsa.js');
    await writeFile(fresh, await LocalMlDsaSigner.fromSeed(Buffer.alloc(32, 11)).publicKey());
    const r = await admin('rotate-key', 'ml-dsa-65', '--new', fresh, '--old', getConfig().signer.publicKeyFile);
    assert.equal(r.code, 0, r.out);
    const current = sha256Hex(await readFile(getConfig().signer.publicKeyFile));
    const old = (await readKeyRegistry(registryFile)).keys.find((k) => k.sha256 === current);
    assert.deepEqual([old?.not_before, old?.retired_at], [null, null]);
  });

  it('retires a wallet only once its transactions are final (the drain rule)', async () => {
    const { PutCommand, UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
    const { getDb } = await import('../../lib/deps/core.js');
    const address = `0x${randomHash().slice(0, 40)}`;
    const table = getConfig().tables.ledger;
    const key = { pk: `tx#${address}`, sk: 0 };
    await getDb().send(new PutCommand({ TableName: table, Item: { ...key, nonce: 0, tx_hash: `0x${randomHash()}`, kind: 'anchor', ref: randomHash(), status: 'sent' } }));
    const refused = await admin('retire-key', 'ledger-wallet', address);
    assert.equal(refused.code, 1, refused.out);
    assert.match(refused.out, /still has 1 transaction\(s\) that are not final/);
    await getDb().send(new UpdateCommand({ TableName: table, Key: key, UpdateExpression: 'SET #s = :c', ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':c': 'confirmed' } }));
    const done = await admin('retire-key', 'ledger-wallet', address);
    assert.equal(done.code, 0, done.out);
    const entry = (await readKeyRegistry(registryFile)).keys.find((k) => k.kind === 'ledger-wallet' && k.kid.toLowerCase() === address);
    assert.ok(entry?.retired_at);
  });
});

describe('the ledger wallet switched as production does (docs/runbook.md "Rotating keys", Wallet)', () => {
  it('new anchors go from the new wallet; the old anchor verifies from the retired one, online and offline', async () => {
    const config = getConfig();
    const [registryBefore, keyBefore] = await Promise.all([readFile(config.keyRegistryFile), readFile(config.ledger.walletKeyFile)]);
    const oldAddress = String((made.before?.receipt as { ledger?: { from?: string } }).ledger?.from);
    const { Wallet, JsonRpcProvider, toQuantity } = await import('ethers');
    const fresh = Wallet.createRandom();
    // Fund it (runbook section 4; on the local node, Hardhat's own setBalance).
    const node = new JsonRpcProvider(rpcUrl);
    await node.send('hardhat_setBalance', [fresh.address, toQuantity(10n ** 21n)]);
    node.destroy();
    const admin = async (...argv: string[]) => {
      const lines: string[] = [];
      const code = await runAdmin(argv, { out: (l) => lines.push(l), err: (l) => lines.push(l) });
      return { code, out: lines.join('\n') };
    };
    try {
      // 1. Record the new wallet (the old one stays active while the deployment switches).
      const added = await admin('rotate-key', 'ledger-wallet', '--new', fresh.address, '--old', oldAddress);
      assert.equal(added.code, 0, added.out);
      // 2. "Deploy" with the new wallet: this stack's key file.
      await writeFile(config.ledger.walletKeyFile, `${fresh.privateKey}\n`, { mode: 0o600 });
      await restart();
      const late = await makeEvidence('new-wallet');
      assert.equal(String((late.receipt as { ledger?: { from?: string } }).ledger?.from).toLowerCase(), fresh.address.toLowerCase());
      // 3. Retire the old wallet. The drain rule (tested above with a wallet of its own) is left
      //    out here: the run's other test files keep sending from the shared old wallet.
      const { retireKey } = await import('../../lib/cli/rotate-key.js');
      const retired = await retireKey(config.keyRegistryFile, 'ledger-wallet', oldAddress);
      assert.ok(retired.retired_at);
      await restart();
      for (const m of [made.before, late]) {
        const v = await verifyV2(m?.hash ?? '');
        assert.equal(v.status, 'verified', v.summary);
      }
      assert.match((await verifyV2(made.before?.hash ?? '')).proofs.ledger?.reason ?? '', /the wallet was valid as of .* \(retired since/);
      const anchors = (await (await fetch(`${service.url}/.well-known/evidence-trust-anchors.json`)).json()) as { ledger: { wallet_address: string; wallets: { address: string; status: string }[] } };
      assert.equal(anchors.ledger.wallet_address.toLowerCase(), fresh.address.toLowerCase());
      assert.deepEqual(
        anchors.ledger.wallets.map((w) => [w.address.toLowerCase(), w.status]).sort(),
        [
          [fresh.address.toLowerCase(), 'active'],
          [oldAddress.toLowerCase(), 'retired'],
        ].sort(),
      );
      await trustNow();
      for (const m of [made.before, late]) {
        const r = await cli('verify', m?.photo ?? '', '--rpc', rpcUrl);
        assert.equal(r.code, 0, r.out);
      }
      // The retired wallet never sends again: configured back, the stack refuses to anchor.
      await writeFile(config.ledger.walletKeyFile, keyBefore, { mode: 0o600 });
      await restart();
      const refused = await fetch(`${service.url}/api/v2/evidence/anchor`, json(new Device().next(randomHash()), { 'x-api-key': apiKey }));
      assert.equal(refused.status, 503, await refused.clone().text());
    } finally {
      await writeFile(config.keyRegistryFile, registryBefore);
      await writeFile(config.ledger.walletKeyFile, keyBefore, { mode: 0o600 });
      await restart();
    }
  });
});
