import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { useStack } from '../support/stack.js';
import { onlyMine } from '../support/archive.js';
import { createAccount, Device, json } from '../support/client.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { ersDigest } from '../../lib/crypto/ers.js';
import { verifyEvidenceRecord } from '../../lib/crypto/ers-verify.js';
import { tsaFiles } from '../../lib/crypto/tsa/files.js';
import { getArchiveDeps } from '../../lib/deps/archive-job.js';
import { type ArchiveDeps, evidenceRecordOf, runArchivePass } from '../../lib/evidence/archive.js';
import type { ArchiveStore } from '../../lib/evidence/archive-store.js';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { getConfig, getDb } from '../../lib/deps/core.js';

/**
 * The archive job's crash points: a pass that dies at its k-th store call, before the call or
 * right after it landed (every k of a grouping pass), leaves nothing that blocks the next pass:
 * the next clean pass gives every waiting hash a record that verifies against its photo, no
 * member names a group that is not stored, and a group found again by its root is not stamped
 * a second time.
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

describe('the archive job after a crash at each store call of a grouping pass', () => {
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
