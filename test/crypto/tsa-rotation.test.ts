/**
 * Rotation of the TSA leaf and root, classic (ECDSA P-256) and post-quantum (ML-DSA-65), with an
 * injected clock (issue 27 parts 1, 2 and 4): tokens made before each rotation and after it are
 * verified side by side "five years on", when every leaf has expired:
 *
 * - every token verifies as of its genTime, against the current root and the retired ones the
 *   history keeps, and the verdict says that its TSA certificate has since expired;
 * - a token signed with a retired leaf after its retirement fails, and so does one dated after its
 *   certificate's notAfter (made with the genuine key: the TSA itself refuses to);
 * - `openssl ts -verify` (the system's, 3.0: classic tokens only) accepts the classic tokens made
 *   before each rotation with the root of their time, at their genTime (`-attime`);
 * - the trust-anchor entries (history.ts) list current and retired certificates with their windows.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateTsaCertificates } from '../../lib/crypto/tsa/certificates.js';
import { EmbeddedTsa } from '../../lib/crypto/tsa/embedded.js';
import { pqTsaFiles, tsaFiles } from '../../lib/crypto/tsa/files.js';
import { type TsaKind, readTsaHistory, retiredRoots, retirementsOf } from '../../lib/crypto/tsa/history.js';
import { generatePqTsaCertificates } from '../../lib/crypto/tsa/pq-certificates.js';
import { rotateTsaLeaf, rotateTsaRoot } from '../../lib/crypto/tsa/rotation.js';
import { verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';
import { checkTimestamp } from '../../lib/evidence/proof-check.js';
import { buildResponse } from './tsa-token-builder.js';

const DAY = 86_400_000;
const T0 = new Date(Date.UTC(2026, 0, 5, 9));
const LEAF_ROTATION = new Date(T0.getTime() + 30 * DAY);
const ROOT_ROTATION = new Date(T0.getTime() + 60 * DAY);
const FIVE_YEARS_ON = new Date(Date.UTC(2031, 0, 5, 9));
const imprint = createHash('sha256').update('the photo of the dent').digest();
const LEAF_YEARS = 2;

let dir: string;
let historyFile: string;

interface Made {
  name: string;
  kind: TsaKind;
  response: Uint8Array;
  genTime: Date;
  leafPem: string;
  rootPem: string;
  /** The leaf's key, as an operator's backup would keep it after the rotation. */
  keyPem: string;
}
const made: Made[] = [];

async function tsaAt(kind: TsaKind, at: Date): Promise<{ tsa: EmbeddedTsa; leafPem: string; rootPem: string; keyPem: string }> {
  const files = kind === 'pq' ? pqTsaFiles(dir) : tsaFiles(dir);
  const [rootPem, leafPem, keyPem] = [files.rootCert, files.tsaCert, files.tsaKey].map((f) => readFileSync(f, 'utf8')) as [string, string, string];
  const tsa = await EmbeddedTsa.create({ rootCertPem: rootPem, tsaCertPem: leafPem, tsaKeyPkcs8Pem: keyPem, policyOid: kind === 'pq' ? '2.25.2' : '2.25.1', clock: () => at });
  return { tsa, leafPem, rootPem, keyPem };
}

async function stamp(name: string, kind: TsaKind, at: Date): Promise<void> {
  const { tsa, leafPem, rootPem, keyPem } = await tsaAt(kind, at);
  const { response } = await tsa.issue({ imprint, certReq: true });
  made.push({ name, kind, response, genTime: at, leafPem, rootPem, keyPem });
}

/** The relying party's view five years on: the current root, the retired ones, the retirements. */
async function verifyFiveYearsOn(kind: TsaKind, response: Uint8Array) {
  const files = kind === 'pq' ? pqTsaFiles(dir) : tsaFiles(dir);
  const history = await readTsaHistory(historyFile);
  const verification = await verifyTimestampResponse(response, {
    imprint,
    roots: [readFileSync(files.rootCert, 'utf8'), ...retiredRoots(history, kind)],
    hashAlgorithm: 'SHA-256',
    retired: retirementsOf(history.retired),
  });
  return { verification, verdict: checkTimestamp(verification, undefined, FIVE_YEARS_ON) };
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'tsa-rotation-'));
  historyFile = path.join(dir, 'history.json');
  await mkdir(dir, { recursive: true });
  // What lib/local/bootstrap.ts writes at first start, made at T0 with two-year leaves.
  const classic = await generateTsaCertificates({ now: T0, tsaValidityYears: LEAF_YEARS });
  const pq = await generatePqTsaCertificates({ now: T0, tsaValidityYears: LEAF_YEARS });
  for (const [files, b] of [
    [tsaFiles(dir), classic],
    [pqTsaFiles(dir), pq],
  ] as const) {
    writeFileSync(files.rootCert, b.rootCertPem);
    writeFileSync(files.rootKey, b.rootKeyPkcs8Pem, { mode: 0o600 });
    writeFileSync(files.tsaCert, b.tsaCertPem);
    writeFileSync(files.tsaKey, b.tsaKeyPkcs8Pem, { mode: 0o600 });
  }
  for (const kind of ['classic', 'pq'] as const) {
    await stamp(`${kind}: first leaf, first root`, kind, new Date(T0.getTime() + DAY));
    await rotateTsaLeaf({ dir, historyFile, kind, now: LEAF_ROTATION, tsaValidityYears: LEAF_YEARS });
    await stamp(`${kind}: second leaf, first root`, kind, new Date(LEAF_ROTATION.getTime() + DAY));
    await rotateTsaRoot({ dir, historyFile, kind, now: ROOT_ROTATION, tsaValidityYears: LEAF_YEARS });
    await stamp(`${kind}: third leaf, second root`, kind, new Date(ROOT_ROTATION.getTime() + DAY));
  }
});

after(() => rmSync(dir, { recursive: true, force: true }));

describe('TSA rotation: old and new tokens side by side, five years on', () => {
  it('records each retirement with its window: the first leaf, then the second leaf and the first root, of each kind', async () => {
    const history = await readTsaHistory(historyFile);
    const summary = history.retired.map((e) => `${e.kind} ${e.role} ${e.retired_at}`);
    assert.deepEqual(summary, [
      `classic leaf ${LEAF_ROTATION.toISOString()}`,
      `classic leaf ${ROOT_ROTATION.toISOString()}`,
      `classic root ${ROOT_ROTATION.toISOString()}`,
      `pq leaf ${LEAF_ROTATION.toISOString()}`,
      `pq leaf ${ROOT_ROTATION.toISOString()}`,
      `pq root ${ROOT_ROTATION.toISOString()}`,
    ]);
    for (const e of history.retired) {
      assert.equal(e.status, 'retired');
      assert.ok(Date.parse(e.not_before) < Date.parse(e.retired_at ?? '') && Date.parse(e.retired_at ?? '') < Date.parse(e.not_after), `${e.kind} ${e.role}: retired inside its window`);
    }
    const rootShas = new Set(made.map((m) => createHash('sha256').update(m.rootPem).digest('hex')));
    assert.equal(rootShas.size, 4, 'two roots of each kind made the tokens');
  });

  it('verifies every token made before and after each rotation, as of its genTime, and says its certificate has since expired', async () => {
    assert.equal(made.length, 6);
    for (const m of made) {
      const { verification, verdict } = await verifyFiveYearsOn(m.kind, m.response);
      assert.equal(verification.ok, true, `${m.name}: ${JSON.stringify(verification.checks)}`);
      assert.equal(verdict.ok, true, m.name);
      assert.match(verdict.reason, new RegExp(`as of its genTime ${m.genTime.toISOString()}`), m.name);
      assert.match(verdict.reason, /has since expired/, m.name);
      // Not yet expired when it was judged at the time: then nothing "since".
      assert.doesNotMatch(checkTimestamp(verification, undefined, new Date(m.genTime.getTime() + DAY)).reason, /since expired/);
    }
  });

  it('fails a token signed with a retired leaf after its retirement, classic and post-quantum', async () => {
    for (const kind of ['classic', 'pq'] as const) {
      const first = made.find((m) => m.kind === kind && m.name.includes('first leaf'));
      assert.ok(first);
      // The first leaf's key, kept in a backup, used after its retirement: a TSA from that leaf,
      // clocked after LEAF_ROTATION (the certificate itself is still valid then).
      const late = new Date(LEAF_ROTATION.getTime() + 2 * DAY);
      const response = await forgeWithRetiredLeaf(kind, first, late);
      const { verification, verdict } = await verifyFiveYearsOn(kind, response);
      assert.equal(verification.ok, false, kind);
      assert.equal(verification.checks.chain.result, 'fail');
      assert.match(verification.checks.chain.reason, /was retired on .*after its retirement/);
      assert.match(verdict.reason, /does not verify \(chain\): .*retired/);
    }
  });

  it('fails a token dated after its certificate\'s notAfter, made with the genuine key', async () => {
    const files = tsaFiles(dir);
    const signer = { certPem: readFileSync(files.tsaCert, 'utf8'), keyPem: readFileSync(files.tsaKey, 'utf8') };
    const afterNotAfter = new Date(ROOT_ROTATION.getTime() + (LEAF_YEARS * 366 + 2) * DAY);
    const response = buildResponse({ signer, imprint, genTime: afterNotAfter, certificates: [signer.certPem] });
    const { verification } = await verifyFiveYearsOn('classic', response);
    assert.equal(verification.ok, false);
    assert.equal(verification.checks.signature.result, 'pass', 'the signature itself is genuine');
    assert.match(verification.checks.chain.reason, /is not valid at/);
  });

  it('openssl ts -verify (system OpenSSL) accepts each classic token with the root of its time, at its genTime', () => {
    for (const m of made.filter((x) => x.kind === 'classic')) {
      const token = path.join(dir, 'token.tsr');
      const data = path.join(dir, 'data.bin');
      const root = path.join(dir, 'root-of-its-time.pem');
      const leaf = path.join(dir, 'leaf.pem');
      writeFileSync(token, m.response);
      writeFileSync(data, 'the photo of the dent');
      writeFileSync(root, m.rootPem);
      writeFileSync(leaf, m.leafPem);
      const run = (attime: Date) =>
        spawnSync('openssl', ['ts', '-verify', '-data', data, '-in', token, '-CAfile', root, '-untrusted', leaf, '-attime', String(Math.floor(attime.getTime() / 1000))], { encoding: 'utf8' });
      const ok = run(m.genTime);
      assert.equal(ok.status, 0, `${m.name}: ${ok.stdout}${ok.stderr}`);
      assert.match(ok.stdout, /Verification: OK/);
      // OpenSSL judges the path at -attime: five years on, the leaf has expired.
      const late = run(FIVE_YEARS_ON);
      assert.notEqual(late.status, 0, `${m.name}: openssl accepted an expired path at ${FIVE_YEARS_ON.toISOString()}`);
    }
  });
});

/** A token from a retired leaf's key (kept from before the rotation), dated `at`. */
async function forgeWithRetiredLeaf(kind: TsaKind, first: Made, at: Date): Promise<Uint8Array> {
  const tsa = await EmbeddedTsa.create({ rootCertPem: first.rootPem, tsaCertPem: first.leafPem, tsaKeyPkcs8Pem: first.keyPem, policyOid: kind === 'pq' ? '2.25.2' : '2.25.1', clock: () => at });
  return (await tsa.issue({ imprint, certReq: true })).response;
}
