/**
 * The post-quantum TSA through the API (decisions.md "Post-quantum time"): a TimeStampReq that
 * names the post-quantum policy gets an ML-DSA-65 token (RFC 9882) that our verifier and
 * node:crypto accept, one naming an unknown policy a rejection; its chain comes from
 * /api/v2/tsa/certificates?policy=; the trust-anchor document lists it with every TSA certificate;
 * every anchor carries both tokens, its receipt states `timestamp_pq`, and v2 verify judges it.
 * POST /api/v2/evidence/timestamp chooses it by `policy`: an ML-DSA-65 token in the JSON answer,
 * recorded and checked by the PDF certificate and `evidence verify`; an unknown policy, and the
 * post-quantum one while that TSA is off, 400 unaccepted_policy, charging nothing.
 */
import assert from 'node:assert/strict';
import { X509Certificate, createHash, verify as nodeVerify } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import * as pkijs from 'pkijs';
import { main as evidenceCli } from '../../lib/cli/evidence.js';
import { DEFAULT_TSA_POLICY_OID, DEFAULT_TSA_PQ_POLICY_OID } from '../../lib/config.js';
import { verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';
import { resetCoreDeps } from '../../lib/deps/core.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { Device, createAccount, json, randomHash } from '../support/client.js';
import { useStack } from '../support/stack.js';

type App = { request(path: string, init?: RequestInit): Response | Promise<Response> };
let tsaApp: App;
let certsApp: App;
let trustApp: App;
let anchorApp: App;
let receiptApp: App;
let verifyApp: App;
let timestampApp: App;
let usageApp: App;
let certificateApp: App;
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
  timestampApp = (await import('../../functions/v2/evidence-timestamp.js')).app;
  usageApp = (await import('../../functions/v2/account-usage.js')).app;
  certificateApp = (await import('../../functions/v2/evidence-certificate.js')).app;
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

const PEM = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g;
const pemsOf = (text: string) => (text.match(PEM) ?? []).map((p) => (p.endsWith('\n') ? p : `${p}\n`));

/**
 * node:crypto (OpenSSL 3.5) on a granted ML-DSA-65 TimeStampResp, pkijs decoding it: SHA-512 as
 * the digest (RFC 9882 §3.3), the message-digest attribute over the TSTInfo, and the ML-DSA-65
 * signature over the DER SET OF the signed attributes (RFC 5652 §5.4) with the leaf's key.
 */
function nodeVerifiesPqToken(response: Uint8Array, leaf: X509Certificate): boolean {
  const sd = new pkijs.SignedData({ schema: pkijs.TimeStampResp.fromBER(Uint8Array.from(response)).timeStampToken?.content });
  const si = sd.signerInfos[0] as pkijs.SignerInfo;
  assert.equal(si.digestAlgorithm.algorithmId, '2.16.840.1.101.3.4.2.3', 'SHA-512');
  const eContent = new Uint8Array(sd.encapContentInfo.eContent?.getValue() ?? new ArrayBuffer(0));
  const md = si.signedAttrs?.attributes.find((a) => a.type === '1.2.840.113549.1.9.4')?.values[0] as { valueBlock: { valueHexView: Uint8Array } } | undefined;
  assert.ok(md && Buffer.from(md.valueBlock.valueHexView).equals(createHash('sha512').update(eContent).digest()), 'message-digest = SHA-512(TSTInfo)');
  const signed = new Uint8Array(si.signedAttrs?.encodedValue.slice(0) ?? new ArrayBuffer(0));
  signed[0] = 0x31;
  return nodeVerify(null, signed, leaf.publicKey, new Uint8Array(si.signature.valueBlock.valueHexView));
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

describe('POST /api/v2/evidence/timestamp with a policy', () => {
  const timestamp = (body: object, key: string) => timestampApp.request('/api/v2/evidence/timestamp', json(body, { 'x-api-key': key }));
  const used = async (account: { token: string }) =>
    ((await (await usageApp.request('/api/v2/account/usage', { headers: { authorization: `Bearer ${account.token}` } })).json()) as { used: number }).used;

  it('answers the post-quantum policy with an ML-DSA-65 token that our verifier and node:crypto accept, recorded for the account, one unit', async () => {
    const account = await createAccount('starter');
    const photo = Buffer.from(`photo ${randomHash()}`);
    const hash = createHash('sha256').update(photo).digest('hex');
    const res = await timestamp({ sha256_hash: hash, policy: DEFAULT_TSA_PQ_POLICY_OID }, account.apiKey);
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { sha256_hash: string; timestamp_token: string; gen_time: string; serial_number: string; policy: string; tsa_certificates: string[] };
    assert.equal(body.sha256_hash, hash);
    assert.equal(body.policy, DEFAULT_TSA_PQ_POLICY_OID);
    // The chain is the post-quantum TSA's, as GET /api/v2/tsa/certificates?policy= publishes it.
    const published = pemsOf(await (await certsApp.request(`/api/v2/tsa/certificates?policy=${DEFAULT_TSA_PQ_POLICY_OID}`)).text());
    assert.equal(published.length, 2);
    assert.deepEqual(body.tsa_certificates.flatMap(pemsOf), published);
    const [leaf, root] = published.map((pem) => new X509Certificate(pem));
    assert.ok(leaf && root);
    assert.equal(leaf.publicKey.asymmetricKeyType, 'ml-dsa-65');

    const response = Buffer.from(body.timestamp_token, 'base64');
    const imprint = Buffer.from(hash, 'hex');
    const v = await verifyTimestampResponse(response, { imprint, roots: [published[1] ?? ''], policy: DEFAULT_TSA_PQ_POLICY_OID, hashAlgorithm: 'SHA-256' });
    assert.equal(v.ok, true, JSON.stringify(v.checks));
    assert.match(v.checks.signature.reason, /ML-DSA-65/);
    assert.equal(v.genTime?.toISOString(), body.gen_time);
    assert.equal(v.serial, body.serial_number);
    assert.ok(nodeVerifiesPqToken(response, leaf), 'node:crypto verifies the ML-DSA-65 signature with the leaf');
    // Against the classic root alone it does not verify: the policy really chose the other TSA.
    const classicRoot = pemsOf(await (await certsApp.request('/api/v2/tsa/certificates')).text())[1] ?? '';
    assert.equal((await verifyTimestampResponse(response, { imprint, roots: [classicRoot] })).ok, false);
    console.log(`POST /api/v2/evidence/timestamp, post-quantum: token ${response.length} bytes, answer ${JSON.stringify(body).length} characters`);

    // Recorded for the account exactly as answered; one unit of the quota.
    assert.deepEqual((await getEvidenceRepo().getStandalone(hash, account.accountId)).timestamp, body);
    assert.equal(await used(account), 1);

    // Its PDF certificate checks it against the post-quantum root, and so does `evidence verify`.
    const pdfRes = await certificateApp.request(`/api/v2/evidence/certificate/${hash}`, { headers: { 'x-api-key': account.apiKey } });
    assert.equal(pdfRes.status, 200, await pdfRes.clone().text());
    const pdf = path.join(dir, `pq-${hash.slice(0, 8)}.pdf`);
    await writeFile(pdf, Buffer.from(await pdfRes.arrayBuffer()));
    const text = spawnSync('pdftotext', ['-layout', pdf, '-'], { encoding: 'utf8' }).stdout.replace(/\s+/g, ' ');
    assert.match(text, /Checks out: the token is signed by the time-stamping authority/);
    assert.ok(text.includes(DEFAULT_TSA_PQ_POLICY_OID), 'the card names the post-quantum policy');
    // Its commands are the ones OpenSSL can run on an ML-DSA-65 token (3.5+: cms -verify; ts -verify cannot yet).
    assert.match(text, /OpenSSL 3\.5 or later checks it with cms -verify/);
    assert.match(text, /openssl cms -verify -inform DER -in token\.der/);
    assert.doesNotMatch(text, /openssl ts -verify -data photo\.jpg/);
    const photoFile = path.join(dir, `pq-${hash.slice(0, 8)}.jpg`);
    await writeFile(photoFile, photo);
    const tsaDir = path.join(process.env.DATA_DIR ?? '', 'tsa');
    const cli = async (...args: string[]) => {
      const lines: string[] = [];
      const code = await evidenceCli(['verify', photoFile, ...args], { out: (l) => lines.push(l), err: () => {} }, { EVIDENCE_TRUST_FILE: path.join(dir, 'no-trust.json') });
      return { code, out: lines.join('\n') };
    };
    const both = await cli('--certificate', pdf, '--root', path.join(tsaDir, 'root.pem'), '--pq-root', path.join(tsaDir, 'pq-root.pem'));
    assert.equal(both.code, 0, both.out);
    assert.match(both.out, /holds\s+RFC 3161 timestamp/);
    // The classic root pinned alone does not vouch for it.
    const classicOnly = await cli('--certificate', pdf, '--root', path.join(tsaDir, 'root.pem'));
    assert.equal(classicOnly.code, 1, classicOnly.out);
    assert.match(classicOnly.out, /fails\s+RFC 3161 timestamp/);
  });

  it('answers no policy and the classic policy alike, with the ECDSA token', async () => {
    const account = await createAccount('starter');
    for (const body of [{ sha256_hash: randomHash() }, { sha256_hash: randomHash(), policy: DEFAULT_TSA_POLICY_OID }]) {
      const res = await timestamp(body, account.apiKey);
      assert.equal(res.status, 200, await res.clone().text());
      const answer = (await res.json()) as { timestamp_token: string; policy: string; tsa_certificates: string[] };
      assert.equal(answer.policy, DEFAULT_TSA_POLICY_OID);
      const v = await verifyTimestampResponse(Buffer.from(answer.timestamp_token, 'base64'), { imprint: Buffer.from(body.sha256_hash, 'hex'), roots: [answer.tsa_certificates.at(-1) ?? ''] });
      assert.equal(v.ok, true, JSON.stringify(v.checks));
      assert.match(v.checks.signature.reason, /ecdsa/);
      console.log(`POST /api/v2/evidence/timestamp, classic: token ${Buffer.from(answer.timestamp_token, 'base64').length} bytes, answer ${JSON.stringify(answer).length} characters`);
    }
    assert.equal(await used(account), 2);
  });

  it('refuses another policy with 400 unaccepted_policy (problem+json) and a malformed one with 400 invalid_request; neither counts', async () => {
    const account = await createAccount('starter');
    const res = await timestamp({ sha256_hash: randomHash(), policy: '2.25.1' }, account.apiKey);
    assert.equal(res.status, 400);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const problem = (await res.json()) as { type: string; title: string; status: number; code: string; detail: string };
    assert.equal(problem.code, 'unaccepted_policy');
    assert.equal(problem.status, 400);
    assert.match(problem.type, /\/problems\/unaccepted_policy$/);
    assert.ok(problem.detail.includes('2.25.1') && problem.detail.includes(DEFAULT_TSA_PQ_POLICY_OID) && problem.detail.includes(DEFAULT_TSA_POLICY_OID), problem.detail);
    for (const policy of ['not an oid', '', 7]) {
      const bad = await timestamp({ sha256_hash: randomHash(), policy }, account.apiKey);
      assert.equal(bad.status, 400);
      assert.equal(((await bad.json()) as { code: string }).code, 'invalid_request');
    }
    assert.equal(await used(account), 0);
  });

  it('with the post-quantum TSA off (TSA_PQ=off): 400 unaccepted_policy saying it is off, nothing counted; the classic token still issued', async () => {
    const account = await createAccount('starter');
    const before = process.env.TSA_PQ;
    process.env.TSA_PQ = 'off';
    resetCoreDeps();
    try {
      const hash = randomHash();
      const res = await timestamp({ sha256_hash: hash, policy: DEFAULT_TSA_PQ_POLICY_OID }, account.apiKey);
      assert.equal(res.status, 400, await res.clone().text());
      const problem = (await res.json()) as { code: string; detail: string };
      assert.equal(problem.code, 'unaccepted_policy');
      assert.match(problem.detail, /post-quantum TSA is off/);
      assert.equal(await getEvidenceRepo().get(hash), undefined, 'nothing recorded');
      assert.equal(await used(account), 0);
      assert.equal((await timestamp({ sha256_hash: hash }, account.apiKey)).status, 200);
      assert.equal(await used(account), 1);
    } finally {
      if (before === undefined) delete process.env.TSA_PQ;
      else process.env.TSA_PQ = before;
      resetCoreDeps();
    }
    assert.equal((await timestamp({ sha256_hash: randomHash(), policy: DEFAULT_TSA_PQ_POLICY_OID }, account.apiKey)).status, 200, 'on again');
  });
});
