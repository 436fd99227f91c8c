/**
 * The evidence item at rest (lib/store/evidence-codec.ts): the proofs shared by every item (the
 * ML-DSA-65 public key, the TSA's certificates) are stored once and named by reference, unique
 * base64 proofs as bytes, and every reader still sees the record as it was made.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { blobKey, decodeItem, encodeFields } from '../../lib/store/evidence-codec.js';
import { EvidenceTable } from '../../lib/store/evidence-table.js';
import { createAccount, Device, json } from '../support/client.js';
import { useStack } from '../support/stack.js';

const raw = async (key: string) =>
  (await getDb().send(new GetCommand({ TableName: getConfig().tables.evidence, Key: { image_hash: key }, ConsistentRead: true }))).Item;

describe('the evidence item at rest', () => {
  let anchorApp: typeof import('../../functions/v2/evidence-anchor.js').app;
  let verifyApp: typeof import('../../functions/v2/evidence-verify.js').app;
  let apiKey: string;
  before(async () => {
    await useStack();
    anchorApp = (await import('../../functions/v2/evidence-anchor.js')).app;
    verifyApp = (await import('../../functions/v2/evidence-verify.js')).app;
    apiKey = (await createAccount('pro')).apiKey;
  });

  it('stores the shared proofs once, by reference, and the signature and token as bytes; readers see the record whole', async () => {
    const device = new Device();
    const bodies: ReturnType<Device['next']>[] = [];
    for (let i = 0; i < 2; i++) {
      const body = device.next();
      const res = await anchorApp.request('/api/v2/evidence/anchor', json(body, { 'x-api-key': apiKey }));
      assert.equal(res.status, 200, await res.clone().text());
      device.advance(body);
      bodies.push(body);
    }
    const [a, b] = await Promise.all(bodies.map((body) => raw(body.sha256_hash)));
    assert.ok(a && b);
    for (const item of [a, b]) {
      assert.equal(item.pq_public_key, undefined, 'no inline public key');
      assert.equal(item.tsa_certificates, undefined, 'no inline certificates');
      assert.ok(item.pq_signature instanceof Uint8Array, 'the signature as bytes');
      assert.ok(item.tsa_response instanceof Uint8Array, 'the token as bytes');
    }
    assert.equal(a.pq_public_key_ref, b.pq_public_key_ref, 'one key, one blob');
    assert.equal(a.tsa_certificates_ref, b.tsa_certificates_ref);

    // The record as the domain reads it: every value inline, and the blob is what it names.
    const record = await new EvidenceTable(getDb(), getConfig().tables.evidence).get(bodies[0]!.sha256_hash);
    assert.ok(record?.pq_public_key && record.tsa_certificates && record.pq_signature);
    assert.equal(blobKey(record.pq_public_key), a.pq_public_key_ref);
    assert.deepEqual((await raw(String(a.pq_public_key_ref)))?.value, record.pq_public_key);
    assert.equal(Buffer.from(record.pq_signature, 'base64').length, (a.pq_signature as Uint8Array).length);
    // What a write of the item is billed by: the item without what it now names.
    const size = (item: Record<string, unknown>) => JSON.stringify(item, (_k, v: unknown) => (v instanceof Uint8Array ? 'x'.repeat(v.length) : v)).length;
    const inline = size(record as unknown as Record<string, unknown>);
    assert.ok(size(a) < inline - record.pq_public_key.length, `${size(a)} bytes at rest, ${inline} inline`);

    const verdict = (await (await verifyApp.request(`/api/v2/evidence/verify/${bodies[0]!.sha256_hash}`)).json()) as { verified: boolean };
    assert.equal(verdict.verified, true);
  });

  it('reads an item written before (inline strings) as it always did', () => {
    const item = { image_hash: 'ab'.repeat(32), pq_public_key: 'AAEC', pq_signature: 'AQID', tsa_response: 'BAUG', tsa_certificates: ['x'] };
    assert.deepEqual(decodeItem(item, () => undefined), item);
  });

  it('round-trips any base64, canonical or not, and any shared value', () => {
    for (let i = 0; i < 50; i++) {
      const sig = randomBytes(1 + (i % 7)).toString('base64');
      const odd = sig.replace(/=+$/, ''); // unpadded: kept as the string it is
      for (const pq_signature of [sig, odd]) {
        const fields = { pq_signature, tsa_response: sig, pq_public_key: randomBytes(8).toString('base64'), tsa_certificates: [randomBytes(4).toString('hex')] };
        const { fields: stored, blobs } = encodeFields(fields);
        const byKey = new Map(blobs.map((bl) => [bl.key, bl.value]));
        assert.deepEqual(decodeItem(stored, (k) => byKey.get(k)), fields);
      }
    }
  });

  it('refuses to read an item whose blob is missing, rather than answer without the proof', () => {
    const { fields } = encodeFields({ pq_public_key: 'AAEC' });
    assert.throws(() => decodeItem({ image_hash: 'cd'.repeat(32), ...fields }, () => undefined), /not stored/);
  });
});
