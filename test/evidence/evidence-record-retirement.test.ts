/**
 * Renewal on a TSA key's retirement (lib/evidence/archive-retirement.ts, docs/decisions.md
 * "Evidence records"): on the real parts and a private copy of the stack's DATA_DIR (as
 * test/cli/admin-tsa.test.ts rotates), anchors get their evidence record from the archive job,
 * `npm run admin -- rotate-tsa-leaf` retires the TSA leaf, and the next pass (a fresh process's
 * view: the TSA and its history read again) renews every record under the retired leaf with an
 * archive timestamp of the new one: our verifier, the offline CLI and BouncyCastle accept it.
 * Records under the current leaf are neither renewed nor read. A retirement planned for later
 * (`record-tsa-retirement --at` in the future, the production step) is acted on before it comes.
 * A sweep longer than a page goes one page per pass, from where the last one ended.
 */
import assert from 'node:assert/strict';
import { X509Certificate, createHash } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { runAdmin, type CliIo } from '../../lib/cli/admin.js';
import { ersDigest, parseEvidenceRecord } from '../../lib/crypto/ers.js';
import { createArchiveStamper } from '../../lib/crypto/ers-stamper.js';
import { verifyEvidenceRecord } from '../../lib/crypto/ers-verify.js';
import { tsaFiles } from '../../lib/crypto/tsa/files.js';
import { EmbeddedTsa, issueTsaCertificate, pemToDer, timestampSigner } from '../../lib/crypto/tsa/index.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { getArchiveDeps } from '../../lib/deps/archive-job.js';
import { getConfig, resetCoreDeps } from '../../lib/deps/core.js';
import { type ArchiveDeps, type ArchivePassReport, runArchivePass } from '../../lib/evidence/archive.js';
import { evidenceRecordOf } from '../../lib/evidence/archive-record.js';
import { freePort } from '../../lib/local/net.js';
import { onlyMine } from '../support/archive.js';
import { createAccount, Device, json } from '../support/client.js';
import { bouncyCastleErsCheck } from '../support/ers-check.js';
import { counting, evidenceVerify, total } from '../support/ers-checks.js';
import { useStack } from '../support/stack.js';

const DAY = 24 * 3600_000;

let dir: string;
let rootFile: string;
let rootPem: string;
let apiKey: string;
/** This file's anchors: its passes group and renew only these (test/support/archive.ts). */
const mine = new Set<string>();
/** The groups they joined, kept across the stores of this file's "processes". */
const myGroups = new Set<string>();
const photos = new Map<string, Buffer>();

async function anchor(label: string): Promise<string> {
  const photo = Buffer.from(`${label} ${Math.random()}`);
  const { app } = await import('../../functions/v2/evidence-anchor.js');
  const body = new Device().next(sha256Hex(photo));
  const res = await app.request('/api/v2/evidence/anchor', json(body, { 'x-api-key': apiKey }));
  assert.equal(res.status, 200, await res.clone().text());
  mine.add(body.sha256_hash);
  photos.set(body.sha256_hash, photo);
  return body.sha256_hash;
}

/** The archive job's dependencies as a fresh process builds them (the TSA and its history read again), this file's records only. */
async function freshDeps(): Promise<ArchiveDeps> {
  resetCoreDeps();
  const built = await getArchiveDeps();
  return { ...built, store: onlyMine(built.store, mine, myGroups), settings: { ...built.settings, groupAfterMs: 0 } };
}

/** Passes until the retirement sweep has nothing left (a page of other files' items counts as one), with every store call counted. */
async function passesUntilSwept(deps: ArchiveDeps): Promise<{ reports: ArchivePassReport[]; calls: Record<string, number> }> {
  const counted = counting(deps.store);
  const reports: ArchivePassReport[] = [];
  for (let i = 0; i < 50; i++) {
    const report = await runArchivePass({ ...deps, store: counted.store });
    reports.push(report);
    if (!report.retirement || report.retirement.swept) return { reports, calls: counted.calls };
  }
  assert.fail(`the sweep did not end in 50 passes: ${JSON.stringify(reports.at(-1))}`);
}

const sum = (reports: ArchivePassReport[], field: 'renewed' | 'stamps' | 'groups') => reports.reduce((n, r) => n + r[field], 0);
const shaOfPem = (pem: string) => createHash('sha256').update(pemToDer(pem)).digest('hex');
const pemNotAfter = (pem: string) => new X509Certificate(pem).validToDate.getTime();

/** The record of a hash as the endpoint serves it, its archive timestamps' signers (leaf SHA-256s), and what our verifier says. */
async function examine(imageHash: string) {
  const { der } = await evidenceRecordOf(deps().store, imageHash);
  const record = parseEvidenceRecord(der);
  const signers = record.chains.flatMap((c) => c.map((a) => timestampSigner(a.timeStamp)?.sha256));
  const photo = photos.get(imageHash) as Buffer;
  const ours = await verifyEvidenceRecord(der, { dataDigest: (alg) => ersDigest(alg, photo), rootsPem: [rootPem] });
  return { der, record, signers, ours, photo };
}

let current: ArchiveDeps | undefined;
const deps = () => current as ArchiveDeps;

function capture(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (l) => stdout.push(l), err: (l) => stderr.push(l) };
}

before(async () => {
  const env = await useStack();
  // A private copy of the stack's DATA_DIR: its TSA is rotated here, not under the other files.
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'ers-retirement-'));
  cpSync(env.DATA_DIR ?? '', dataDir, { recursive: true });
  process.env.DATA_DIR = dataDir;
  // Nothing answers on PORT: the rotation's "is npm start running?" check passes.
  process.env.PORT = String(await freePort());
  resetCoreDeps();
  dir = mkdtempSync(path.join(os.tmpdir(), 'ers-retirement-work-'));
  process.once('exit', () => {
    for (const d of [dataDir, dir]) rmSync(d, { recursive: true, force: true });
  });
  rootPem = await readFile(tsaFiles(getConfig().tsa.dir).rootCert, 'utf8');
  rootFile = path.join(dir, 'root.pem');
  await writeFile(rootFile, rootPem);
  apiKey = (await createAccount('pro')).apiKey;
});

describe('evidence records when a TSA leaf is retired', () => {
  let early: string[];
  let late: string;
  let oldLeaf: string;
  let newLeaf: string;

  it('rotate-tsa-leaf: the next pass renews the records under the retired leaf under the new one, and reads nothing else', async () => {
    early = [await anchor('before the rotation 0'), await anchor('before the rotation 1')];
    current = await freshDeps();
    const grouped = await runArchivePass(deps());
    assert.equal(grouped.groups, 1);
    const files = tsaFiles(getConfig().tsa.dir);
    const oldLeafPem = await readFile(files.tsaCert, 'utf8');
    oldLeaf = shaOfPem(oldLeafPem);
    assert.deepEqual((await examine(early[0] as string)).signers, [oldLeaf]);

    // The new leaf must end later than the old one for "not read" below (X.509 times are whole
    // seconds; a leaf ends 10 years after it is issued): the rotation waits out the old one's second.
    const issuedOld = new Date(pemNotAfter(oldLeafPem));
    issuedOld.setUTCFullYear(issuedOld.getUTCFullYear() - 10);
    const wait = issuedOld.getTime() + 1100 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));

    const io = capture();
    assert.equal(await runAdmin(['rotate-tsa-leaf'], io), 0, io.stderr.join('\n'));
    const rotated = JSON.parse(io.stdout.join('\n')) as { retired: { role: string; sha256: string }[]; evidence_records?: string };
    assert.deepEqual(rotated.retired.map((r) => [r.role, r.sha256]), [['leaf', oldLeaf]]);
    assert.match(rotated.evidence_records ?? '', /archive job renews/, 'the command says what becomes of the records');
    const newLeafPem = await readFile(files.tsaCert, 'utf8');
    newLeaf = shaOfPem(newLeafPem);
    assert.ok(pemNotAfter(newLeafPem) > pemNotAfter(oldLeafPem));

    // After the rotation (a new process: npm start again): one more anchor, grouped under the new leaf.
    current = await freshDeps();
    assert.deepEqual(deps().retiredTsa?.map((r) => r.sha256), [oldLeaf], 'the job sees the retirement in the TSA history');
    late = await anchor('after the rotation');
    const { reports, calls } = await passesUntilSwept(deps());
    console.log(`# retirement: ${reports.length} pass(es), ${sum(reports, 'renewed')} renewed, ${sum(reports, 'stamps')} TSA calls, ${total(calls)} store requests ${JSON.stringify(calls)}`);
    console.log(`# retirement: ${JSON.stringify(reports.map((r) => r.retirement))}`);
    assert.equal(sum(reports, 'groups'), 1, 'the new anchor got its group');
    assert.equal(sum(reports, 'renewed'), 1, 'the one group under the retired leaf, and nothing else');
    assert.equal(sum(reports, 'stamps'), 2, 'one TSA call for the new group, one for the renewal');
    // Work in proportion: the retired leaf's group read once and renewed once; the new group read
    // only by its own making (is it stored yet?), never by the sweep; the sweep's state read once.
    assert.equal(calls.getGroup, 2);
    assert.equal(calls.appendGroupRenewal, 1);
    assert.equal(calls.getRetirementSweep, 1);
    assert.equal(calls.moveRetirementSweep, reports.length);
    assert.equal(calls.listRenewalsUpTo, reports.length);
    assert.equal(reports.at(-1)?.retirement?.swept, true);
    assert.equal(reports.reduce((n, r) => n + (r.retirement?.under_retired ?? 0), 0), 1);

    for (const h of early) {
      const e = await examine(h);
      assert.equal(e.record.chains.length, 1);
      assert.equal(e.record.chains[0]?.length, 2, 'a second archive timestamp in the chain');
      assert.deepEqual(e.signers, [oldLeaf, newLeaf], 'the renewal is signed under the new leaf');
      assert.ok(e.ours.ok, JSON.stringify(e.ours.checks.map((c) => c.detail)));
    }
    const l = await examine(late);
    assert.deepEqual(l.signers, [newLeaf], 'the record under the current leaf is not renewed');

    // The offline CLI and BouncyCastle accept the renewed record.
    const e = await examine(early[0] as string);
    const recordFile = path.join(dir, 'renewed.ers');
    const photoFile = path.join(dir, 'renewed-photo.jpg');
    await Promise.all([writeFile(recordFile, e.der), writeFile(photoFile, e.photo)]);
    const cli = await evidenceVerify(dir, photoFile, '--evidence-record', recordFile, '--root', rootFile);
    console.log(cli.out.replace(/^/gm, '# CLI: '));
    assert.equal(cli.code, 0, cli.out);
    assert.match(cli.out, /chain 1\/1, archive timestamp 2 .*hash tree holds the hash of the previous timestamps/);
    const bc = await bouncyCastleErsCheck(e.der, e.photo, rootPem);
    console.log(bc.out.trim().replace(/^/gm, '# BC: '));
    assert.ok(bc.accepted, bc.out);
  });

  it('once swept, a pass reads the two indexes and nothing else; the records under the current leaf stay as they are', async () => {
    const counted = counting(deps().store);
    const idle = await runArchivePass({ ...deps(), store: counted.store });
    assert.deepEqual({ grouped: idle.grouped, renewed: idle.renewed, stamps: idle.stamps, retirement: idle.retirement }, { grouped: 0, renewed: 0, stamps: 0, retirement: undefined });
    assert.deepEqual(counted.calls, { listUngrouped: 1, listRenewalsDue: 1 });
    // A new process reads the sweep's state once: swept, nothing listed.
    current = await freshDeps();
    const cold = counting(deps().store);
    await runArchivePass({ ...deps(), store: cold.store });
    assert.deepEqual(cold.calls, { listUngrouped: 1, listRenewalsDue: 1, getRetirementSweep: 1 });
    assert.deepEqual((await examine(late)).signers, [newLeaf]);
  });

  it('a retirement planned for later (record-tsa-retirement --at): nothing moves while that key signs; once the next key does, the records are renewed before the retirement comes', async () => {
    // The production step (docs/runbook.md "Rotating the TSA keys"): the leaf's retirement is
    // recorded in the history the package ships, here for a week ahead, while it still signs.
    const files = tsaFiles(getConfig().tsa.dir);
    const retiringPem = await readFile(files.tsaCert, 'utf8');
    const retiringFile = path.join(dir, 'retiring.pem');
    await writeFile(retiringFile, retiringPem);
    const at = new Date(Date.now() + 7 * DAY);
    const io = capture();
    assert.equal(await runAdmin(['record-tsa-retirement', retiringFile, '--kind', 'classic', '--role', 'leaf', '--history', getConfig().tsa.historyFile, '--at', at.toISOString()], io), 0, io.stderr.join('\n'));
    assert.match(JSON.parse(io.stdout.join('\n')).evidence_records ?? '', /next deployment/);
    current = await freshDeps();
    const waiting = counting(deps().store);
    const held = await runArchivePass({ ...deps(), store: waiting.store });
    assert.deepEqual({ renewed: held.renewed, stamps: held.stamps, retirement: held.retirement }, { renewed: 0, stamps: 0, retirement: undefined }, 'no fresh key to renew under yet');
    assert.equal(waiting.calls.listRenewalsUpTo ?? 0, 0, 'its records are not looked for');

    // Then the new key and its leaf are deployed (here written over the TSA's files): the next run renews.
    const next = await issueTsaCertificate({ rootCertPem: rootPem, rootKeyPkcs8Pem: await readFile(files.rootKey, 'utf8') });
    await Promise.all([writeFile(files.tsaCert, next.tsaCertPem), writeFile(files.tsaKey, next.tsaKeyPkcs8Pem, { mode: 0o600 })]);
    current = await freshDeps();
    const { reports } = await passesUntilSwept(deps());
    assert.equal(sum(reports, 'renewed'), 2, 'both groups had their last timestamp under the leaf to retire');
    assert.equal(sum(reports, 'stamps'), 1, 'one TSA call for both');
    const third = shaOfPem(next.tsaCertPem);
    assert.deepEqual((await examine(early[1] as string)).signers, [oldLeaf, newLeaf, third]);
    const l = await examine(late);
    assert.deepEqual(l.signers, [newLeaf, third]);
    assert.ok(l.ours.ok, JSON.stringify(l.ours.checks.map((c) => c.detail)));
    const bc = await bouncyCastleErsCheck(l.der, l.photo, rootPem);
    assert.ok(bc.accepted, bc.out);
  });

  it('a sweep longer than a page: one page per pass, each recorded after its renewals, resumed after records that moved', async () => {
    // A leaf of this test alone (issued "a month ago", so that its records come before every other
    // file's on the index), two groups under it, then its retirement; one record per page.
    const monthAgo = new Date(Date.now() - 30 * DAY);
    const rootKeyPkcs8Pem = await readFile(tsaFiles(getConfig().tsa.dir).rootKey, 'utf8');
    const leaf = await issueTsaCertificate({ rootCertPem: rootPem, rootKeyPkcs8Pem, now: monthAgo });
    const tsa = await EmbeddedTsa.create({ rootCertPem: rootPem, ...leaf, policyOid: getConfig().tsa.policyOid });
    const base = await freshDeps();
    const under = { ...base, stamper: createArchiveStamper(tsa, 5000), retiredTsa: [] };
    const a = await anchor('paged 0');
    await runArchivePass(under);
    const b = await anchor('paged 1');
    await runArchivePass(under);
    const sha = shaOfPem(leaf.tsaCertPem);
    const retired = [...(base.retiredTsa ?? []), { sha256: sha, notAfter: new Date(pemNotAfter(leaf.tsaCertPem)), retiredAt: new Date() }];
    const paged = { ...base, retiredTsa: retired, settings: { ...base.settings, renewalsPerPass: 1 } };
    const { reports } = await passesUntilSwept(paged);
    const pages = reports.filter((r) => r.retirement?.certificate === sha);
    console.log(`# paged sweep: ${JSON.stringify(pages.map((r) => r.retirement))}`);
    assert.ok(pages.length >= 3, 'two full pages and the last');
    assert.equal(sum(reports, 'renewed'), 2);
    for (const h of [a, b]) {
      const e = await examine(h);
      assert.equal(e.signers.length, 2, 'renewed once');
      assert.equal(e.signers[0], sha);
      assert.ok(e.ours.ok, JSON.stringify(e.ours.checks.map((c) => c.detail)));
    }
  });
});
