/**
 * The post-quantum TSA through the API (decisions.md "Post-quantum time"): a TimeStampReq that
 * names the post-quantum policy gets an ML-DSA-65 token (RFC 9882) that our verifier and
 * node:crypto accept, one naming an unknown policy a rejection; its chain comes from
 * /api/v2/tsa/certificates?policy=; the trust-anchor document lists it with every TSA certificate;
 * every anchor carries both tokens, its receipt states `timestamp_pq`, and v2 verify judges it.
 */
import assert from 'node:assert/strict';
import { X509Certificate, createHash, verify as nodeVerify } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import * as pkijs from 'pkijs';
import { DEFAULT_TSA_PQ_POLICY_OID } from '../../lib/config.js';
import { verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';
import { Device, createAccount, json, randomHash } from '../support/client.js';
import { useStack } from '../support/stack.js';

type App = { request(path: string, init?: RequestInit): Response | Promise<Response> };
let tsaApp: App;
let certsApp: App;
let trustApp: App;
let anchorApp: App;
let receiptApp: App;
let verifyApp: App;
let apiKey: string;
const dir = mkdtempSync(path.join(os.tmpdir(), 'pq-tsa-'));

before(async () => {
  await useStack();
  tsaApp = (await import('../../functions/v2/tsa.js')).app;
  certsApp = (await import('../../functions/v2/tsa-certificates.js')).app;
  trustApp = (await import('../../functions/web/trust-anchors.js')).app;
  anchorApp = (await import('../../functions/v2/evidence-anchor.js')).app;
  receiptApp = (await import('../../functions/v2/evidence-receipt.js')).app;
  verifyApp = (await import('../../functions/v2/evidence-verify.js')).app;
  apiKey = (await createAccount('pro')).apiKey;
});

/** A TimeStampReq from the system's `openssl ts -query` (3.0 writes the query whatever the key type). */
function query(data: string, policy?: string): Buffer {
  const file = path.join(dir, `data-${randomHash().slice(0, 8)}`);
  writeFileSync(file, data);
  const r = spawnSync('openssl', ['ts', '-query', '-data', file, '-sha256', '-cert', ...(policy ? ['-tspolicy', policy] : [])]);
  assert.equal(r.status, 0, r.stderr?.toString());
  return r.stdout;
}

async function post(body: Buffer): Promise<Uint8Array> {
  const res = await tsaApp.request('/api/v2/tsa', { method: 'POST', headers: { 'content-type': 'application/timestamp-query', 'x-api-key': apiKey }, body: Uint8Array.from(body) });
  assert.equal(res.status, 200);
  return new Uint8Array(await res.arrayBuffer());
}

describe('the post-quantum TSA over the API', () => {
  it('answers the post-quantum policy with an ML-DSA-65 token that our verifier and node:crypto accept, and the classic policy with ECDSA', async () => {
    const chainRes = await certsApp.request(`/api/v2/tsa/certificates?policy=${DEFAULT_TSA_PQ_POLICY_OID}`);
    assert.equal(chainRes.status, 200);
    const chain = (await chainRes.text()).match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/g) ?? [];
    assert.equal(chain.length, 2);
    const [leaf, root] = chain.map((pem) => new X509Certificate(pem));
    assert.equal(leaf?.publicKey.asymmetricKeyType, 'ml-dsa-65');
    assert.ok(root && leaf?.verify(root.publicKey), 'node:crypto: the ML-DSA-65 root signed the leaf');

    const data = `photo ${randomHash()}`;
    const response = await post(query(data, DEFAULT_TSA_PQ_POLICY_OID));
    const imprint = createHash('sha256').update(data).digest();
    const v = await verifyTimestampResponse(response, { imprint, roots: [chain[1] ?? ''], policy: DEFAULT_TSA_PQ_POLICY_OID });
    assert.equal(v.ok, true, JSON.stringify(v.checks));
    assert.match(v.checks.signature.reason, /ML-DSA-65/);
    // node:crypto over what the signature covers (RFC 5652 §5.4).
    const sd = new pkijs.SignedData({ schema: pkijs.TimeStampResp.fromBER(Uint8Array.from(response)).timeStampToken?.content });
    const si = sd.signerInfos[0] as pkijs.SignerInfo;
    assert.equal(si.digestAlgorithm.algorithmId, '2.16.840.1.101.3.4.2.3', 'SHA-512');
    const signed = new Uint8Array(si.signedAttrs?.encodedValue.slice(0) ?? new ArrayBuffer(0));
    signed[0] = 0x31;
    assert.ok(leaf && nodeVerify(null, signed, leaf.publicKey, new Uint8Array(si.signature.valueBlock.valueHexView)));

    const classic = await verifyTimestampResponse(await post(query(data)), { imprint, roots: [(await (await certsApp.request('/api/v2/tsa/certificates')).text())] });
    assert.equal(classic.ok, true);
    assert.match(classic.checks.signature.reason, /ecdsa/);
  });

  it('rejects an unknown policy (RFC 3161 unacceptedPolicy) and answers 404 problem+json for its chain', async () => {
    const response = await post(query('x', '2.25.1'));
    const v = await verifyTimestampResponse(response, { imprint: createHash('sha256').update('x').digest(), roots: [] });
    assert.equal(v.pkiStatus?.name, 'rejection');
    assert.deepEqual(v.pkiStatus?.failInfo, ['unacceptedPolicy']);
    const res = await certsApp.request('/api/v2/tsa/certificates?policy=2.25.1');
    assert.equal(res.status, 404);
    assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
    assert.equal(((await res.json()) as { code: string }).code, 'unknown_tsa_policy');
  });

  it('lists the post-quantum root and every TSA certificate with its window in the trust-anchor document', async () => {
    const doc = (await (await trustApp.request('/.well-known/evidence-trust-anchors.json')).json()) as {
      tsa: { pq?: { root_pem: string; root_sha256: string; policy_oid: string }; certificates: { kind: string; role: string; status: string; sha256: string; not_before: string; not_after: string; retired_at: string | null; pem: string }[] };
    };
    assert.equal(doc.tsa.pq?.policy_oid, DEFAULT_TSA_PQ_POLICY_OID);
    const current = doc.tsa.certificates.filter((c) => c.status === 'active').map((c) => `${c.kind} ${c.role}`).sort();
    assert.deepEqual(current, ['classic leaf', 'classic root', 'pq leaf', 'pq root']);
    for (const c of doc.tsa.certificates) {
      assert.equal(createHash('sha256').update(new X509Certificate(c.pem).raw).digest('hex'), c.sha256);
      assert.ok(Date.parse(c.not_before) < Date.parse(c.not_after));
    }
    assert.equal(doc.tsa.certificates.find((c) => c.kind === 'pq' && c.role === 'root')?.sha256, doc.tsa.pq?.root_sha256);
  });

  it('gives every anchor both tokens: the receipt states timestamp_pq and v2 verify judges it', async () => {
    const body = new Device().next(randomHash());
    const res = await anchorApp.request('/api/v2/evidence/anchor', json(body, { 'x-api-key': apiKey }));
    assert.equal(res.status, 200, await res.clone().text());
    const receipt = (await (await receiptApp.request(`/api/v2/evidence/receipt/${body.sha256_hash}`)).json()) as {
      timestamp: { token: string };
      timestamp_pq?: { token: string; signature_algorithm: string; policy: string; tsa_certificates: string[] };
    };
    assert.ok(receipt.timestamp_pq, 'the receipt has timestamp_pq');
    assert.equal(receipt.timestamp_pq.signature_algorithm, 'ML-DSA-65');
    assert.equal(receipt.timestamp_pq.policy, DEFAULT_TSA_PQ_POLICY_OID);
    const token = Buffer.from(receipt.timestamp_pq.token, 'base64');
    console.log(`post-quantum token in the receipt: ${token.length} bytes (classic: ${Buffer.from(receipt.timestamp.token, 'base64').length}), chain ${receipt.timestamp_pq.tsa_certificates.join('').length} PEM characters`);
    const verify = (await (await verifyApp.request(`/api/v2/evidence/verify/${body.sha256_hash}`)).json()) as { verdict?: { proofs: Record<string, { state: string; reason: string }> }; proofs?: Record<string, { state: string; reason: string }> };
    const proofs = verify.verdict?.proofs ?? verify.proofs;
    assert.equal(proofs?.timestamp_pq?.state, 'holds', JSON.stringify(verify));
    assert.match(proofs?.timestamp_pq?.reason ?? '', /as of its genTime/);
  });
});
