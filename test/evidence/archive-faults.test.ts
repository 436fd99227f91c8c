import assert from 'node:assert/strict';
import { X509Certificate, createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { useStack } from '../support/stack.js';
import { onlyMine } from '../support/archive.js';
import { createAccount, Device, json } from '../support/client.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { ersDigest, parseEvidenceRecord } from '../../lib/crypto/ers.js';
import { createArchiveStamper } from '../../lib/crypto/ers-stamper.js';
import { verifyEvidenceRecord } from '../../lib/crypto/ers-verify.js';
import { tsaFiles } from '../../lib/crypto/tsa/files.js';
import { EmbeddedTsa, issueTsaCertificate, pemToDer, timestampSigner } from '../../lib/crypto/tsa/index.js';
import { getArchiveDeps } from '../../lib/deps/archive-job.js';
import { type ArchiveDeps, runArchivePass } from '../../lib/evidence/archive.js';
import { evidenceRecordOf } from '../../lib/evidence/archive-record.js';
import type { ArchiveStore } from '../../lib/evidence/archive-store.js';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { getConfig, getDb } from '../../lib/deps/core.js';

/**
 * The archive job's crash points: a pass that dies at its k-th store call, before the call or
 * right after it landed (every k of a grouping pass), leaves nothing that blocks the next pass:
 * the next clean pass gives every waiting hash a record that verifies against its photo, no
 * member names a group that is not stored, and a group found again by its root is not stamped
 * a second time. The same for every k of a pass that renews the records under a retired TSA
 * leaf: the clean passes after it renew each such record exactly once, and the sweep ends.
 */

class Crash extends Error {}

/** The store, dying at its k-th call: before the call, or after it landed. */
function dyingAt(store: ArchiveStore, k: number, when: 'before' | 'after'): { store: ArchiveStore; calls: () => number } {
  let n = 0;
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const mine = ++n;
        if (mine === k && when === 'before') throw new Crash(`died before call ${k} (${String(prop)})`);
        const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (mine === k && when === 'after') throw new Crash(`died after call ${k} (${String(prop)})`);
        return result;
      };
    },
  });
  return { store: proxy, calls: () => n };
}

let apiKey: string;
let rootPem: string;
let deps: ArchiveDeps;
/** The hashes this file anchored: its passes group only these (test/support/archive.ts). */
const mine = new Set<string>();

async function anchorPhotos(count: number): Promise<{ hash: string; photo: Buffer }[]> {
  const { app } = await import('../../functions/v2/evidence-anchor.js');
  const out: { hash: string; photo: Buffer }[] = [];
  for (let i = 0; i < count; i++) {
    const photo = Buffer.from(`crash point photo ${i} ${Math.random()}`);
    const body = new Device().next(sha256Hex(photo));
    const res = await app.request('/api/v2/evidence/anchor', json(body, { 'x-api-key': apiKey }));
    assert.equal(res.status, 200, await res.clone().text());
    out.push({ hash: body.sha256_hash, photo });
    mine.add(body.sha256_hash);
  }
  return out;
}

before(async () => {
  const env = await useStack();
  apiKey = (await createAccount('pro')).apiKey;
  rootPem = await readFile(tsaFiles(path.join(env.DATA_DIR ?? '', 'tsa')).rootCert, 'utf8');
  const built = await getArchiveDeps();
  deps = { ...built, store: onlyMine(built.store, mine), settings: { ...built.settings, groupAfterMs: 0 } };
});

describe('the archive job after a crash at each store call of a grouping or a retirement pass', () => {
  it('a clean pass first: how many calls a grouping pass of 3 hashes makes', async () => {
    await anchorPhotos(3);
    const counted = dyingAt(deps.store, Number.MAX_SAFE_INTEGER, 'before');
    await runArchivePass({ ...deps, store: counted.store });
    assert.ok(counted.calls() >= 7, `${counted.calls()} calls`);
  });

  for (const when of ['before', 'after'] as const) {
    it(`dying ${when} each call k, then one clean pass: every record verifies, at most one group stamped per set of hashes`, async () => {
      // listUngrouped, getGroup, putGroup, join ×3, listRenewalsDue: k = 1..7.
      for (let k = 1; k <= 7; k++) {
        const photos = await anchorPhotos(3);
        let stamps = 0;
        const stamper = { ...deps.stamper, stamp: async (...a: Parameters<ArchiveDeps['stamper']['stamp']>) => (stamps++, deps.stamper.stamp(...a)) };
        const dying = dyingAt(deps.store, k, when);
        await assert.rejects(runArchivePass({ ...deps, stamper, store: dying.store }), Crash, `k=${k}`);
        if (k === 7) assert.equal(stamps, 1);
        const clean = await runArchivePass({ ...deps, stamper });
        assert.ok(stamps <= 2, `k=${k} ${when}: ${stamps} stamps`);
        // Dying right after the group was stored, before any member joined: the next pass reads the
        // same hashes, finds the group by its root and stamps nothing again. (Dying during the
        // joins, the members that joined stay; the others get a new group of their own.)
        if (when === 'after' && k === 3) assert.equal(stamps, 1, `k=${k} ${when}: the group was found by its root, not stamped again`);
        for (const { hash, photo } of photos) {
          const { der } = await evidenceRecordOf(deps.store, hash);
          const v = await verifyEvidenceRecord(der, { dataDigest: (alg) => ersDigest(alg, photo), rootsPem: [rootPem] });
          assert.ok(v.ok, `k=${k} ${when}: ${hash}: ${JSON.stringify(v.checks.map((c) => c.detail))}`);
        }
        assert.equal(clean.waiting, 0);
      }
    });
  }

  it('a retirement pass dying before or after each store call, then clean passes: every record under the retired leaf is renewed once, under the new leaf, and verifies', async () => {
    const rootKeyPkcs8Pem = await readFile(tsaFiles(getConfig().tsa.dir).rootKey, 'utf8');
    const policyOid = getConfig().tsa.policyOid;
    const stamperOf = async (leaf: { tsaCertPem: string; tsaKeyPkcs8Pem: string }) =>
      createArchiveStamper(await EmbeddedTsa.create({ rootCertPem: rootPem, ...leaf, policyOid }), 5000);
    let round = 0;
    /**
     * Two hashes grouped under a leaf of their own, which is then retired: a leaf issued `round`
     * days back, so that its records come first on the renewal_due index, before every earlier
     * round's (renewed under leaves issued now) and every other file's.
     */
    const retiredRound = async () => {
      round++;
      const old = await issueTsaCertificate({ rootCertPem: rootPem, rootKeyPkcs8Pem, now: new Date(Date.now() - round * 24 * 3600_000) });
      const photos = await anchorPhotos(2);
      const grouped = await runArchivePass({ ...deps, stamper: await stamperOf(old), retiredTsa: [] });
      assert.equal(grouped.groups, 1);
      const oldSha = createHash('sha256').update(pemToDer(old.tsaCertPem)).digest('hex');
      const renewing: ArchiveDeps = {
        ...deps,
        stamper: await stamperOf(await issueTsaCertificate({ rootCertPem: rootPem, rootKeyPkcs8Pem })),
        retiredTsa: [{ sha256: oldSha, notAfter: new X509Certificate(old.tsaCertPem).validToDate, retiredAt: new Date() }],
      };
      return { photos, oldSha, renewing };
    };
    const settle = async (renewing: ArchiveDeps) => {
      for (let i = 0; i < 20; i++) {
        const r = await runArchivePass(renewing);
        if (!r.retirement || r.retirement.swept) return;
      }
      assert.fail('the sweep did not end');
    };
    const check = async (label: string, photos: { hash: string; photo: Buffer }[], oldSha: string) => {
      for (const { hash, photo } of photos) {
        const { der } = await evidenceRecordOf(deps.store, hash);
        const chain = parseEvidenceRecord(der).chains[0] ?? [];
        const signers = chain.map((a) => timestampSigner(a.timeStamp)?.sha256);
        assert.equal(signers.length, 2, `${label}: ${hash} renewed once, not ${signers.length - 1} times`);
        assert.equal(signers[0], oldSha);
        assert.notEqual(signers[1], oldSha, `${label}: renewed under the new leaf`);
        const v = await verifyEvidenceRecord(der, { dataDigest: (alg) => ersDigest(alg, photo), rootsPem: [rootPem] });
        assert.ok(v.ok, `${label}: ${hash}: ${JSON.stringify(v.checks.map((c) => c.detail))}`);
      }
    };

    // A clean retirement pass first: how many store calls it makes.
    const first = await retiredRound();
    const counted = dyingAt(first.renewing.store, Number.MAX_SAFE_INTEGER, 'before');
    const clean = await runArchivePass({ ...first.renewing, store: counted.store });
    assert.equal(clean.renewed, 1);
    assert.equal(clean.retirement?.swept, true);
    const calls = counted.calls();
    // listUngrouped, listRenewalsDue, getRetirementSweep, listRenewalsUpTo, getGroup, appendGroupRenewal, moveRetirementSweep.
    assert.equal(calls, 7);
    await check('clean', first.photos, first.oldSha);

    for (const when of ['before', 'after'] as const) {
      for (let k = 1; k <= calls; k++) {
        const { photos, oldSha, renewing } = await retiredRound();
        const dying = dyingAt(renewing.store, k, when);
        await assert.rejects(runArchivePass({ ...renewing, store: dying.store }), Crash, `k=${k} ${when}`);
        await settle(renewing);
        await check(`k=${k} ${when}`, photos, oldSha);
        assert.equal((await renewing.store.getRetirementSweep(oldSha))?.state, 'swept', `k=${k} ${when}: the sweep ends`);
      }
    }
  });

  it('an anchor on no index (made before the archive, or its entry lost to a kill) is put back by the sweep and grouped in the same pass', async () => {
    const [old] = await anchorPhotos(1);
    assert.ok(old);
    await getDb().send(new UpdateCommand({ TableName: getConfig().tables.evidence, Key: { image_hash: old.hash }, UpdateExpression: 'REMOVE archive_shard' }));
    const without = await runArchivePass(deps);
    await assert.rejects(evidenceRecordOf(deps.store, old.hash), /evidence record is made within/, `${JSON.stringify(without)}: not on the index, not grouped`);
    let report;
    for (let restart = true; ; restart = false) {
      report = await runArchivePass(deps, { sweep: { items: 1000, restart } });
      if (report.swept?.complete) break;
    }
    const { der } = await evidenceRecordOf(deps.store, old.hash);
    const v = await verifyEvidenceRecord(der, { dataDigest: (alg) => ersDigest(alg, old.photo), rootsPem: [rootPem] });
    assert.ok(v.ok);
  });
});
