/**
 * The Starter features (issue 14, decisions.md "Starter features"): stand-alone timestamps over JSON
 * and RFC 3161 HTTP, the TSA chain, Ed25519 signatures, the JWK set and the trust anchors, each
 * checked by an independent tool: `openssl ts` for tokens, node:crypto for signatures.
 */
import assert from 'node:assert/strict';
import { createPublicKey, randomBytes, verify as nodeVerify, X509Certificate } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Wallet } from 'ethers';
import { ed25519PublicKeyFromSeed, signEd25519 } from '../../lib/crypto/ed25519.js';
import { canonicalize } from '../../lib/crypto/jcs.js';
import { resetCoreDeps } from '../../lib/deps/core.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { EvidenceRepository } from '../../lib/evidence/repository.js';
import { createAccount, json, randomHash } from '../support/client.js';
import { useStack } from '../support/stack.js';

type Fn = { app: { request(path: string, init?: RequestInit): Response | Promise<Response> } };
let timestampApp: Fn['app'];
let tsaApp: Fn['app'];
let certsApp: Fn['app'];
let signApp: Fn['app'];
let jwksApp: Fn['app'];
let trustApp: Fn['app'];
let usageApp: Fn['app'];
let infoApp: Fn['app'];
let starter: Awaited<ReturnType<typeof createAccount>>;
const dir = mkdtempSync(path.join(os.tmpdir(), 'starter-'));
let n = 0;
const file = (name: string, content: string | Uint8Array) => {
  const p = path.join(dir, `${n++}-${name}`);
  writeFileSync(p, content);
  return p;
};
const openssl = (args: string[]) => {
  const r = spawnSync('openssl', args, { encoding: 'utf8' });
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
};

before(async () => {
  await useStack();
  timestampApp = (await import('../../functions/v2/evidence-timestamp.js')).app;
  tsaApp = (await import('../../functions/v2/tsa.js')).app;
  certsApp = (await import('../../functions/v2/tsa-certificates.js')).app;
  signApp = (await import('../../functions/v2/evidence-sign.js')).app;
  jwksApp = (await import('../../functions/web/jwks.js')).app;
  trustApp = (await import('../../functions/web/trust-anchors.js')).app;
  usageApp = (await import('../../functions/v2/account-usage.js')).app;
  infoApp = (await import('../../functions/v2/account-info.js')).app;
  starter = await createAccount('starter');
});

/** Runs `body` while every recordStandalone write fails (as a DynamoDB outage would). */
async function withFailingStore(body: () => Promise<void>): Promise<void> {
  const original = Object.getOwnPropertyDescriptor(EvidenceRepository.prototype, 'recordStandalone');
  EvidenceRepository.prototype.recordStandalone = () => Promise.reject(new Error('ProvisionedThroughputExceededException'));
  try {
    await body();
  } finally {
    if (original) Object.defineProperty(EvidenceRepository.prototype, 'recordStandalone', original);
  }
}

/** The published chain, leaf first: the root pinned for every openssl check below. */
async function publishedChain(): Promise<{ rootPath: string; leafPath: string; pems: string[] }> {
  const res = await certsApp.request('/api/v2/tsa/certificates');
  assert.equal(res.status, 200);
  const pems = (await res.text()).match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/g) ?? [];
  return { rootPath: file('root.pem', pems.at(-1) ?? ''), leafPath: file('tsa.pem', pems[0] ?? ''), pems };
}

async function used(account: { token: string }): Promise<number> {
  const res = await usageApp.request('/api/v2/account/usage', { headers: { authorization: `Bearer ${account.token}` } });
  return ((await res.json()) as { used: number }).used;
}

/** POST /api/v2/tsa with a DER body, as curl --data-binary does. */
function postTsq(body: Uint8Array, headers: Record<string, string> = { 'x-api-key': starter.apiKey }) {
  return tsaApp.request('/api/v2/tsa', { method: 'POST', headers: { 'content-type': 'application/timestamp-query', ...headers }, body: Buffer.from(body) });
}

/** `openssl ts -query` with the given options over a fresh data file. */
function query(options: string[]): { data: string; tsq: string } {
  const data = file('photo.jpg', randomBytes(200));
  const tsq = path.join(dir, `${n++}-req.tsq`);
  const r = openssl(['ts', '-query', '-data', data, ...options, '-out', tsq]);
  assert.ok(r.ok, r.output);
  return { data, tsq };
}

describe('GET /api/v2/tsa/certificates', () => {
  it('answers the chain as application/pem-certificate-chain, leaf (timeStamping) first and the self-signed root last', async () => {
    const res = await certsApp.request('/api/v2/tsa/certificates');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/pem-certificate-chain/);
    const { pems } = await publishedChain();
    assert.equal(pems.length, 2);
    const [leaf, root] = pems.map((p) => new X509Certificate(p));
    assert.ok(leaf && root);
    assert.ok(leaf.checkIssued(root) && leaf.verify(root.publicKey));
    assert.ok(root.checkIssued(root));
    assert.deepEqual(leaf.keyUsage, ['1.3.6.1.5.5.7.3.8']);
  });
});

describe('POST /api/v2/evidence/timestamp', () => {
  it('answers a token that openssl ts -verify -data accepts for the photo against the published root', async () => {
    const photo = file('photo.jpg', randomBytes(500));
    const hash = execFileSync('sha256sum', [photo], { encoding: 'utf8' }).slice(0, 64);
    const res = await timestampApp.request('/api/v2/evidence/timestamp', json({ sha256_hash: hash.toUpperCase() }, { 'x-api-key': starter.apiKey }));
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { sha256_hash: string; timestamp_token: string; gen_time: string; serial_number: string; policy: string };
    assert.equal(body.sha256_hash, hash);
    assert.match(body.gen_time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.match(body.serial_number, /^\d+$/);
    assert.equal(body.policy, '2.25.32470788606908332339531699348079175478');
    const { rootPath } = await publishedChain();
    const tsr = file('t.tsr', Buffer.from(body.timestamp_token, 'base64'));
    const r = openssl(['ts', '-verify', '-data', photo, '-in', tsr, '-CAfile', rootPath]);
    assert.ok(r.ok && /Verification: OK/.test(r.output), r.output);
    assert.ok(!openssl(['ts', '-verify', '-data', file('other.jpg', 'other'), '-in', tsr, '-CAfile', rootPath]).ok);
    // Recorded for this account in an item of its own, exactly as answered (for the PDF certificate);
    // the hash's evidence item is not made or grown by it (a timestamp is not a registration).
    assert.deepEqual((await getEvidenceRepo().getStandalone(hash, starter.accountId)).timestamp, body);
    assert.equal(await getEvidenceRepo().get(hash), undefined);
  });

  it('answers 503 database_unavailable and counts nothing when the answer cannot be recorded', async () => {
    const account = await createAccount('starter');
    const hash = randomHash();
    await withFailingStore(async () => {
      const res = await timestampApp.request('/api/v2/evidence/timestamp', json({ sha256_hash: hash }, { 'x-api-key': account.apiKey }));
      assert.equal(res.status, 503);
      assert.equal(((await res.json()) as { code: string }).code, 'database_unavailable');
    });
    assert.equal(await used(account), 0);
    assert.equal(await getEvidenceRepo().get(hash), undefined);
  });

  it('refuses a Free key with 403 naming Starter, and a bad body with 400; neither consumes quota', async () => {
    const free = await createAccount('free');
    const res = await timestampApp.request('/api/v2/evidence/timestamp', json({ sha256_hash: randomHash() }, { 'x-api-key': free.apiKey }));
    assert.equal(res.status, 403);
    const problem = (await res.json()) as { code: string; detail: string; required_tier: string };
    assert.equal(problem.code, 'tier_insufficient');
    assert.equal(problem.required_tier, 'starter');
    assert.match(problem.detail, /Starter/);
    const account = await createAccount('starter');
    for (const body of [{ sha256_hash: 'abc' }, { sha256_hash: randomHash(), extra: 1 }, {}]) {
      assert.equal((await timestampApp.request('/api/v2/evidence/timestamp', json(body, { 'x-api-key': account.apiKey }))).status, 400);
    }
    assert.equal(await used(account), 0);
    assert.equal((await timestampApp.request('/api/v2/evidence/timestamp', json({ sha256_hash: randomHash() }, { 'x-api-key': account.apiKey }))).status, 200);
    assert.equal(await used(account), 1);
  });
});

describe('POST /api/v2/tsa (RFC 3161 over HTTP)', () => {
  for (const alg of ['sha256', 'sha384', 'sha512']) {
    it(`answers an openssl ${alg} query with nonce and certReq; openssl ts -verify -queryfile accepts the reply`, async () => {
      const { data, tsq } = query([`-${alg}`, '-cert']);
      const res = await postTsq(readFileSync(tsq));
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/timestamp-reply');
      const tsr = file('reply.tsr', new Uint8Array(await res.arrayBuffer()));
      const { rootPath } = await publishedChain();
      const r = openssl(['ts', '-verify', '-queryfile', tsq, '-in', tsr, '-CAfile', rootPath]);
      assert.ok(r.ok && /Verification: OK/.test(r.output), r.output);
      assert.ok(openssl(['ts', '-verify', '-data', data, '-in', tsr, '-CAfile', rootPath]).ok);
      // The nonce of the query is echoed (-queryfile checks it); the certificates are in the token.
      const text = openssl(['ts', '-reply', '-in', tsr, '-text']).output;
      assert.match(text, /Nonce: 0x/);
      assert.match(text, new RegExp(`Hash Algorithm: ${alg}`));
    });
  }

  it('leaves the certificates out without certReq: -queryfile then needs the published TSA certificate as -untrusted', async () => {
    const { tsq } = query(['-sha256']);
    const tsr = file('nocert.tsr', new Uint8Array(await (await postTsq(readFileSync(tsq))).arrayBuffer()));
    const { rootPath, leafPath } = await publishedChain();
    assert.ok(!openssl(['ts', '-verify', '-queryfile', tsq, '-in', tsr, '-CAfile', rootPath]).ok, 'no certificate in the token');
    const r = openssl(['ts', '-verify', '-queryfile', tsq, '-in', tsr, '-CAfile', rootPath, '-untrusted', leafPath]);
    assert.ok(r.ok && /Verification: OK/.test(r.output), r.output);
  });

  it('answers a query without a nonce without one', async () => {
    const { tsq } = query(['-sha256', '-cert', '-no_nonce']);
    const tsr = file('nononce.tsr', new Uint8Array(await (await postTsq(readFileSync(tsq))).arrayBuffer()));
    const { rootPath } = await publishedChain();
    assert.ok(openssl(['ts', '-verify', '-queryfile', tsq, '-in', tsr, '-CAfile', rootPath]).ok);
    assert.match(openssl(['ts', '-reply', '-in', tsr, '-text']).output, /Nonce: unspecified/);
  });

  it('grants a query for its own policy and answers an unknown policy with a rejection (unacceptedPolicy) that consumes no quota', async () => {
    const account = await createAccount('starter');
    const own = query(['-sha256', '-cert', '-tspolicy', '2.25.32470788606908332339531699348079175478']);
    const granted = file('own.tsr', new Uint8Array(await (await postTsq(readFileSync(own.tsq), { 'x-api-key': account.apiKey })).arrayBuffer()));
    assert.ok(openssl(['ts', '-verify', '-queryfile', own.tsq, '-in', granted, '-CAfile', (await publishedChain()).rootPath]).ok);
    assert.equal(await used(account), 1);

    const other = query(['-sha256', '-cert', '-tspolicy', '1.3.6.1.4.1.57264.3161.1']);
    const res = await postTsq(readFileSync(other.tsq), { 'x-api-key': account.apiKey });
    assert.equal(res.status, 200);
    const text = openssl(['ts', '-reply', '-in', file('rejected.tsr', new Uint8Array(await res.arrayBuffer())), '-text']).output;
    assert.match(text, /Status: Rejected/);
    assert.match(text, /Failure info: the requested TSA policy is not supported/);
    assert.equal(await used(account), 1, 'a rejection consumes nothing');
  });

  it('takes the API key as the password of HTTP Basic credentials (any user name)', async () => {
    const { tsq } = query(['-sha256', '-cert']);
    const basic = `Basic ${Buffer.from(`any-user:${starter.apiKey}`).toString('base64')}`;
    const res = await postTsq(readFileSync(tsq), { authorization: basic });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/timestamp-reply');
  });

  it('answers 401 with a Basic challenge without credentials or with a wrong password', async () => {
    const { tsq } = query(['-sha256']);
    for (const headers of [{} as Record<string, string>, { authorization: `Basic ${Buffer.from('u:eas_wrong').toString('base64')}` }]) {
      const res = await postTsq(readFileSync(tsq), headers);
      assert.equal(res.status, 401);
      assert.match(res.headers.get('www-authenticate') ?? '', /^Basic realm="evidence-tsa"/);
      assert.equal(((await res.json()) as { code: string }).code, 'invalid_api_key');
    }
  });

  it('answers 400 problem+json to a body that is not a TimeStampReq, and it consumes nothing', async () => {
    const account = await createAccount('starter');
    for (const body of [randomBytes(40), new TextEncoder().encode('{"sha256_hash":"00"}'), new Uint8Array(0)]) {
      const res = await postTsq(body, { 'x-api-key': account.apiKey });
      assert.equal(res.status, 400);
      assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
      assert.equal(((await res.json()) as { code: string }).code, 'invalid_timestamp_request');
    }
    assert.equal(await used(account), 0);
  });

  it('answers 415 problem+json to a TimeStampReq not sent as application/timestamp-query, before the credentials: no challenge, nothing counted', async () => {
    const account = await createAccount('starter');
    const { tsq } = query(['-sha256', '-cert']);
    const body = readFileSync(tsq);
    // No type, JSON, the three a cross-site HTML form can send, and RFC 3161's other type (the reply's).
    const types = [undefined, 'application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/timestamp-reply', 'application/octet-stream'];
    for (const type of types) {
      for (const credentials of [{ 'x-api-key': account.apiKey }, { authorization: `Basic ${Buffer.from(`u:${account.apiKey}`).toString('base64')}` }, {}] as Record<string, string>[]) {
        const res = await tsaApp.request('/api/v2/tsa', { method: 'POST', headers: { ...(type ? { 'content-type': type } : {}), ...credentials }, body: Buffer.from(body) });
        const what = `${type ?? 'no Content-Type'} with ${Object.keys(credentials).join('') || 'no credentials'}`;
        assert.equal(res.status, 415, what);
        assert.equal(res.headers.get('content-type'), 'application/problem+json', what);
        const problem = (await res.json()) as { code: string; detail: string };
        assert.equal(problem.code, 'unsupported_media_type', what);
        assert.match(problem.detail, /Content-Type: application\/timestamp-query \(RFC 3161 §3\.4\)/, what);
        // Refused before the credentials are read: no Basic challenge (a browser would ask for a
        // password), no rate or quota counted.
        assert.equal(res.headers.get('www-authenticate'), null, what);
        assert.equal(res.headers.get('ratelimit'), null, what);
      }
    }
    assert.equal(await used(account), 0);
    // The type is compared as RFC 9110 says: case-insensitively, parameters aside.
    for (const type of ['Application/TimeStamp-Query', 'application/timestamp-query; charset=binary']) {
      const res = await tsaApp.request('/api/v2/tsa', { method: 'POST', headers: { 'content-type': type, 'x-api-key': account.apiKey }, body: Buffer.from(body) });
      assert.equal(res.status, 200, type);
      assert.equal(res.headers.get('content-type'), 'application/timestamp-reply');
    }
    assert.equal(await used(account), 2);
  });

  it('refuses a Free key with 403 naming Starter', async () => {
    const free = await createAccount('free');
    const { tsq } = query(['-sha256']);
    const res = await postTsq(readFileSync(tsq), { 'x-api-key': free.apiKey });
    assert.equal(res.status, 403);
    assert.match(((await res.json()) as { detail: string }).detail, /Starter/);
  });
});

type Jwks = { keys: { kty: string; crv?: string; alg: string; kid: string; x?: string; pub?: string; status: string }[] };
type Signed = { algorithm: string; key_id: string; statement: Record<string, unknown>; signature: string };

async function jwks(): Promise<Jwks> {
  const res = await jwksApp.request('/.well-known/jwks.json');
  assert.equal(res.status, 200);
  return (await res.json()) as Jwks;
}

/** node:crypto (not the signing code) over the RFC 8785 form, with the JWK whose kid the answer names. */
function verifiesWithJwks(signed: Signed, set: Jwks): boolean {
  const jwk = set.keys.find((k) => k.kid === signed.key_id);
  assert.ok(jwk, `no JWK with kid ${signed.key_id}`);
  const key = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: 'jwk' });
  return nodeVerify(null, Buffer.from(canonicalize(signed.statement), 'utf8'), key, Buffer.from(signed.signature, 'base64url'));
}

describe('POST /api/v2/evidence/sign', () => {
  const sign = (body: unknown, key = starter.apiKey) => signApp.request('/api/v2/evidence/sign', json(body, { 'x-api-key': key }));

  it('signs the RFC 8785 statement of the hash; node:crypto verifies it with the JWK of its kid', async () => {
    const hash = randomHash();
    const res = await sign({ sha256_hash: hash });
    assert.equal(res.status, 200, await res.clone().text());
    const signed = (await res.json()) as Signed;
    assert.equal(signed.algorithm, 'Ed25519');
    assert.equal(signed.statement.sha256_hash, hash);
    assert.equal(signed.statement.key_id, signed.key_id);
    assert.match(String(signed.statement.signed_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.match(signed.signature, /^[A-Za-z0-9_-]{86}$/);
    const set = await jwks();
    assert.equal(verifiesWithJwks(signed, set), true);
    assert.equal(verifiesWithJwks({ ...signed, statement: { ...signed.statement, sha256_hash: randomHash() } }, set), false);
    assert.deepEqual((await getEvidenceRepo().getStandalone(hash, starter.accountId)).signature, signed, 'recorded for this account, exactly as answered');
    assert.equal(await getEvidenceRepo().get(hash), undefined, 'not on the hash\'s evidence item');
  });

  it('answers 503 database_unavailable and counts nothing when the answer cannot be recorded', async () => {
    const account = await createAccount('starter');
    await withFailingStore(async () => {
      const res = await sign({ sha256_hash: randomHash() }, account.apiKey);
      assert.equal(res.status, 503);
      assert.equal(((await res.json()) as { code: string }).code, 'database_unavailable');
    });
    assert.equal(await used(account), 0);
    assert.equal((await sign({ sha256_hash: randomHash() }, account.apiKey)).status, 200);
    assert.equal(await used(account), 1);
  });

  it('names a verified device signature in the statement, and refuses a bad one with 400 invalid_signature', async () => {
    const seed = randomBytes(32);
    const hash = randomHash();
    const device = {
      public_key_hex: Buffer.from(ed25519PublicKeyFromSeed(seed)).toString('hex'),
      signature_hex: Buffer.from(signEd25519(seed, Buffer.from(hash, 'hex'))).toString('hex'),
    };
    const res = await sign({ sha256_hash: hash, ...device });
    assert.equal(res.status, 200, await res.clone().text());
    const signed = (await res.json()) as Signed;
    assert.deepEqual(signed.statement.device, device);
    assert.equal(verifiesWithJwks(signed, await jwks()), true);

    const account = await createAccount('starter');
    const bad = await sign({ sha256_hash: randomHash(), ...device }, account.apiKey);
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { code: string }).code, 'invalid_signature');
    const half = await sign({ sha256_hash: hash, public_key_hex: device.public_key_hex }, account.apiKey);
    assert.equal(half.status, 400);
    assert.equal(await used(account), 0, 'failures consume nothing');
  });

  it('refuses a Free key with 403 naming Starter, and counts each success', async () => {
    const free = await createAccount('free');
    const res = await sign({ sha256_hash: randomHash() }, free.apiKey);
    assert.equal(res.status, 403);
    assert.match(((await res.json()) as { detail: string }).detail, /Starter/);
    const account = await createAccount('starter');
    for (let i = 0; i < 2; i++) assert.equal((await sign({ sha256_hash: randomHash() }, account.apiKey)).status, 200);
    assert.equal(await used(account), 2);
  });
});

describe('GET /.well-known/jwks.json', () => {
  it('holds the active Ed25519 (OKP) and ML-DSA-65 (AKP) keys, each with a kid', async () => {
    const set = await jwks();
    const okp = set.keys.find((k) => k.kty === 'OKP' && k.status === 'active');
    const akp = set.keys.find((k) => k.kty === 'AKP' && k.status === 'active');
    assert.ok(okp && akp);
    assert.equal(okp.crv, 'Ed25519');
    assert.match(okp.kid, /^ed25519:[0-9a-f]{16}$/);
    assert.equal(Buffer.from(okp.x ?? '', 'base64url').length, 32);
    assert.equal(akp.alg, 'ML-DSA-65');
    assert.match(akp.kid, /^mldsa65:[0-9a-f]{16}$/);
    assert.equal(Buffer.from(akp.pub ?? '', 'base64url').length, 1952);
    // node:crypto takes the OKP key as it is.
    assert.equal(createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: okp.x }, format: 'jwk' }).asymmetricKeyType, 'ed25519');
  });

  describe('after a rotation', () => {
    const retired = ed25519PublicKeyFromSeed(randomBytes(32));
    let file: string;
    before(async () => {
      file = path.join(process.env.DATA_DIR ?? '', 'keys', 'retired-keys.json');
      await writeFile(file, JSON.stringify({ keys: [{ kty: 'OKP', crv: 'Ed25519', x: Buffer.from(retired).toString('base64url') }] }));
    });
    after(async () => {
      await writeFile(file, JSON.stringify({ keys: [] }));
    });

    it('keeps the retired key in the set, marked retired, next to the active one', async () => {
      const set = await jwks();
      const old = set.keys.find((k) => k.x === Buffer.from(retired).toString('base64url'));
      assert.ok(old);
      assert.equal(old.status, 'retired');
      assert.match(old.kid, /^ed25519:/);
      assert.equal(set.keys.filter((k) => k.kty === 'OKP' && k.status === 'active').length, 1);
    });
  });
});

describe('GET /.well-known/evidence-trust-anchors.json', () => {
  it('lists the TSA root, the JWK set URL, the chain id and the wallet address', async () => {
    const res = await trustApp.request('/.well-known/evidence-trust-anchors.json');
    assert.equal(res.status, 200);
    const doc = (await res.json()) as {
      tsa: { root_pem: string; root_sha256: string; policy_oid: string };
      jwks_url: string;
      signing_keys: { kid: string }[];
      ledger: { chain_id: number; wallet_address: string };
    };
    const { pems } = await publishedChain();
    assert.equal(doc.tsa.root_pem.trim(), pems.at(-1)?.trim());
    assert.equal(doc.tsa.root_sha256, new X509Certificate(doc.tsa.root_pem).fingerprint256.replace(/:/g, '').toLowerCase());
    assert.match(doc.jwks_url, /\/\.well-known\/jwks\.json$/);
    assert.deepEqual(doc.signing_keys.map((k) => k.kid).sort(), (await jwks()).keys.map((k) => k.kid).sort());
    assert.equal(doc.ledger.chain_id, 31337);
    const key = readFileSync(path.join(process.env.DATA_DIR ?? '', 'keys', 'ledger-wallet.key'), 'utf8').trim();
    assert.equal(doc.ledger.wallet_address, new Wallet(key.startsWith('0x') ? key : `0x${key}`).address);
  });
});

describe('GET /api/v2/account/info', () => {
  it('lists the Starter features, each with its endpoint: timestamp, Ed25519 signing and the PDF certificate', async () => {
    const res = await infoApp.request('/api/v2/account/info', { headers: { authorization: `Bearer ${starter.token}` } });
    assert.deepEqual(((await res.json()) as { features: string[] }).features, ['hash', 'verify', 'timestamp', 'ed25519_signing', 'pdf_certificate']);
  });
});

after(() => resetCoreDeps());
