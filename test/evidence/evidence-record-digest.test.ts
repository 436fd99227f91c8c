/**
 * The digest offers of RFC 4998 evidence records (POST /api/v2/evidence/evidence-record/{image_hash}/digest,
 * docs/decisions.md "Evidence records", docs/state-machines.md "The digest offer") on the real parts
 * (dynalite, Hardhat, the embedded TSA), checked with our verifier, the offline CLI and BouncyCastle
 * 1.72 (test/interop/ErsCheck.java):
 * - a wrong SHA-512 digest (the owner's slip, or anyone's with the owner's key) makes a hash-tree
 *   renewal no verifier accepts with the photo; the owner corrects it (202, not 409) and the next
 *   pass redoes the renewal from the last good chain (the group's SHA-256 chain), which the record
 *   then verifies with the right file. The record served without a digest never stops verifying;
 *   the one served for a digest is the one that digest satisfies.
 * - a correction before the offer is used: the latest digest counts, one renewal is made;
 * - a second hash-tree renewal (SHA-384, then SHA-512) from a wrong digest, redone over the chains
 *   before it as stored;
 * - a pass that dies after storing the renewal and before recording the offer used: the next pass
 *   finds the record holds the digest and only records it (no second TSA request);
 * - the endpoint checks its body as strictly as the rest of the API (unknown fields, malformed
 *   digests: 400 problem+json, whatever ARCHIVE_HASH_ALGORITHM is).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { type ErsHash, encodeArchiveTimeStampSequence, ersDigest, parseEvidenceRecord } from '../../lib/crypto/ers.js';
import { verifyEvidenceRecord } from '../../lib/crypto/ers-verify.js';
import { tsaFiles } from '../../lib/crypto/tsa/files.js';
import { getArchiveDeps } from '../../lib/deps/archive-job.js';
import { resetCoreDeps } from '../../lib/deps/core.js';
import { type ArchiveDeps, runArchivePass } from '../../lib/evidence/archive.js';
import type { ArchiveStore } from '../../lib/evidence/archive-store.js';
import { onlyMine } from '../support/archive.js';
import { createAccount, Device, json } from '../support/client.js';
import { bouncyCastleErsCheck, compiledErsCheck } from '../support/ers-check.js';
import { counting, evidenceVerify, total } from '../support/ers-checks.js';
import { useStack } from '../support/stack.js';

let dir: string;
let rootPem: string;
let rootFile: string;
let apiKey: string;
let deps: ArchiveDeps;
const mine = new Set<string>();
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

const sha512Of = (bytes: Uint8Array) => Buffer.from(ersDigest('SHA-512', bytes)).toString('hex');

async function offer(imageHash: string, body: unknown, key = apiKey): Promise<Response> {
  const { app } = await import('../../functions/v2/evidence-record-digest.js');
  return app.request(`/api/v2/evidence/evidence-record/${imageHash}/digest`, json(body, { 'x-api-key': key }));
}

/** The record as GET /api/v2/evidence/evidence-record/{image_hash} serves it, without a digest or for one. */
async function fetchRecord(imageHash: string, query = ''): Promise<Response> {
  const { app } = await import('../../functions/v2/evidence-record.js');
  return app.request(`/api/v2/evidence/evidence-record/${imageHash}${query}`);
}

async function recordOf(imageHash: string, sha512?: string): Promise<Uint8Array> {
  const res = await fetchRecord(imageHash, sha512 ? `?sha512=${sha512}` : '');
  assert.equal(res.status, 200, await res.clone().text());
  return new Uint8Array(await res.arrayBuffer());
}

function ours(record: Uint8Array, photo: Uint8Array) {
  return verifyEvidenceRecord(record, { dataDigest: (alg: ErsHash) => ersDigest(alg, photo), rootsPem: [rootPem] });
}

/** `evidence verify <photo file> --evidence-record <record file> --root root.pem`, as a holder runs it. */
async function cli(record: Uint8Array, photo: Uint8Array, label: string): Promise<{ code: number; out: string }> {
  const recordFile = path.join(dir, `${label}.ers`);
  const photoFile = path.join(dir, `${label}.jpg`);
  await Promise.all([writeFile(recordFile, record), writeFile(photoFile, photo)]);
  return evidenceVerify(dir, photoFile, '--evidence-record', recordFile, '--root', rootFile);
}

/**
 * The public record (no digest) verifies with the photo, by our verifier and the CLI (and by
 * BouncyCastle when asked): what must hold at every step, whatever digests were offered.
 */
async function publicRecordVerifies(imageHash: string, step: string, withBouncyCastle = false): Promise<Uint8Array> {
  const photo = photos.get(imageHash) as Buffer;
  const der = await recordOf(imageHash);
  const v = await ours(der, photo);
  assert.ok(v.ok, `${step}: ${JSON.stringify(v.checks.map((c) => c.detail))}`);
  const byCli = await cli(der, photo, `public-${step.replace(/\W+/g, '-')}`);
  assert.equal(byCli.code, 0, `${step}: ${byCli.out}`);
  if (withBouncyCastle) {
    const bc = await bouncyCastleErsCheck(der, photo, rootPem);
    assert.ok(bc.accepted, `${step}: ${bc.out}`);
  }
  return der;
}

async function offerState(imageHash: string) {
  return deps.store.getDigestOffer(imageHash, 'SHA-512');
}

before(async () => {
  const env = await useStack();
  // This file's service renews hash trees to SHA-512 (ARCHIVE_HASH_ALGORITHM): owners may offer digests.
  process.env.ARCHIVE_HASH_ALGORITHM = 'SHA-512';
  resetCoreDeps();
  void compiledErsCheck();
  dir = await mkdtemp(path.join(os.tmpdir(), 'ers-digest-'));
  rootPem = await readFile(tsaFiles(path.join(env.DATA_DIR ?? '', 'tsa')).rootCert, 'utf8');
  rootFile = path.join(dir, 'root.pem');
  await writeFile(rootFile, rootPem);
  apiKey = (await createAccount('pro')).apiKey;
  const built = await getArchiveDeps();
  deps = { ...built, store: onlyMine(built.store, mine), settings: { ...built.settings, groupAfterMs: 0 } };
});

describe('the digest offer of an evidence record', () => {
  it('checks its body as strictly as the rest of the API: unknown fields and malformed digests get 400 problem+json, even with no renewal configured', async () => {
    const h = await anchor('strict');
    const good = sha512Of(photos.get(h) as Buffer);
    const refused = async (body: unknown, what: string, expected = 400) => {
      const res = await offer(h, body);
      assert.equal(res.status, expected, `${what}: ${await res.clone().text()}`);
      assert.equal(res.headers.get('content-type'), 'application/problem+json', what);
      const problem = (await res.json()) as { type: string; title: string; status: number; detail: string; code: string };
      assert.equal(problem.status, expected, what);
      assert.match(problem.type, /^https?:\/\/.+\/problems\/[a-z_]+$/, what);
      assert.ok(problem.title && problem.detail, what);
      return problem;
    };
    for (const configured of ['SHA-512', 'SHA-256']) {
      process.env.ARCHIVE_HASH_ALGORITHM = configured;
      resetCoreDeps();
      const unknown = await refused({ algorithm: 'SHA-512', digest: good, extra: 'x' }, `${configured}: an unknown field`);
      assert.equal(unknown.code, 'invalid_request');
      assert.match(unknown.detail, /extra/);
      for (const [what, body] of [
        ['a digest that is not hex', { algorithm: 'SHA-512', digest: 'z'.repeat(128) }],
        ['a digest one byte short', { algorithm: 'SHA-512', digest: good.slice(2) }],
        ['a digest one byte long', { algorithm: 'SHA-512', digest: `${good}ab` }],
        ['a SHA-384 digest named SHA-512', { algorithm: 'SHA-512', digest: good.slice(0, 96) }],
        ['a SHA-512 digest named SHA-384', { algorithm: 'SHA-384', digest: good }],
        ['an empty digest', { algorithm: 'SHA-512', digest: '' }],
        ['no digest', { algorithm: 'SHA-512' }],
        ['no algorithm', { digest: good }],
        ['an algorithm the API does not know', { algorithm: 'MD5', digest: good.slice(0, 32) }],
        ['a digest that is a number', { algorithm: 'SHA-512', digest: 12 }],
        ['an array', [{ algorithm: 'SHA-512', digest: good }]],
      ] as const) {
        const p = await refused(body, `${configured}: ${what}`);
        assert.equal(p.code, 'invalid_request', `${configured}: ${what}`);
      }
    }
    // Well formed: with no renewal configured 409, with SHA-512 configured another algorithm is 400 invalid_digest.
    process.env.ARCHIVE_HASH_ALGORITHM = 'SHA-256';
    resetCoreDeps();
    assert.equal((await refused({ algorithm: 'SHA-512', digest: good }, 'no renewal configured', 409)).code, 'hash_renewal_not_due');
    process.env.ARCHIVE_HASH_ALGORITHM = 'SHA-512';
    resetCoreDeps();
    assert.equal((await refused({ algorithm: 'SHA-384', digest: good.slice(0, 96) }, 'another algorithm than the configured one')).code, 'invalid_digest');
    const { app } = await import('../../functions/v2/evidence-record-digest.js');
    const badPath = await app.request('/api/v2/evidence/evidence-record/xyz/digest', json({ algorithm: 'SHA-512', digest: good }, { 'x-api-key': apiKey }));
    assert.equal(badPath.status, 400);
    assert.equal(badPath.headers.get('content-type'), 'application/problem+json');
    // None of them stored anything.
    assert.equal(await offerState(h), undefined);
    // The record's own reads take a digest as strictly: a malformed one, an unknown parameter, or two digests: 400.
    for (const query of ['?sha512=zz', `?sha512=${good.slice(2)}`, `?sha384=${good}`, '?extra=1', `?sha512=${good}&sha384=${good.slice(0, 96)}`]) {
      const res = await fetchRecord(h, query);
      assert.equal(res.status, 400, `${query}: ${await res.clone().text()}`);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
    }
  });

  it('a wrong SHA-512 digest, used by a pass, is corrected by the owner and the renewal redone from the last good chain; the public record never stops verifying (our verifier, the CLI, BouncyCastle)', async () => {
    const h = await anchor('a photo whose owner slips');
    const photo = photos.get(h) as Buffer;
    const right = sha512Of(photo);
    const wrong = sha512Of(Buffer.concat([photo, Buffer.from('\n')]));
    // The group: the record is the SHA-256 chain, the last good one.
    assert.equal((await runArchivePass(deps)).groups, 1);
    const lastGood = await publicRecordVerifies(h, 'grouped', true);
    assert.equal(parseEvidenceRecord(lastGood).chains.length, 1);

    // The slip: a wrong digest is taken (the service cannot tell) and used by the next pass.
    const slip = await offer(h, { algorithm: 'SHA-512', digest: wrong });
    assert.equal(slip.status, 202, await slip.clone().text());
    const used = counting(deps.store);
    const slipPass = await runArchivePass({ ...deps, store: used.store });
    assert.equal(slipPass.rehashed, 1, JSON.stringify(slipPass));
    console.log(`# hash-tree renewal from the wrong digest: ${slipPass.stamps} TSA call, ${total(used.calls)} store requests ${JSON.stringify(used.calls)}`);
    assert.equal((await offerState(h))?.state, 'used');

    // The public record still verifies with the photo: it is the last good chain, untouched.
    const afterSlip = await publicRecordVerifies(h, 'after the slip', true);
    assert.deepEqual(Buffer.from(afterSlip), Buffer.from(lastGood), 'the record served without a digest is the last good one');
    // Asked with the right digest: no renewal holds it yet, so the last good record (which the photo satisfies).
    assert.deepEqual(Buffer.from(await recordOf(h, right)), Buffer.from(lastGood));
    // Asked with the wrong digest: the renewal made from it, which the photo does not satisfy.
    const fromWrong = await recordOf(h, wrong);
    assert.deepEqual(parseEvidenceRecord(fromWrong).digestAlgorithms, ['SHA-256', 'SHA-512']);
    const wrongByCli = await cli(fromWrong, photo, 'from-wrong');
    assert.equal(wrongByCli.code, 1, wrongByCli.out);
    assert.match(wrongByCli.out, /first hash list does not hold the hash of the data and earlier chains/);
    assert.ok(!(await bouncyCastleErsCheck(fromWrong, photo, rootPem)).accepted);

    // The correction: the right digest is taken (202, not 409) and the next pass redoes the renewal.
    const correction = await offer(h, { algorithm: 'SHA-512', digest: right });
    assert.equal(correction.status, 202, await correction.clone().text());
    assert.equal(((await correction.json()) as { state: string }).state, 'offered');
    await publicRecordVerifies(h, 'correction offered');
    const redo = counting(deps.store);
    const redoPass = await runArchivePass({ ...deps, store: redo.store });
    assert.equal(redoPass.rehashed, 1, JSON.stringify(redoPass));
    assert.equal(redoPass.stamps, 1);
    console.log(`# hash-tree renewal redone from the corrected digest: ${redoPass.stamps} TSA call, ${total(redo.calls)} store requests ${JSON.stringify(redo.calls)}`);
    const offered = await offerState(h);
    assert.equal(offered?.state, 'used');
    assert.equal(Buffer.from(offered?.used_digest ?? []).toString('hex'), right);

    // The record for the right digest: the last good chain, then the SHA-512 chain made from the right digest.
    const corrected = await recordOf(h, right);
    const parsed = parseEvidenceRecord(corrected);
    assert.deepEqual(parsed.digestAlgorithms, ['SHA-256', 'SHA-512']);
    assert.deepEqual(Buffer.from(encodeArchiveTimeStampSequence(parsed.chains.slice(0, 1))), Buffer.from(encodeArchiveTimeStampSequence(parseEvidenceRecord(lastGood).chains)), 'redone from the last good chain');
    const v = await ours(corrected, photo);
    assert.ok(v.ok, JSON.stringify(v.checks.map((c) => c.detail)));
    const byCli = await cli(corrected, photo, 'corrected');
    console.log(byCli.out.replace(/^/gm, '# CLI: '));
    assert.equal(byCli.code, 0, byCli.out);
    assert.match(byCli.out, /holds .*chain 2\/2, archive timestamp 1 .*SHA-512 hash tree holds the hash of the data and earlier chains/);
    const bc = await bouncyCastleErsCheck(corrected, photo, rootPem);
    console.log(`# BC, the corrected record (${corrected.length} bytes): ${bc.out.trim().split('\n').pop()}`);
    assert.ok(bc.accepted, bc.out);
    const other = Buffer.from(photo);
    other[0] = (other[0] ?? 0) ^ 1;
    assert.ok(!(await bouncyCastleErsCheck(corrected, other, rootPem)).accepted, 'another photo is refused');
    // The renewal from the wrong digest is gone: asked with it, the last good record.
    assert.deepEqual(Buffer.from(await recordOf(h, wrong)), Buffer.from(lastGood));
    await publicRecordVerifies(h, 'corrected', true);

    // The same digest again: the record was renewed with it already.
    const again = await offer(h, { algorithm: 'SHA-512', digest: right });
    assert.equal(again.status, 409);
    assert.equal(((await again.json()) as { code: string }).code, 'hash_renewal_not_due');

    // A slip after the good renewal (anyone with the owner's key): the public record keeps verifying,
    // the holder of the photo gets the last good record meanwhile, and the owner redoes it again.
    const second = sha512Of(Buffer.from('not the photo'));
    assert.equal((await offer(h, { algorithm: 'SHA-512', digest: second })).status, 202);
    assert.equal((await runArchivePass(deps)).rehashed, 1);
    await publicRecordVerifies(h, 'second slip');
    const meanwhile = await recordOf(h, right);
    assert.deepEqual(Buffer.from(meanwhile), Buffer.from(lastGood));
    assert.equal((await cli(meanwhile, photo, 'meanwhile')).code, 0);
    assert.equal((await offer(h, { algorithm: 'SHA-512', digest: right })).status, 202);
    assert.equal((await runArchivePass(deps)).rehashed, 1);
    const redone = await recordOf(h, right);
    assert.equal(parseEvidenceRecord(redone).chains.length, 2);
    assert.equal((await cli(redone, photo, 'redone')).code, 0);
    assert.ok((await bouncyCastleErsCheck(redone, photo, rootPem)).accepted);
    await publicRecordVerifies(h, 'redone');
  });

  it('corrected before a pass used it: the latest digest counts, one renewal is made, and a correction withdrawn before the redo makes none', async () => {
    const h = await anchor('a photo corrected in time');
    const photo = photos.get(h) as Buffer;
    const right = sha512Of(photo);
    await runArchivePass(deps);
    assert.equal((await offer(h, { algorithm: 'SHA-512', digest: sha512Of(Buffer.from('wrong')) })).status, 202);
    assert.equal((await offer(h, { algorithm: 'SHA-512', digest: right })).status, 202);
    const report = await runArchivePass(deps);
    assert.deepEqual({ rehashed: report.rehashed, stamps: report.stamps }, { rehashed: 1, stamps: 1 });
    const der = await recordOf(h, right);
    assert.equal(parseEvidenceRecord(der).chains.length, 2);
    assert.ok((await ours(der, photo)).ok);
    assert.equal((await cli(der, photo, 'in-time')).code, 0);
    assert.ok((await bouncyCastleErsCheck(der, photo, rootPem)).accepted);

    // A wrong digest offered after the good renewal, then the right one again before any pass: nothing to redo.
    assert.equal((await offer(h, { algorithm: 'SHA-512', digest: sha512Of(Buffer.from('slip')) })).status, 202);
    assert.equal((await offer(h, { algorithm: 'SHA-512', digest: right })).status, 202);
    const counted = counting(deps.store);
    const withdrawn = await runArchivePass({ ...deps, store: counted.store });
    assert.deepEqual({ rehashed: withdrawn.rehashed, stamps: withdrawn.stamps }, { rehashed: 0, stamps: 0 });
    assert.equal(counted.calls.putOwnRecord ?? 0, 0);
    assert.deepEqual(Buffer.from(await recordOf(h, right)), Buffer.from(der), 'the good renewal stands');
    const state = await offerState(h);
    assert.equal(state?.state, 'used');
    assert.equal(Buffer.from(state?.digest ?? []).toString('hex'), right);
    assert.equal((await offer(h, { algorithm: 'SHA-512', digest: right })).status, 409);
    // Nothing is due any more: an idle pass reads two indexes.
    const idle = counting(deps.store);
    await runArchivePass({ ...deps, store: idle.store });
    assert.deepEqual(idle.calls, { listUngrouped: 1, listRenewalsDue: 1 });
  });

  it('a second hash-tree renewal (SHA-384, then SHA-512) made from a wrong digest is redone over the chains before it as stored', async () => {
    const h = await anchor('two algorithm moves');
    const photo = photos.get(h) as Buffer;
    const sha384 = Buffer.from(ersDigest('SHA-384', photo)).toString('hex');
    const right = sha512Of(photo);
    const configure = (alg: 'SHA-384' | 'SHA-512'): ArchiveDeps => {
      process.env.ARCHIVE_HASH_ALGORITHM = alg;
      resetCoreDeps();
      return { ...deps, settings: { ...deps.settings, hashAlgorithm: alg } };
    };
    try {
      await runArchivePass(deps);
      const to384 = configure('SHA-384');
      assert.equal((await offer(h, { algorithm: 'SHA-384', digest: sha384 })).status, 202);
      assert.equal((await runArchivePass(to384)).rehashed, 1);
      const to512 = configure('SHA-512');
      assert.equal((await offer(h, { algorithm: 'SHA-512', digest: sha512Of(Buffer.from('a slip')) })).status, 202);
      assert.equal((await runArchivePass(to512)).rehashed, 1);
      await publicRecordVerifies(h, 'after a slip on top of a SHA-384 renewal');
      assert.equal((await offer(h, { algorithm: 'SHA-512', digest: right })).status, 202);
      assert.equal((await runArchivePass(to512)).rehashed, 1);
      const der = await recordOf(h, right);
      const record = parseEvidenceRecord(der);
      assert.deepEqual(record.digestAlgorithms, ['SHA-256', 'SHA-384', 'SHA-512']);
      assert.deepEqual(record.chains.map((c) => c.length), [1, 1, 1]);
      assert.ok((await ours(der, photo)).ok);
      const byCli = await cli(der, photo, 'three-chains');
      assert.equal(byCli.code, 0, byCli.out);
      assert.match(byCli.out, /chain 3\/3, archive timestamp 1 .*SHA-512 hash tree holds the hash of the data and earlier chains/);
      const bc = await bouncyCastleErsCheck(der, photo, rootPem);
      console.log(`# BC, SHA-256 → SHA-384 → SHA-512 (corrected) record (${der.length} bytes): ${bc.out.trim().split('\n').pop()}`);
      assert.ok(bc.accepted, bc.out);
      await publicRecordVerifies(h, 'second renewal corrected');
    } finally {
      configure('SHA-512');
    }
  });

  it('a pass that dies after storing the renewal and before recording the offer used: the next pass finds the record holds the digest and records it, with no second timestamp', async () => {
    const h = await anchor('a pass that dies');
    const photo = photos.get(h) as Buffer;
    const right = sha512Of(photo);
    await runArchivePass(deps);
    assert.equal((await offer(h, { algorithm: 'SHA-512', digest: right })).status, 202);
    const dies: ArchiveStore = new Proxy(deps.store, {
      get(target, prop, receiver) {
        if (prop === 'markDigestUsed') return () => Promise.reject(new Error('killed before the offer was recorded used'));
        const value = Reflect.get(target, prop, receiver) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    await assert.rejects(runArchivePass({ ...deps, store: dies }), /killed before/);
    assert.equal((await offerState(h))?.state, 'offered');
    const counted = counting(deps.store);
    const next = await runArchivePass({ ...deps, store: counted.store });
    assert.deepEqual({ rehashed: next.rehashed, stamps: next.stamps }, { rehashed: 0, stamps: 0 });
    assert.equal(counted.calls.putOwnRecord ?? 0, 0);
    assert.equal((await offerState(h))?.state, 'used');
    const der = await recordOf(h, right);
    assert.equal(parseEvidenceRecord(der).chains.length, 2);
    assert.ok((await ours(der, photo)).ok);
    await publicRecordVerifies(h, 'after the crash');
  });
});
