import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { useStack } from '../support/stack.js';
import { onlyMine } from '../support/archive.js';
import { bouncyCastleErsCheck } from '../support/ers-check.js';
import { createAccount, Device, json } from '../support/client.js';
import { counting, total } from '../support/ers-checks.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { type ErsHash, ersDigest, parseEvidenceRecord } from '../../lib/crypto/ers.js';
import { createArchiveStamper } from '../../lib/crypto/ers-stamper.js';
import { verifyEvidenceRecord } from '../../lib/crypto/ers-verify.js';
import { EmbeddedTsa, issueTsaCertificate, parseCertificate } from '../../lib/crypto/tsa/index.js';
import { tsaFiles } from '../../lib/crypto/tsa/files.js';
import { getArchiveStore } from '../../lib/deps/archive.js';
import { getArchiveDeps } from '../../lib/deps/archive-job.js';
import { getConfig, resetCoreDeps } from '../../lib/deps/core.js';
import { type ArchiveDeps, runArchivePass } from '../../lib/evidence/archive.js';
import { main as evidenceCli } from '../../lib/cli/evidence.js';
import { addTrustedService } from '../../lib/cli/trust.js';
import { startHttpService } from '../support/http-server.js';

/**
 * RFC 4998 evidence records end to end on the real parts (dynalite, Hardhat, the embedded TSA):
 * anchors through the API, the archive job's pass, the public endpoint, our verifier, and
 * BouncyCastle 1.72's org.bouncycastle.tsp.ers (test/interop/ErsCheck.java, run by java) as the
 * implementation nobody here wrote; then the renewals years later with an injected clock: a
 * timestamp renewal as the TSA certificate nears its notAfter (signed by a new TSA leaf under the
 * same root), and a hash-tree renewal to SHA-512.
 */

let dir: string;
let rootPem: string;
let apiKey: string;
let otherApiKey: string;
const photos: Buffer[] = [];

async function anchor(bytes: Buffer): Promise<string> {
  const { app } = await import('../../functions/v2/evidence-anchor.js');
  const body = new Device().next(sha256Hex(bytes));
  const res = await app.request('/api/v2/evidence/anchor', json(body, { 'x-api-key': apiKey }));
  assert.equal(res.status, 200, await res.clone().text());
  return body.sha256_hash;
}

async function fetchRecord(imageHash: string, query = ''): Promise<Response> {
  const { app } = await import('../../functions/v2/evidence-record.js');
  return app.request(`/api/v2/evidence/evidence-record/${imageHash}${query}`);
}

/** The record as served: without a digest (the SHA-256 chain), or for the photo's SHA-512 (after a hash-tree renewal made from it). */
async function recordOf(imageHash: string, sha512?: string): Promise<Uint8Array> {
  const res = await fetchRecord(imageHash, sha512 ? `?sha512=${sha512}` : '');
  assert.equal(res.status, 200, await res.clone().text());
  return new Uint8Array(await res.arrayBuffer());
}

/** Runs the BouncyCastle check (test/support/ers-check.ts) against this file's TSA root; its output and whether it accepted. */
function bouncyCastle(record: Uint8Array, photo: Uint8Array, at?: Date): Promise<{ accepted: boolean; out: string }> {
  return bouncyCastleErsCheck(record, photo, rootPem, at);
}

function ours(record: Uint8Array, photo: Uint8Array) {
  return verifyEvidenceRecord(record, { dataDigest: (alg: ErsHash) => ersDigest(alg, photo), rootsPem: [rootPem] });
}

let deps: ArchiveDeps;
const hashes: string[] = [];

before(async () => {
  const env = await useStack();
  // This file's service renews hash trees to SHA-512 (ARCHIVE_HASH_ALGORITHM): owners may offer digests.
  process.env.ARCHIVE_HASH_ALGORITHM = 'SHA-512';
  resetCoreDeps();
  dir = await mkdtemp(path.join(os.tmpdir(), 'ers-test-'));
  rootPem = await readFile(tsaFiles(path.join(env.DATA_DIR ?? '', 'tsa')).rootCert, 'utf8');
  await writeFile(path.join(dir, 'root.pem'), rootPem);
  apiKey = (await createAccount('pro')).apiKey;
  otherApiKey = (await createAccount('pro')).apiKey;
  for (let i = 0; i < 3; i++) photos.push(Buffer.from(`a photo of the damage ${i} ${Math.random()}`));
  for (const p of photos) hashes.push(await anchor(p));
  const built = await getArchiveDeps();
  deps = { ...built, store: onlyMine(built.store, new Set(hashes)), settings: { ...built.settings, groupAfterMs: 0 } };
});

describe('RFC 4998 evidence records', () => {
  it('answers 404 evidence_record_pending for an anchored hash before its group is made, 404 evidence_not_found for an unknown one, 400 for a bad hash', async () => {
    const pending = await fetchRecord(hashes[0] ?? '');
    assert.equal(pending.status, 404);
    assert.equal(((await pending.json()) as { code: string }).code, 'evidence_record_pending');
    const unknown = await fetchRecord('ab'.repeat(32));
    assert.equal(unknown.status, 404);
    assert.equal(unknown.headers.get('content-type'), 'application/problem+json');
    assert.equal(((await unknown.json()) as { code: string }).code, 'evidence_not_found');
    for (const bad of ['xyz', 'AB'.repeat(31), 'ab'.repeat(33)]) {
      const res = await fetchRecord(bad);
      assert.equal(res.status, 400, bad);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
    }
  });

  it('one pass groups every waiting anchor under one archive timestamp, and the record is served as DER', async () => {
    const counted = counting(deps.store);
    const report = await runArchivePass({ ...deps, store: counted.store });
    assert.ok(report.grouped >= 3, `grouped ${report.grouped}`);
    assert.equal(report.groups, 1);
    assert.equal(report.stamps, 1, 'one TSA call for the whole group');
    console.log(`# archive pass: ${report.grouped} hashes in 1 group, ${report.stamps} TSA call, ${total(counted.calls)} store requests ${JSON.stringify(counted.calls)}`);
    // A second pass finds nothing of this file waiting and nothing due: two index queries, nothing else.
    const again = counting(deps.store);
    const idle = await runArchivePass({ ...deps, store: again.store });
    assert.deepEqual({ grouped: idle.grouped, renewed: idle.renewed, stamps: idle.stamps }, { grouped: 0, renewed: 0, stamps: 0 });
    assert.deepEqual(again.calls, { listUngrouped: 1, listRenewalsDue: 1 });

    const res = await fetchRecord(hashes[1] ?? '');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.match(res.headers.get('content-disposition') ?? '', new RegExp(`${hashes[1]}\\.ers`));
    const der = new Uint8Array(await res.arrayBuffer());
    const record = parseEvidenceRecord(der);
    assert.equal(record.chains.length, 1);
    assert.equal(record.chains[0]?.length, 1);
    // The first hash list holds the photo's SHA-256 itself: the data object is the photo.
    assert.ok(record.chains[0]?.[0]?.reducedHashtree?.[0]?.some((h) => Buffer.from(h).toString('hex') === hashes[1]));
    console.log(`# evidence record of a group of ${report.grouped}: ${der.length} bytes`);
  });

  it('our verifier accepts the record with the photo, and refuses another photo and a changed byte', async () => {
    const der = await recordOf(hashes[0] ?? '');
    const v = await ours(der, photos[0] as Buffer);
    assert.ok(v.ok, JSON.stringify(v.checks));
    assert.ok(!(await ours(der, photos[1] as Buffer)).ok);
    const changed = Uint8Array.from(der);
    changed[changed.length - 40] = (changed[changed.length - 40] ?? 0) ^ 1;
    assert.ok(!(await ours(changed, photos[0] as Buffer)).ok);
  });

  it('the offline CLI verifies the record against the photo file and the pinned root, says what it checked, and fails another file', async () => {
    const der = await recordOf(hashes[0] ?? '');
    const recordFile = path.join(dir, 'cli.ers');
    const photoFile = path.join(dir, 'cli-photo.jpg');
    const otherFile = path.join(dir, 'cli-other.jpg');
    await Promise.all([writeFile(recordFile, der), writeFile(photoFile, photos[0] as Buffer), writeFile(otherFile, photos[1] as Buffer)]);
    const cli = async (...args: string[]) => {
      const out: string[] = [];
      const code = await evidenceCli(['verify', ...args], { out: (l) => out.push(l), err: () => {} }, { EVIDENCE_TRUST_FILE: path.join(dir, 'no-trust.json') });
      return { code, out: out.join('\n') };
    };
    const good = await cli(photoFile, '--evidence-record', recordFile, '--root', path.join(dir, 'root.pem'));
    console.log(good.out.replace(/^/gm, '# CLI: '));
    assert.equal(good.code, 0, good.out);
    assert.match(good.out, /holds .*archive timestamp 1 .*hash tree holds the hash of the data/);
    assert.match(good.out, /existed at/);
    const byHash = await cli(hashes[0] ?? '', '--evidence-record', recordFile, '--root', path.join(dir, 'root.pem'));
    assert.equal(byHash.code, 0, byHash.out);
    const other = await cli(otherFile, '--evidence-record', recordFile, '--root', path.join(dir, 'root.pem'));
    assert.equal(other.code, 1, other.out);
    assert.match(other.out, /fails .*first hash list does not hold the hash of the data/);
    const unpinned = await cli(photoFile, '--evidence-record', recordFile);
    assert.equal(unpinned.code, 3, unpinned.out);
    assert.match(unpinned.out, /no TSA root is pinned/);
  });

  it('with a trust file, an archive timestamp dated after its TSA certificate\'s retirement fails, and one dated before it holds', async () => {
    const der = await recordOf(hashes[0] ?? '');
    const genTime = (await ours(der, photos[0] as Buffer)).checks[0]?.genTime;
    assert.ok(genTime);
    const recordFile = path.join(dir, 'retired.ers');
    const photoFile = path.join(dir, 'retired-photo.jpg');
    await Promise.all([writeFile(recordFile, der), writeFile(photoFile, photos[0] as Buffer)]);
    const trustFile = path.join(dir, 'trust-retired.json');
    await writeFile(trustFile, JSON.stringify({ version: 1, services: [] }));
    const service = await startHttpService();
    try {
      await addTrustedService(trustFile, service.url);
    } finally {
      await service.close();
    }
    const retireLeavesAt = async (at: Date) => {
      const trust = JSON.parse(await readFile(trustFile, 'utf8')) as { services: { tsa_certificates: { kind: string; role: string; status: string; retired_at: string | null }[] }[] };
      for (const c of trust.services[0]?.tsa_certificates ?? []) if (c.kind === 'classic' && c.role === 'leaf' && c.status === 'active') c.retired_at = at.toISOString();
      await writeFile(trustFile, JSON.stringify(trust));
    };
    const cli = async () => {
      const out: string[] = [];
      const code = await evidenceCli(['verify', photoFile, '--evidence-record', recordFile], { out: (l) => out.push(l), err: () => {} }, { EVIDENCE_TRUST_FILE: trustFile });
      return { code, out: out.join('\n') };
    };
    await retireLeavesAt(new Date(genTime.getTime() - 60_000));
    const after = await cli();
    assert.equal(after.code, 1, after.out);
    assert.match(after.out, /retired/);
    await retireLeavesAt(new Date(genTime.getTime() + 60_000));
    const before = await cli();
    assert.equal(before.code, 0, before.out);

    // The same for a stand-alone timestamp answer (POST /api/v2/evidence/timestamp, --timestamp).
    const { app: timestampApp } = await import('../../functions/v2/evidence-timestamp.js');
    const starter = await createAccount('starter');
    const res = await timestampApp.request('/api/v2/evidence/timestamp', json({ sha256_hash: hashes[0] }, { 'x-api-key': starter.apiKey }));
    assert.equal(res.status, 200);
    const answerFile = path.join(dir, 'retired-timestamp.json');
    const answer = (await res.json()) as Record<string, unknown>;
    await writeFile(answerFile, JSON.stringify(answer));
    const stamped = async () => {
      const out: string[] = [];
      const code = await evidenceCli(['verify', photoFile, '--timestamp', answerFile], { out: (l) => out.push(l), err: () => {} }, { EVIDENCE_TRUST_FILE: trustFile });
      return { code, out: out.join('\n') };
    };
    const now = new Date();
    await retireLeavesAt(new Date(now.getTime() - 3_600_000));
    const late = await stamped();
    assert.equal(late.code, 1, late.out);
    assert.match(late.out, /retired/);
    await retireLeavesAt(new Date(now.getTime() + 3_600_000));
    const inTime = await stamped();
    assert.equal(inTime.code, 0, inTime.out);
  });

  it('BouncyCastle accepts the record with the photo, and rejects it when one byte of the record or of the photo changes', async () => {
    const der = await recordOf(hashes[2] ?? '');
    const photo = photos[2] as Buffer;
    const good = await bouncyCastle(der, photo);
    console.log(good.out.trim().replace(/^/gm, '# BC: '));
    assert.ok(good.accepted, good.out);
    // One byte of the record: a hash of its reduced hash tree (the first list, right after the algorithm).
    const record = parseEvidenceRecord(der);
    const first = record.chains[0]?.[0]?.reducedHashtree?.[0]?.[0] as Uint8Array;
    const at = Buffer.from(der).indexOf(Buffer.from(first));
    const badRecord = Uint8Array.from(der);
    badRecord[at + 5] = (badRecord[at + 5] ?? 0) ^ 0x01;
    const r1 = await bouncyCastle(badRecord, photo);
    console.log(`# BC, one byte of the record changed: ${r1.out.trim().split('\n').pop()}`);
    assert.ok(!r1.accepted, r1.out);
    // One byte of the record's token (its signature value, near the end).
    const badToken = Uint8Array.from(der);
    badToken[der.length - 10] = (badToken[der.length - 10] ?? 0) ^ 0x01;
    const r2 = await bouncyCastle(badToken, photo);
    console.log(`# BC, one byte of the token's signature changed: ${r2.out.trim().split('\n').pop()}`);
    assert.ok(!r2.accepted, r2.out);
    // One byte of the photo.
    const badPhoto = Buffer.from(photo);
    badPhoto[3] = (badPhoto[3] ?? 0) ^ 0x01;
    const r3 = await bouncyCastle(der, badPhoto);
    console.log(`# BC, one byte of the photo changed: ${r3.out.trim().split('\n').pop()}`);
    assert.ok(!r3.accepted, r3.out);
  });

  it('years later: a timestamp renewal before the TSA certificate expires, a hash-tree renewal to SHA-512 from the owner\'s digest, then that chain\'s own timestamp renewal; both verifiers accept each record', async () => {
    const files = tsaFiles(getConfig().tsa.dir);
    const [tsaCertPem, rootKeyPkcs8Pem] = await Promise.all([readFile(files.tsaCert, 'utf8'), readFile(files.rootKey, 'utf8')]);
    const notAfter = parseCertificate(tsaCertPem).notAfter.value;
    // Inside the renewal margin of the TSA certificate that signed the group's token.
    const later = new Date(notAfter.getTime() - deps.settings.renewBeforeMs + 24 * 3600_000);
    // Not due yet the day before the margin: nothing is renewed, one index query finds nothing.
    const early = counting(deps.store);
    const none = await runArchivePass({ ...deps, store: early.store, clock: () => new Date(later.getTime() - 2 * 24 * 3600_000) });
    assert.equal(none.renewed, 0);
    assert.equal(early.calls.listRenewalsDue, 1);
    assert.equal(early.calls.getGroup ?? 0, 0, 'nothing due is read');

    // Not rotated in time: the TSA still signs with the certificate that nears its end. A renewal
    // would reach no further: nothing is stamped, the group waits a day (and the log says to rotate).
    const stale = counting(deps.store);
    const notRotated = await runArchivePass({ ...deps, store: stale.store, clock: () => later });
    assert.deepEqual({ renewed: notRotated.renewed, stamps: notRotated.stamps }, { renewed: 0, stamps: 0 });
    assert.ok((stale.calls.postponeRenewal ?? 0) >= 1);
    const dayAfter = new Date(later.getTime() + 2 * 24 * 3600_000);
    // Then the TSA's key is rotated (a new leaf under the same root); the TSA's clock is that day's.
    const leaf = await issueTsaCertificate({ rootCertPem: rootPem, rootKeyPkcs8Pem, now: new Date(later.getTime() - 3600_000) });
    const newTsa = await EmbeddedTsa.create({ rootCertPem: rootPem, ...leaf, policyOid: getConfig().tsa.policyOid, clock: () => dayAfter });
    const future: ArchiveDeps = { ...deps, stamper: createArchiveStamper(newTsa, 5000), clock: () => dayAfter };

    const counted = counting(deps.store);
    const report = await runArchivePass({ ...future, store: counted.store });
    assert.ok(report.renewed >= 1, JSON.stringify(report));
    assert.equal(report.stamps, 1, 'one TSA call renews every due group');
    console.log(`# renewal pass ${dayAfter.toISOString()}: ${report.renewed} group(s) renewed, ${report.stamps} TSA call, ${total(counted.calls)} store requests ${JSON.stringify(counted.calls)}`);
    // Renewed: not due again until the new certificate nears its end.
    const after = await runArchivePass(future);
    assert.equal(after.renewed, 0);

    const photo = photos[0] as Buffer;
    const renewed = await recordOf(hashes[0] ?? '');
    assert.equal(parseEvidenceRecord(renewed).chains[0]?.length, 2);
    const v = await ours(renewed, photo);
    assert.ok(v.ok, JSON.stringify(v.checks.map((c) => c.detail)));
    assert.equal(v.protectedUntil?.toISOString(), parseCertificate(leaf.tsaCertPem).notAfter.value.toISOString());
    // Each archive timestamp names the TSA that signed it: the subject's values as pkijs reads them.
    const subjectValues = (pem: string) => parseCertificate(pem).subject.typesAndValues.map((t) => String(t.value.valueBlock.value)).join(', ');
    assert.deepEqual(v.checks.map((c) => c.tsa), [subjectValues(tsaCertPem), subjectValues(leaf.tsaCertPem)]);
    const bc = await bouncyCastle(renewed, photo, dayAfter);
    console.log(`# BC, timestamp-renewed record (${renewed.length} bytes): ${bc.out.trim().split('\n').pop()}`);
    assert.ok(bc.accepted, bc.out);

    // Hash-tree renewal to SHA-512: the account that anchored the photo gives its SHA-512.
    const { app: digestApp } = await import('../../functions/v2/evidence-record-digest.js');
    const offer = (key: string, body: unknown) =>
      digestApp.request(`/api/v2/evidence/evidence-record/${hashes[0]}/digest`, json(body, { 'x-api-key': key }));
    const sha512 = Buffer.from(ersDigest('SHA-512', photo)).toString('hex');
    const notMine = await offer(otherApiKey, { algorithm: 'SHA-512', digest: sha512 });
    assert.equal(notMine.status, 404, 'another account may not offer a digest for this record');
    const wrongAlg = await offer(apiKey, { algorithm: 'SHA-384', digest: sha512.slice(0, 96) });
    assert.equal(wrongAlg.status, 400);
    assert.equal(((await wrongAlg.json()) as { code: string }).code, 'invalid_digest');
    const short = await offer(apiKey, { algorithm: 'SHA-512', digest: sha512.slice(2) });
    assert.equal(short.status, 400);
    const offered = await offer(apiKey, { algorithm: 'SHA-512', digest: sha512 });
    assert.equal(offered.status, 202, await offered.clone().text());
    const rehash = counting(deps.store);
    const rehashReport = await runArchivePass({ ...future, store: rehash.store });
    assert.equal(rehashReport.rehashed, 1, JSON.stringify(rehashReport));
    console.log(`# hash-tree renewal pass: ${rehashReport.rehashed} record, ${rehashReport.stamps} TSA call, ${total(rehash.calls)} store requests ${JSON.stringify(rehash.calls)}`);
    const again = await offer(apiKey, { algorithm: 'SHA-512', digest: sha512 });
    assert.equal(again.status, 409, 'used: the record was renewed to SHA-512 already');
    // Without a digest the record stays the SHA-256 chain (nothing an account offers changes it); with the photo's SHA-512, the renewed one.
    assert.deepEqual(Buffer.from(await recordOf(hashes[0] ?? '')), Buffer.from(renewed));
    const rehashed = await recordOf(hashes[0] ?? '', sha512);
    const parsed = parseEvidenceRecord(rehashed);
    assert.equal(parsed.chains.length, 2);
    assert.deepEqual(parsed.digestAlgorithms, ['SHA-256', 'SHA-512']);
    const v2 = await ours(rehashed, photo);
    assert.ok(v2.ok, JSON.stringify(v2.checks.map((c) => c.detail)));
    // With the image hash alone the SHA-512 chain cannot be checked: said, not passed.
    const hashOnly = await verifyEvidenceRecord(rehashed, { dataDigest: (alg) => (alg === 'SHA-256' ? Buffer.from(hashes[0] ?? '', 'hex') : undefined), rootsPem: [rootPem] });
    assert.ok(!hashOnly.ok);
    assert.match(hashOnly.checks.at(-1)?.detail ?? '', /SHA-512 hash is needed/);
    // The CLI computes the photo's SHA-512 from the file itself; with the hash alone it says what it needs.
    const rehashedFile = path.join(dir, 'rehashed.ers');
    const photoFile = path.join(dir, 'rehashed-photo.jpg');
    await Promise.all([writeFile(rehashedFile, rehashed), writeFile(photoFile, photo)]);
    const cliOut: string[] = [];
    const cliIo = { out: (l: string) => cliOut.push(l), err: () => {} };
    const cliEnv = { EVIDENCE_TRUST_FILE: path.join(dir, 'no-trust.json') };
    assert.equal(await evidenceCli(['verify', photoFile, '--evidence-record', rehashedFile, '--root', path.join(dir, 'root.pem')], cliIo, cliEnv), 0, cliOut.join('\n'));
    assert.match(cliOut.join('\n'), /holds .*chain 2\/2, archive timestamp 1 .*SHA-512 hash tree holds the hash of the data and earlier chains/);
    cliOut.length = 0;
    assert.equal(await evidenceCli(['verify', hashes[0] ?? '', '--evidence-record', rehashedFile, '--root', path.join(dir, 'root.pem')], cliIo, cliEnv), 1);
    assert.match(cliOut.join('\n'), /SHA-512 hash is needed \(give the file/);
    const bc2 = await bouncyCastle(rehashed, photo, dayAfter);
    console.log(`# BC, hash-tree-renewed record (${rehashed.length} bytes): ${bc2.out.trim().split('\n').pop()}`);
    assert.ok(bc2.accepted, bc2.out);
    const bc3 = await bouncyCastle(rehashed, photos[1] as Buffer, dayAfter);
    assert.ok(!bc3.accepted, bc3.out);

    // Later still, the own record's SHA-512 chain nears its TSA certificate's end: renewed on its own.
    const evenLater = new Date(parseCertificate(leaf.tsaCertPem).notAfter.value.getTime() - deps.settings.renewBeforeMs + 24 * 3600_000);
    const leaf3 = await issueTsaCertificate({ rootCertPem: rootPem, rootKeyPkcs8Pem, now: new Date(evenLater.getTime() - 3600_000) });
    const tsa3 = await EmbeddedTsa.create({ rootCertPem: rootPem, ...leaf3, policyOid: getConfig().tsa.policyOid, clock: () => evenLater });
    const third = await runArchivePass({ ...deps, stamper: createArchiveStamper(tsa3, 5000), clock: () => evenLater });
    assert.ok(third.renewed >= 2, `the group and the own record: ${JSON.stringify(third)}`);
    const twice = await recordOf(hashes[0] ?? '', sha512);
    assert.deepEqual(parseEvidenceRecord(twice).chains.map((c) => c.length), [2, 2]);
    assert.ok((await ours(twice, photo)).ok);
    const bc4 = await bouncyCastle(twice, photo, evenLater);
    console.log(`# BC, SHA-512 chain renewed ${evenLater.toISOString()} (${twice.length} bytes): ${bc4.out.trim().split('\n').pop()}`);
    assert.ok(bc4.accepted, bc4.out);

    // The other members of the group keep their group's record (renewed too).
    const other = await recordOf(hashes[1] ?? '');
    assert.ok((await ours(other, photos[1] as Buffer)).ok);
    assert.equal(createHash('sha256').update(photos[1] as Buffer).digest('hex'), hashes[1]);
  });

  it('the receipt links to the evidence record', async () => {
    const { app } = await import('../../functions/v2/evidence-receipt.js');
    const res = await app.request(`/api/v2/evidence/receipt/${hashes[1]}`);
    const receipt = (await res.json()) as { evidence_record: { url: string } };
    assert.ok(receipt.evidence_record.url.endsWith(`/api/v2/evidence/evidence-record/${hashes[1]}`));
    assert.ok(getArchiveStore());
  });
});
