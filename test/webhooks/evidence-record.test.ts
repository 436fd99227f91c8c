/**
 * `evidence.record` (docs/webhooks.md "Events"): when an anchored hash joins its first RFC 4998
 * archive group, its evidence record is ready and the account's endpoint gets the event with its
 * URL. On the test stack's real parts: the anchor, the archive job's pass (lib/evidence/archive.ts
 * runArchivePass, grouping only this file's hashes: test/support/archive.ts), the change feed with
 * the webhooks' outbox, the delivery worker, and a receiver verifying with `standardwebhooks`.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { app as createApp } from '../../functions/v2/account-webhooks-create.js';
import { app as anchorApp } from '../../functions/v2/evidence-anchor.js';
import { app as recordApp } from '../../functions/v2/evidence-record.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { ersDigest } from '../../lib/crypto/ers.js';
import { verifyEvidenceRecord } from '../../lib/crypto/ers-verify.js';
import { tsaFiles } from '../../lib/crypto/tsa/files.js';
import { getArchiveDeps } from '../../lib/deps/archive-job.js';
import { createWebhookDispatcher } from '../../lib/deps/webhooks.js';
import { runArchivePass } from '../../lib/evidence/archive.js';
import { onlyMine } from '../support/archive.js';
import { drainChangeFeed } from '../support/change-feed.js';
import { createAccount, Device, json } from '../support/client.js';
import { useStack } from '../support/stack.js';
import { waitFor } from '../support/wait.js';
import { Receiver } from './support.js';

const env = await useStack();
const receivers: Receiver[] = [];
after(() => Promise.all(receivers.map((r) => r.stop())));

describe('evidence.record', () => {
  it('the first evidence record of an anchored hash is pushed once, with its URL, and verifies with standardwebhooks', async () => {
    const account = await createAccount('pro');
    const r = new Receiver();
    receivers.push(r);
    const url = await r.start();
    const made = await createApp.request('/api/v2/account/webhooks', json({ url, events: ['evidence.record'] }, { authorization: `Bearer ${account.token}` }));
    assert.equal(made.status, 200);
    r.secret = ((await made.json()) as { secret: string }).secret;

    const photo = Buffer.from(`a photo for its evidence record ${Math.random()}`);
    const body = new Device().next(sha256Hex(photo));
    const anchored = await anchorApp.request('/api/v2/evidence/anchor', json(body, { 'x-api-key': account.apiKey }));
    assert.equal(anchored.status, 200, await anchored.clone().text());
    const hash = body.sha256_hash;

    // Anchored, not yet in an archive group: the feed and the worker make no evidence.record.
    const worker = createWebhookDispatcher();
    const work = async () => {
      await drainChangeFeed();
      await worker.tick();
      await worker.idle();
    };
    await work();
    assert.equal(r.received.length, 0, 'subscribed to evidence.record only: nothing before the record exists');

    // The archive job groups the hash (RFC 4998: its first archive timestamp): the record is ready.
    const built = await getArchiveDeps();
    const deps = { ...built, store: onlyMine(built.store, new Set([hash])), settings: { ...built.settings, groupAfterMs: 0 } };
    const report = await runArchivePass(deps);
    assert.equal(report.grouped, 1);
    const got = await waitFor('the evidence.record event', 60_000, async () => (await work(), r.received[0]), 150);
    assert.equal(got.verified, true, 'standardwebhooks verifies it unchanged');
    assert.equal(got.payload?.type, 'evidence.record');
    assert.equal(got.payload?.data.image_hash, hash);
    const recordUrl = String(got.payload?.data.evidence_record_url);
    assert.match(recordUrl, new RegExp(`/api/v2/evidence/evidence-record/${hash}$`));

    // The URL serves the record, and it verifies for this photo against the TSA's root.
    const res = await recordApp.request(new URL(recordUrl).pathname);
    assert.equal(res.status, 200);
    const der = new Uint8Array(await res.arrayBuffer());
    const rootPem = await readFile(tsaFiles(path.join(env.DATA_DIR ?? '', 'tsa')).rootCert, 'utf8');
    const verdict = await verifyEvidenceRecord(der, { dataDigest: (alg) => ersDigest(alg, photo), rootsPem: [rootPem] });
    assert.ok(verdict.ok, JSON.stringify(verdict));

    // Once: another pass (nothing to group) and more drains make no second event.
    await runArchivePass(deps);
    await work();
    await work();
    assert.equal(r.received.length, 1);
  });
});
