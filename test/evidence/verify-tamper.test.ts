import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { createAccount, Device, json, sendUntilNot503 } from '../support/client.js';
import { useStack } from '../support/stack.js';

let anchorApp: typeof import('../../functions/v2/evidence-anchor.js').app;
let verifyApp: typeof import('../../functions/v2/evidence-verify.js').app;
let apiKey: string;

before(async () => {
  await useStack();
  anchorApp = (await import('../../functions/v2/evidence-anchor.js')).app;
  verifyApp = (await import('../../functions/v2/evidence-verify.js')).app;
  apiKey = (await createAccount('pro')).apiKey;
});

async function anchored(): Promise<string> {
  const body = new Device().next();
  // A 503 (a database call past its deadline on a loaded machine) is followed by the identical request, as a phone does.
  const res = await sendUntilNot503(async () => anchorApp.request('/api/v2/evidence/anchor', json(body, { 'x-api-key': apiKey })));
  assert.equal(res.status, 200);
  return body.sha256_hash;
}

async function verify(hash: string) {
  const res = await verifyApp.request(`/api/v2/evidence/verify/${hash}`);
  return (await res.json()) as { verified: boolean; has_pq_signature: boolean; has_timestamp: boolean; has_blockchain: boolean };
}

/** Overwrites one stored attribute, as an attacker with database access would. */
async function tamper(hash: string, field: string, change: (v: string) => string) {
  const db = getDb();
  const current = (await getEvidenceRepo().get(hash)) as unknown as Record<string, unknown>;
  const next = change(String(current[field]));
  await db.send(
    new UpdateCommand({
      TableName: getConfig().tables.evidence,
      Key: { image_hash: hash },
      UpdateExpression: 'SET #f = :v',
      ExpressionAttributeNames: { '#f': field },
      ExpressionAttributeValues: { ':v': next },
    }),
  );
}

const flipBase64 = (b64: string) => {
  const bytes = Buffer.from(b64, 'base64');
  const i = Math.floor(bytes.length / 2);
  bytes[i] = (bytes[i] ?? 0) ^ 0x01;
  return bytes.toString('base64');
};

describe('verify computes from the stored bytes, even after an earlier successful verify', () => {
  it('catches a flipped bit in the stored ML-DSA-65 signature', async () => {
    const hash = await anchored();
    assert.equal((await verify(hash)).verified, true);
    await tamper(hash, 'pq_signature', flipBase64);
    const v = await verify(hash);
    assert.equal(v.has_pq_signature, false);
    assert.equal(v.verified, false);
    assert.equal(v.has_timestamp, true);
  });

  it('catches a flipped bit in the stored RFC 3161 token', async () => {
    const hash = await anchored();
    assert.equal((await verify(hash)).verified, true);
    await tamper(hash, 'tsa_response', flipBase64);
    const v = await verify(hash);
    assert.equal(v.has_timestamp, false);
    assert.equal(v.verified, false);
    assert.equal(v.has_pq_signature, true);
  });

  it('catches a changed anchoring time that the statement no longer matches', async () => {
    const hash = await anchored();
    assert.equal((await verify(hash)).verified, true);
    await tamper(hash, 'anchored_at', () => '2020-01-01T00:00:00.000Z');
    assert.equal((await verify(hash)).verified, false);
  });
});
