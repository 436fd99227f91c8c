/**
 * Issue 27 "Evidence that outlives its keys", its Done-when as a relying party meets it: a
 * receipt, a PDF certificate, an Ed25519 signed statement and an RFC 4998 evidence record made
 * before every key rotation still verify after all of them, next to the same evidence made after:
 * online, offline and with the standard tools (openssl, pdfsig, BouncyCastle), and five years on.
 *
 * One `npm start` (lib/local/start.ts, Service: its own DATA_DIR, database, chain and free ports).
 * The "before" evidence is made, the stack stopped, then every key rotated with its one command, as
 * a user does it (`npm run admin -- …` child processes): rotate-key ml-dsa-65, ed25519,
 * pdf-signing, ledger-wallet; rotate-tsa-leaf, rotate-tsa-root (which also reissues the PDF
 * signing key under the new root), rotate-tsa-leaf --pq, rotate-tsa-root --pq. The next start
 * finishes the wallet's rotation; the "after" evidence is made the same way.
 *
 * Five years on is an injected clock (mock.timers, Date) for the readers that run in this process:
 * the offline `evidence verify` of all four kinds, and the clock given to openssl (-attime) and to
 * BouncyCastle (ErsCheck's validation date). The service's own readers (v2 and v1 verify, the
 * verify page) run in the stack's process, whose clock a test cannot move: online five years on
 * is test/evidence/key-rotation.test.ts, which runs the same readers in-process with the clock
 * moved (and test/evidence/tsa-rotation-readers.test.ts, eleven years on, for the TSA).
 *
 * The local TSA leaves are valid ten years (lib/crypto/tsa/certificates.ts), so five years on no
 * certificate has expired yet and `openssl ts -verify -attime` still accepts; the test also goes
 * past the leaves' notAfter, where OpenSSL (which judges the path at -attime, as
 * test/crypto/tsa-rotation.test.ts notes) refuses and our verdict still holds as of the genTime,
 * saying the certificate "has since expired".
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it, mock } from 'node:test';
import { main as evidenceCli } from '../../lib/cli/evidence.js';
import { parseEvidenceRecord } from '../../lib/crypto/ers.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { tsaFiles } from '../../lib/crypto/tsa/files.js';
import { readTsaHistory } from '../../lib/crypto/tsa/history.js';
import { Device, randomHash } from '../support/client.js';
import { Service, setUpAccount } from '../support/crash-harness.js';
import { bouncyCastleErsCheck, compiledErsCheck } from '../support/ers-check.js';
import { waitFor } from '../support/wait.js';

const exec = promisify(execFile);
const FIVE_YEARS_MS = 5 * 365.25 * 24 * 3600 * 1000;
const DAY_MS = 24 * 3600 * 1000;

/** Every key, one command each, in this order (the stack stopped). */
const ROTATIONS = [
  ['rotate-key', 'ml-dsa-65'],
  ['rotate-key', 'ed25519'],
  ['rotate-key', 'pdf-signing'],
  ['rotate-key', 'ledger-wallet'],
  ['rotate-tsa-leaf'],
  ['rotate-tsa-root'],
  ['rotate-tsa-leaf', '--pq'],
  ['rotate-tsa-root', '--pq'],
] as const;

interface Receipt {
  image_hash: string;
  pq_signature: { key_id: string; public_key: string };
  timestamp: { token: string; gen_time: string; tsa_certificates: string[] };
  timestamp_pq: { tsa_certificates: string[] };
  ledger: { from: string; tx_hash: string };
}

interface Evidence {
  label: 'before' | 'after';
  bytes: Buffer;
  hash: string;
  photo: string;
  receipt: Receipt;
  pdf: string;
  signature: string;
  record: Uint8Array;
  recordFile: string;
}

interface Jwk {
  kty: string;
  kid: string;
  status: string;
  not_before: string | null;
  retired_at: string | null;
}
interface TrustAnchors {
  signing_keys: Jwk[];
  pdf_signing: { status: string; sha256: string; not_before: string | null; not_after: string | null; retired_at: string | null; certificate_pem: string }[];
  ledger: { wallet_address: string; wallets: { address: string; status: string; not_before: string | null; retired_at: string | null }[] };
  tsa: { certificates: { kind: string; role: string; status: string; sha256: string; not_before: string; not_after: string; retired_at: string | null }[] };
}

let dir: string;
let service: Service;
let apiKey: string;
const device = new Device();
const made = {} as Record<'before' | 'after', Evidence>;
const rotated: Record<string, Record<string, unknown>> = {};
let walletLog = '';

async function ok(res: Response, what: string): Promise<Response> {
  assert.equal(res.status, 200, `${what}: ${res.status} ${await res.clone().text()}`);
  return res;
}

/** A photo anchored, and everything a relying party keeps of it: receipt, PDF, signed statement, evidence record. */
async function makeEvidence(label: 'before' | 'after'): Promise<Evidence> {
  const bytes = Buffer.from(`a photo of the dent, ${label} the rotations, ${randomHash()}`);
  const hash = sha256Hex(bytes);
  const photo = path.join(dir, `${label}.jpg`);
  await writeFile(photo, bytes);
  const body = device.next(hash);
  const post = (p: string, b: unknown) => fetch(`${service.base}${p}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(b) });
  await ok(await post('/api/v2/evidence/anchor', body), `${label}: anchor`);
  device.advance(body);
  const receiptText = await (await ok(await fetch(`${service.base}/api/v2/evidence/receipt/${hash}`), `${label}: receipt`)).text();
  await writeFile(`${photo}.receipt.json`, receiptText);
  const signature = path.join(dir, `${label}.sig.json`);
  await writeFile(signature, await (await ok(await post('/api/v2/evidence/sign', { sha256_hash: hash }), `${label}: sign`)).text());
  const pdf = path.join(dir, `${label}.pdf`);
  const certificate = await ok(await fetch(`${service.base}/api/v2/evidence/certificate/${hash}`, { headers: { 'x-api-key': apiKey } }), `${label}: certificate`);
  await writeFile(pdf, Buffer.from(await certificate.arrayBuffer()));
  // The archive job groups and time-stamps it (ARCHIVE_GROUP_SECONDS=0, a pass every ARCHIVE_INTERVAL_MS).
  const record = await waitFor(`the evidence record of the ${label} photo`, 60_000, async () => {
    const res = await fetch(`${service.base}/api/v2/evidence/evidence-record/${hash}`);
    if (res.status === 200) return new Uint8Array(await res.arrayBuffer());
    const problem = (await res.json()) as { code?: string };
    // Pending; or a database deadline on a loaded machine (503: asked again, as the answer says).
    if ((res.status === 404 && problem.code === 'evidence_record_pending') || res.status === 503) return undefined;
    throw new Error(`${label}: evidence record ${res.status} ${JSON.stringify(problem)}`);
  }, 250);
  const recordFile = path.join(dir, `${label}.ers`);
  await writeFile(recordFile, record);
  return { label, bytes, hash, photo, receipt: JSON.parse(receiptText) as Receipt, pdf, signature, record, recordFile };
}

async function getJson<T>(p: string): Promise<T> {
  return (await (await ok(await fetch(`${service.base}${p}`), p)).json()) as T;
}

/** `evidence verify …` in this process (so that an injected clock reaches it), with this test's trust file. */
async function cli(...argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await evidenceCli(argv, { out: (l) => lines.push(l), err: (l) => lines.push(l) }, { ...process.env, EVIDENCE_TRUST_FILE: path.join(dir, 'trust.json') });
  return { code, out: lines.join('\n') };
}

/** The four offline checks of one photo's evidence, each asserted VERIFIED; `also`: a further match of the receipt's report. */
async function verifyOffline(m: Evidence, also?: RegExp): Promise<void> {
  const checks: [string, string[], RegExp][] = [
    ['receipt', ['--rpc', service.rpcUrl], /^VERIFIED: .*as of \S+Z \(RFC 3161 genTime\)/m],
    ['PDF certificate', ['--certificate', m.pdf, '--rpc', service.rpcUrl], /^VERIFIED/m],
    ['signed statement', ['--signature', m.signature], /holds\s+Ed25519 key pinned\s+.*valid as of/],
    ['evidence record', ['--evidence-record', m.recordFile], /holds .*archive timestamp 1 .*hash tree holds the hash of the data/],
  ];
  for (const [what, flags, detail] of checks) {
    const r = await cli('verify', m.photo, ...flags);
    assert.equal(r.code, 0, `${m.label}, ${what}: ${r.out}`);
    assert.match(r.out, /^VERIFIED/m, `${m.label}, ${what}`);
    assert.match(r.out, detail, `${m.label}, ${what}: ${r.out}`);
    if (also && what === 'receipt') assert.match(r.out, also, `${m.label}, ${what}: ${r.out}`);
  }
}

/** The classic TSA root that issued this receipt's token's leaf: from the TSA history (retired) or the current root file. */
async function rootOfItsTime(m: Evidence): Promise<{ pem: string; retired: boolean }> {
  const leaf = new X509Certificate(m.receipt.timestamp.tsa_certificates[0] ?? '');
  const history = await readTsaHistory(path.join(service.options.dataDir, 'tsa', 'history.json'));
  const candidates = [
    ...history.retired.filter((e) => e.kind === 'classic' && e.role === 'root').map((e) => ({ pem: e.pem, retired: true })),
    { pem: await readFile(tsaFiles(path.join(service.options.dataDir, 'tsa')).rootCert, 'utf8'), retired: false },
  ];
  const issuers = candidates.filter((c) => {
    const root = new X509Certificate(c.pem);
    return leaf.checkIssued(root) && leaf.verify(root.publicKey);
  });
  assert.equal(issuers.length, 1, `${m.label}: one root issued the token's TSA certificate`);
  return issuers[0] as { pem: string; retired: boolean };
}

/** `openssl ts -verify` of the receipt's classic token against the photo, with the root of its time, at `at`. */
async function opensslVerify(m: Evidence, at?: Date): Promise<{ code: number; out: string }> {
  const base = path.join(dir, `openssl-${m.label}`);
  await Promise.all([
    writeFile(`${base}.tsr`, Buffer.from(m.receipt.timestamp.token, 'base64')),
    writeFile(`${base}.tsa.pem`, m.receipt.timestamp.tsa_certificates[0] ?? ''),
    writeFile(`${base}.root.pem`, (await rootOfItsTime(m)).pem),
  ]);
  const args = ['ts', '-verify', '-data', m.photo, '-in', `${base}.tsr`, '-CAfile', `${base}.root.pem`, '-untrusted', `${base}.tsa.pem`, ...(at ? ['-attime', String(Math.floor(at.getTime() / 1000))] : [])];
  try {
    const { stdout, stderr } = await exec('openssl', args);
    return { code: 0, out: `${stdout}${stderr}` };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'lifetime-'));
  // javac meanwhile (ErsCheck.java, compiled once).
  const javac = compiledErsCheck();
  javac.catch(() => undefined);
  const t0 = Date.now();
  service = await Service.create({ dataDir: path.join(dir, 'data'), logFile: path.join(dir, 'stack.log'), env: { ARCHIVE_GROUP_SECONDS: '0', ARCHIVE_INTERVAL_MS: '500' } });
  await service.start();
  apiKey = (await setUpAccount(service)).apiKey;
  made.before = await makeEvidence('before');
  await service.kill();
  const t1 = Date.now();

  const done: string[] = [];
  for (const argv of ROTATIONS) {
    const r = await service.admin(...argv);
    assert.equal(r.code, 0, `${argv.join(' ')} (after ${done.join(', ') || 'nothing'}): ${r.out}${r.err}`);
    rotated[argv.join(' ')] = JSON.parse(r.out) as Record<string, unknown>;
    done.push(argv.join(' '));
  }

  const t2 = Date.now();
  const from = (await readFile(service.options.logFile, 'utf8')).length;
  await service.start();
  walletLog = service.logSince(from);
  made.after = await makeEvidence('after');
  await javac;
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  console.log(`# start, before evidence (record included), stop: ${s(t1 - t0)}; ${ROTATIONS.length} rotation commands: ${s(t2 - t1)}; start, after evidence: ${s(Date.now() - t2)}`);
});
after(async () => {
  mock.timers.reset();
  await service?.kill();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('every key rotated with its one command, in order, after the evidence was made', () => {
  it('each command retired the key it replaced; the next start finished the wallet\'s rotation', () => {
    for (const kind of ['ml-dsa-65', 'ed25519', 'pdf-signing']) {
      const r = rotated[`rotate-key ${kind}`] as { retired: { retired_at: string } | null; active: { not_before: string | null } };
      assert.ok(r.retired, kind);
      if (kind !== 'pdf-signing') assert.equal(r.active.not_before, r.retired.retired_at, kind);
    }
    const wallet = rotated['rotate-key ledger-wallet'] as { from: string; to: string };
    assert.match(walletLog, new RegExp(`^wallet {5}rotated ${wallet.from} → ${wallet.to} \\(funded in 0x[0-9a-f]{64}\\); ${wallet.from} retired$`, 'm'));
    for (const [argv, roles] of [
      ['rotate-tsa-leaf', ['leaf']],
      ['rotate-tsa-root', ['leaf', 'root']],
      ['rotate-tsa-leaf --pq', ['leaf']],
      ['rotate-tsa-root --pq', ['leaf', 'root']],
    ] as const) {
      const r = rotated[argv] as { retired: { role: string }[]; pdf_signing?: { retired: unknown } };
      assert.deepEqual(r.retired.map((x) => x.role).sort(), roles, argv);
      // A new classic root reissues the PDF signing key under itself (its second rotation).
      assert.equal(r.pdf_signing !== undefined, argv === 'rotate-tsa-root', argv);
      if (r.pdf_signing) assert.ok(r.pdf_signing.retired, argv);
    }
  });

  it('the evidence before and after was made with different keys of every kind', async () => {
    const [b, a] = [made.before.receipt, made.after.receipt];
    assert.notEqual(b.pq_signature.key_id, a.pq_signature.key_id);
    assert.notEqual(b.ledger.from.toLowerCase(), a.ledger.from.toLowerCase());
    assert.equal(b.ledger.from.toLowerCase(), (rotated['rotate-key ledger-wallet'] as { from: string }).from.toLowerCase());
    for (const t of ['timestamp', 'timestamp_pq'] as const) {
      assert.notEqual(b[t].tsa_certificates[0], a[t].tsa_certificates[0], `${t}: the leaf`);
      assert.notEqual(b[t].tsa_certificates.at(-1), a[t].tsa_certificates.at(-1), `${t}: the root`);
    }
    const kid = async (file: string) => (JSON.parse(await readFile(file, 'utf8')) as { key_id: string }).key_id;
    assert.notEqual(await kid(made.before.signature), await kid(made.after.signature), 'the Ed25519 key');
  });
});

describe('online, now (the service\'s readers)', () => {
  it('v2 verify: both verified as of their RFC 3161 genTime; the before evidence names its keys retired since', async () => {
    for (const m of [made.before, made.after]) {
      const v = await getJson<{ status: string; summary: string; proofs: Record<string, { state: string; reason: string }> }>(`/api/v2/evidence/verify/${m.hash}`);
      assert.equal(v.status, 'verified', `${m.label}: ${v.summary} ${JSON.stringify(v.proofs)}`);
      assert.match(v.summary, /as of \S+Z \(RFC 3161 genTime\)/, m.label);
      for (const proof of ['timestamp', 'timestamp_pq', 'pq_key', 'ledger']) assert.equal(v.proofs[proof]?.state, 'holds', `${m.label}: ${proof}`);
      if (m.label === 'before') {
        assert.match(v.proofs.pq_key?.reason ?? '', /retired since/);
        assert.match(v.proofs.ledger?.reason ?? '', /retired since/);
      }
    }
  });

  it('v1 verify (pq, chain, ledger) and the verify page: both verified; /api/v1/pq/info trusts both ML-DSA-65 keys', async () => {
    const info = await getJson<{ trusted_fingerprints: string[] }>('/api/v1/pq/info');
    for (const m of [made.before, made.after]) {
      assert.ok(info.trusted_fingerprints.includes(sha256Hex(Buffer.from(m.receipt.pq_signature.public_key, 'base64'))), m.label);
      assert.equal((await getJson<{ verified: boolean }>(`/api/v1/pq/verify/${m.hash}`)).verified, true, `${m.label}: pq`);
      assert.equal((await getJson<{ status: string }>(`/api/v1/chain/verify/${m.hash}`)).status, 'verified', `${m.label}: chain`);
      assert.equal((await getJson<{ verified: boolean }>(`/api/v1/ledger/verify/${m.hash}`)).verified, true, `${m.label}: ledger`);
      const page = await (await ok(await fetch(`${service.base}/verify/${m.hash}`), `${m.label}: page`)).text();
      assert.match(page, /data-status="verified"/, m.label);
      assert.match(page, /as of/, m.label);
      assert.doesNotMatch(page, /Not verified/, m.label);
    }
  });

  it('the JWK set and the trust-anchor document list current and retired keys of every kind, each with its window', async () => {
    const { keys } = await getJson<{ keys: Jwk[] }>('/.well-known/jwks.json');
    for (const [kty, kind] of [
      ['AKP', 'ml-dsa-65'],
      ['OKP', 'ed25519'],
    ] as const) {
      const r = rotated[`rotate-key ${kind}`] as { retired: { kid: string; retired_at: string }; active: { kid: string } };
      const retired = keys.find((k) => k.kty === kty && k.status === 'retired');
      const active = keys.find((k) => k.kty === kty && k.status === 'active');
      assert.deepEqual([retired?.kid, retired?.retired_at], [r.retired.kid, r.retired.retired_at], kind);
      assert.deepEqual([active?.kid, active?.not_before, active?.retired_at], [r.active.kid, r.retired.retired_at, null], kind);
      assert.ok(retired?.not_before && retired.retired_at && retired.not_before < retired.retired_at, `${kind}: a window that starts before it ends`);
    }
    const anchors = await getJson<TrustAnchors>('/.well-known/evidence-trust-anchors.json');
    assert.deepEqual(anchors.signing_keys.map((k) => [k.kid, k.status, k.retired_at]).sort(), keys.map((k) => [k.kid, k.status, k.retired_at]).sort());
    // PDF signing: rotate-key pdf-signing, then the root rotation's reissue: two retired, one active.
    assert.deepEqual(anchors.pdf_signing.map((p) => p.status).sort(), ['active', 'retired', 'retired']);
    for (const p of anchors.pdf_signing.filter((x) => x.status === 'retired')) assert.ok(p.not_before && p.not_after && p.retired_at, JSON.stringify(p));
    const wallet = rotated['rotate-key ledger-wallet'] as { from: string; to: string };
    const wallets = new Map(anchors.ledger.wallets.map((w) => [w.address.toLowerCase(), w]));
    assert.equal(wallets.get(wallet.from.toLowerCase())?.status, 'retired');
    assert.ok(wallets.get(wallet.from.toLowerCase())?.retired_at);
    assert.equal(wallets.get(wallet.to.toLowerCase())?.status, 'active');
    assert.equal(wallets.get(wallet.to.toLowerCase())?.not_before, wallets.get(wallet.from.toLowerCase())?.retired_at);
    assert.equal(anchors.ledger.wallet_address.toLowerCase(), wallet.to.toLowerCase());
    const tsa = (status: string) => anchors.tsa.certificates.filter((c) => c.status === status).map((c) => `${c.kind} ${c.role}`).sort();
    assert.deepEqual(tsa('active'), ['classic leaf', 'classic root', 'pq leaf', 'pq root']);
    assert.deepEqual(tsa('retired'), ['classic leaf', 'classic leaf', 'classic root', 'pq leaf', 'pq leaf', 'pq root']);
    for (const c of anchors.tsa.certificates.filter((x) => x.status === 'retired')) assert.ok(c.not_before < (c.retired_at ?? '') && (c.retired_at ?? '') < c.not_after, JSON.stringify(c));
    // The before tokens' certificates are among the retired ones, the after tokens' the active ones.
    const status = new Map(anchors.tsa.certificates.map((c) => [c.sha256, c.status]));
    const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256.replaceAll(':', '').toLowerCase();
    for (const m of [made.before, made.after]) {
      for (const pem of [...m.receipt.timestamp.tsa_certificates, ...m.receipt.timestamp_pq.tsa_certificates]) {
        assert.equal(status.get(fingerprint(pem)), m.label === 'before' ? 'retired' : 'active', `${m.label}: ${new X509Certificate(pem).subject}`);
      }
    }
  });
});

describe('offline, now: evidence verify with a trust file fetched after the rotations', () => {
  it('evidence trust add, then the receipt, the PDF, the signed statement and the evidence record of both: VERIFIED', async () => {
    await writeFile(path.join(dir, 'trust.json'), JSON.stringify({ version: 1, services: [] }));
    const added = await cli('trust', 'add', service.base);
    assert.equal(added.code, 0, added.out);
    for (const m of [made.before, made.after]) await verifyOffline(m);
  });

  it('a changed byte of the evidence record, or another photo, fails', async () => {
    const m = made.before;
    const changed = Uint8Array.from(m.record);
    changed[changed.length - 10] = (changed[changed.length - 10] ?? 0) ^ 0x01;
    const file = path.join(dir, 'changed.ers');
    await writeFile(file, changed);
    const r = await cli('verify', m.photo, '--evidence-record', file);
    assert.equal(r.code, 1, r.out);
    const other = await cli('verify', made.after.photo, '--evidence-record', m.recordFile);
    assert.equal(other.code, 1, other.out);
  });
});

describe('standard tools', () => {
  it('openssl ts -verify: each classic token with the root of its time (the before one: a retired root from the TSA history)', async () => {
    for (const m of [made.before, made.after]) {
      const root = await rootOfItsTime(m);
      assert.equal(root.retired, m.label === 'before', `${m.label}: the root of its time is ${root.retired ? 'retired' : 'current'}`);
      assert.equal(root.pem.trim(), m.receipt.timestamp.tsa_certificates.at(-1)?.trim(), `${m.label}: the receipt carries that root`);
      const r = await opensslVerify(m);
      assert.equal(r.code, 0, `${m.label}: ${r.out}`);
      assert.match(r.out, /Verification: OK/, m.label);
    }
  });

  it('pdfsig: both PDFs "Signature is Valid", each carrying the signing certificate of its time', async () => {
    const anchors = await getJson<TrustAnchors>('/.well-known/evidence-trust-anchors.json');
    const der = (pem: string) => Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
    for (const m of [made.before, made.after]) {
      const { stdout } = await exec('pdfsig', [m.pdf]);
      assert.match(stdout, /Signature Validation: Signature is Valid\./, `${m.label}: ${stdout}`);
      const contents = Buffer.from(/\/Contents\s*<([0-9a-fA-F]+)>/.exec((await readFile(m.pdf)).toString('latin1'))?.[1] ?? '', 'hex');
      const carried = anchors.pdf_signing.filter((p) => contents.includes(der(p.certificate_pem)));
      assert.deepEqual(carried.map((p) => p.status), [m.label === 'before' ? 'retired' : 'active'], m.label);
    }
  });

  it('BouncyCastle (ErsCheck) accepts both evidence records, and rejects each with one byte of the record or of the photo changed', async () => {
    for (const m of [made.before, made.after]) {
      const root = (await rootOfItsTime(m)).pem;
      const good = await bouncyCastleErsCheck(m.record, m.bytes, root);
      assert.ok(good.accepted, `${m.label}: ${good.out}`);
      const flip = (bytes: Uint8Array, at: number) => {
        const copy = Uint8Array.from(bytes);
        copy[at] = (copy[at] ?? 0) ^ 0x01;
        return copy;
      };
      // One byte of the record: a hash of its first reduced hash-tree list (the data's own), and one
      // of its token's signature value (near the end); one byte of the photo.
      const first = parseEvidenceRecord(m.record).chains[0]?.[0]?.reducedHashtree?.[0]?.[0];
      assert.ok(first, `${m.label}: the record has a reduced hash tree`);
      const inList = Buffer.from(m.record).indexOf(Buffer.from(first)) + 5;
      assert.ok(inList > 5, m.label);
      const [inHashList, inSignature, inPhoto] = await Promise.all([
        bouncyCastleErsCheck(flip(m.record, inList), m.bytes, root),
        bouncyCastleErsCheck(flip(m.record, m.record.length - 10), m.bytes, root),
        bouncyCastleErsCheck(m.record, flip(m.bytes, 3), root),
      ]);
      const changed = [
        ['a hash of the first hash list', inHashList],
        ["the token's signature", inSignature],
        ['one byte of the photo', inPhoto],
      ] as const;
      console.log(`# BC, ${m.label} (${m.record.length} bytes): ${good.out.trim().split('\n').pop()}; ${changed.map(([what, r]) => `${what} changed: ${r.out.trim().split('\n').pop()}`).join('; ')}`);
      for (const [what, r] of changed) {
        assert.ok(!r.accepted, `${m.label}, ${what} changed: ${r.out}`);
        assert.match(r.out, /^REJECTED: /m, `${m.label}, ${what} changed`);
      }
    }
  });
});

describe('five years on (an injected clock)', () => {
  let fiveYearsOn: Date;
  before(() => {
    fiveYearsOn = new Date(Date.now() + FIVE_YEARS_MS);
    mock.timers.enable({ apis: ['Date'], now: fiveYearsOn.getTime() });
  });
  after(() => mock.timers.reset());

  it('evidence verify with the same trust file: receipt, PDF, signed statement and evidence record of both still VERIFIED', async () => {
    // The injected clock reaches the CLI: it counts the confirmations as of five years on.
    for (const m of [made.before, made.after]) await verifyOffline(m, new RegExp(`confirmations? as of ${fiveYearsOn.toISOString().slice(0, 10)}T`));
  });

  it('openssl ts -verify -attime five years on: both accepted (the TSA leaves are valid ten years)', async () => {
    for (const m of [made.before, made.after]) {
      assert.ok(new X509Certificate(m.receipt.timestamp.tsa_certificates[0] ?? '').validToDate > fiveYearsOn, `${m.label}: the leaf outlives five years`);
      const r = await opensslVerify(m, fiveYearsOn);
      assert.equal(r.code, 0, `${m.label}: ${r.out}`);
      assert.match(r.out, /Verification: OK/);
    }
  });

  it('BouncyCastle with five years on as its validation date: both evidence records accepted', async () => {
    const results = await Promise.all([made.before, made.after].map(async (m) => ({ m, r: await bouncyCastleErsCheck(m.record, m.bytes, (await rootOfItsTime(m)).pem, fiveYearsOn) })));
    for (const { m, r } of results) assert.ok(r.accepted, `${m.label}: ${r.out}`);
  });
});

describe('after the TSA leaves expired (a day past the latest notAfter)', () => {
  let expired: Date;
  before(() => {
    const notAfters = [made.before, made.after].flatMap((m) => [m.receipt.timestamp.tsa_certificates[0], m.receipt.timestamp_pq.tsa_certificates[0]]).map((pem) => new X509Certificate(pem ?? '').validToDate.getTime());
    expired = new Date(Math.max(...notAfters) + DAY_MS);
    mock.timers.enable({ apis: ['Date'], now: expired.getTime() });
  });
  after(() => mock.timers.reset());

  it('openssl ts -verify -attime then refuses (it judges the path at -attime); evidence verify still holds as of the genTime and says the certificate has since expired', async () => {
    for (const m of [made.before, made.after]) {
      const late = await opensslVerify(m, expired);
      assert.notEqual(late.code, 0, `${m.label}: openssl accepted an expired path at ${expired.toISOString()}: ${late.out}`);
      assert.match(late.out, /certificate has expired/, m.label);
      // Ours: the same token, as of its genTime (RFC 3161 §2.4.2), classic and post-quantum.
      const r = await cli('verify', m.photo, '--rpc', service.rpcUrl);
      assert.equal(r.code, 0, `${m.label}: ${r.out}`);
      assert.match(r.out, /^VERIFIED: .*as of \S+Z \(RFC 3161 genTime\)/m, m.label);
      assert.equal(r.out.match(/has since expired/g)?.length, 2, `${m.label}: both TSA certificates: ${r.out}`);
    }
  });
});
