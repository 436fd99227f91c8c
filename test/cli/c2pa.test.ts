/**
 * Content Credentials with our time (issue 38; docs/c2pa.md): `evidence c2pa sign` through
 * bin/evidence.mjs against the real stack over HTTP, judged by the official C2PA reader
 * (@contentauth/c2pa-wasm, c2pa-rs inside) as the independent check. Every case asserts the
 * reader's codes, not only its state: a broken time-stamp is informational to it
 * (`timeStamp.mismatch`) and leaves the state as it was.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { claimSigner } from '../../lib/crypto/c2pa/claim-signer.js';
import { derToPem, pemBlocks } from '../../lib/crypto/tsa/pem.js';
import { parseTimestampResponse } from '../../lib/crypto/tsa/verify.js';
import { type ManifestStore, readJpeg, readerContext, signJpeg } from '../../lib/cli/c2pa-sdk.js';
import { getKeyAuthDeps } from '../../lib/deps/key-auth.js';
import { type Leaf, type SignerRoot, makeLeaf, makeSignerRoot, writeLeaf } from '../support/c2pa-pki.js';
import { createAccount } from '../support/client.js';
import { type HttpService, startHttpService } from '../support/http-server.js';
import { makeJpeg } from '../support/jpeg.js';
import { useStack } from '../support/stack.js';
import { waitFor } from '../support/wait.js';

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'evidence.mjs');

let service: HttpService;
let account: Awaited<ReturnType<typeof createAccount>>;
let dir: string;
let root: SignerRoot;
let ourTsaRoot: string;
let otherRoot: SignerRoot;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function evidence(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(BIN, args, { cwd: dir, env: { ...process.env, EVIDENCE_API_KEY: account.apiKey, EVIDENCE_TRUST_FILE: path.join(dir, 'trust.json'), ...extraEnv }, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

const used = async () => (await getKeyAuthDeps().limits.usage(account.accountId, 'starter')).used;

/** Signs a new photo with the CLI; returns the signed file's path and what the CLI printed. */
async function signPhoto(name: string, leaf: Leaf, seed: number): Promise<{ signed: string; run: Run }> {
  const files = writeLeaf(dir, name, leaf);
  writeFileSync(path.join(dir, `${name}.jpg`), makeJpeg({ seed }));
  const signed = path.join(dir, `${name}-signed.jpg`);
  const run = await evidence(['c2pa', 'sign', `${name}.jpg`, '--out', signed, '--signer-cert', files.cert, '--signer-key', files.key, '--url', service.url]);
  assert.equal(run.code, 0, run.stderr);
  return { signed, run };
}

function read(file: string | Uint8Array, anchors: { manifest?: string[]; tsa?: string[] }): Promise<ManifestStore> {
  return readJpeg(typeof file === 'string' ? new Uint8Array(readFileSync(file)) : file, readerContext({ manifest: anchors.manifest ?? [], tsa: anchors.tsa ?? [] }));
}

function codes(store: ManifestStore): { success: string[]; informational: string[]; failure: string[] } {
  const r = store.validation_results?.activeManifest ?? {};
  return { success: (r.success ?? []).map((s) => s.code), informational: (r.informational ?? []).map((s) => s.code), failure: (r.failure ?? []).map((s) => s.code) };
}

function signatureInfo(store: ManifestStore) {
  return store.active_manifest ? store.manifests?.[store.active_manifest]?.signature_info : undefined;
}

before(async () => {
  await useStack();
  service = await startHttpService();
  account = await createAccount('starter');
  dir = mkdtempSync(path.join(os.tmpdir(), 'evidence-c2pa-'));
  root = await makeSignerRoot();
  otherRoot = await makeSignerRoot('Another TSA Root');
  const chain = await (await fetch(`${service.url}/api/v2/tsa/certificates`)).text();
  ourTsaRoot = pemBlocks(chain, 'CERTIFICATE').map((b) => derToPem(b.der)).at(-1) ?? '';
  assert.ok(ourTsaRoot);
});

after(async () => {
  await service?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('evidence c2pa sign, judged by the official C2PA reader', () => {
  let signed: string;
  let run: Run;
  let charged: number;

  before(async () => {
    const before = await used();
    ({ signed, run } = await signPhoto('trusted', await makeLeaf(root), 1));
    charged = (await used()) - before;
  });

  it('with both anchors (the signer\'s root as manifest, our TSA root as tsa): Trusted, signingCredential.trusted, timeStamp.trusted, signature_info.time = our genTime; one time-stamp charged', async () => {
    const store = await read(signed, { manifest: [root.certPem], tsa: [ourTsaRoot] });
    const c = codes(store);
    assert.equal(store.validation_state, 'Trusted', JSON.stringify(c));
    for (const code of ['signingCredential.trusted', 'timeStamp.validated', 'timeStamp.trusted', 'claimSignature.validated', 'assertion.dataHash.match']) assert.ok(c.success.includes(code), `${code} in ${JSON.stringify(c)}`);
    assert.deepEqual(c.failure, []);
    const printed = /time-stamped by \S+ at (\S+)/.exec(run.stdout)?.[1];
    const time = signatureInfo(store)?.time;
    assert.ok(time, 'signature_info.time');
    assert.equal(new Date(time).getTime(), new Date(printed ?? '').getTime(), run.stdout);
    assert.equal(signatureInfo(store)?.common_name, 'Test Photographer');
    assert.equal(charged, 1, 'the time-stamp is charged as any TSA request');
  });

  it('the trust-anchor document\'s c2pa.reader_context, plus a manifest entry, is a context the reader trusts our time-stamps with', async () => {
    const doc = (await (await fetch(`${service.url}/.well-known/evidence-trust-anchors.json`)).json()) as {
      tsa: { root_pem: string };
      c2pa: { tsa_url: string; tsa_anchor: { trust_kind: string; trust_anchors: string }; reader_context: { trust: { anchors: unknown[] } } };
    };
    assert.equal(doc.c2pa.tsa_url, `${service.url}/api/v2/tsa`);
    assert.equal(doc.c2pa.tsa_anchor.trust_kind, 'tsa');
    assert.ok(doc.c2pa.tsa_anchor.trust_anchors.includes(doc.tsa.root_pem.trim()));
    assert.deepEqual(doc.c2pa.reader_context, { trust: { anchors: [doc.c2pa.tsa_anchor] } });
    const context = { trust: { anchors: [{ trust_kind: 'manifest', trust_anchors: root.certPem }, ...doc.c2pa.reader_context.trust.anchors] } };
    const store = await readJpeg(new Uint8Array(readFileSync(signed)), JSON.stringify(context));
    assert.equal(store.validation_state, 'Trusted');
    assert.ok(codes(store).success.includes('timeStamp.trusted'), JSON.stringify(codes(store)));
    // The document's context alone: our time-stamp trusted, the signer not (Valid).
    const alone = await readJpeg(new Uint8Array(readFileSync(signed)), JSON.stringify(doc.c2pa.reader_context));
    assert.equal(alone.validation_state, 'Valid');
    assert.ok(codes(alone).success.includes('timeStamp.trusted'));
    assert.ok(codes(alone).failure.includes('signingCredential.untrusted'));
  });

  it('writes the COSE signature exactly as long as the builder reserved', () => {
    const [, length, reserved] = /COSE signature (\d+) bytes of the (\d+) reserved/.exec(run.stdout) ?? [];
    assert.ok(length && Number(length) > 0, run.stdout);
    assert.equal(length, reserved);
  });

  it('a changed image byte: Invalid, assertion.dataHash.mismatch', async () => {
    const bytes = new Uint8Array(readFileSync(signed));
    // The last entropy-coded byte before EOI (FF D9): image data the data hash covers.
    bytes[bytes.length - 3] = (bytes[bytes.length - 3] ?? 0) ^ 0x01;
    const store = await read(bytes, { manifest: [root.certPem], tsa: [ourTsaRoot] });
    assert.equal(store.validation_state, 'Invalid');
    assert.ok(codes(store).failure.includes('assertion.dataHash.mismatch'), JSON.stringify(codes(store)));
  });

  it('a TSA root other than ours as the tsa anchor: timeStamp.untrusted (and no timeStamp.trusted)', async () => {
    const store = await read(signed, { manifest: [root.certPem], tsa: [otherRoot.certPem] });
    const c = codes(store);
    assert.ok([...c.failure, ...c.informational].includes('timeStamp.untrusted'), JSON.stringify(c));
    assert.ok(!c.success.includes('timeStamp.trusted'), JSON.stringify(c));
  });

  it('a changed byte in the token\'s message imprint: only timeStamp.mismatch, informational; the state stays Trusted', async () => {
    const bytes = new Uint8Array(readFileSync(signed));
    const token = tokenIn(bytes);
    // TSTInfo.messageImprint: SEQUENCE { SHA-256 with NULL parameters, OCTET STRING (32) } (RFC 3161 §2.4.2).
    const imprint = Buffer.from(bytes.subarray(token.start, token.end)).indexOf(Buffer.from('300d06096086480165030402010500' + '0420', 'hex'));
    assert.ok(imprint > 0, 'the message imprint in the token');
    const at = token.start + imprint + 17 + 5;
    bytes[at] = (bytes[at] ?? 0) ^ 0x01;
    const store = await read(bytes, { manifest: [root.certPem], tsa: [ourTsaRoot] });
    const c = codes(store);
    assert.ok(c.informational.includes('timeStamp.mismatch'), JSON.stringify(c));
    assert.ok(!c.success.some((code) => code.startsWith('timeStamp.')), JSON.stringify(c));
    assert.deepEqual(c.failure, []);
    assert.equal(store.validation_state, 'Trusted');
  });

  it('a changed byte in the token\'s signature: timeStamp.untrusted, informational; the state stays Trusted', async () => {
    const bytes = new Uint8Array(readFileSync(signed));
    const token = tokenIn(bytes);
    // The token's last byte: inside the TSA's ECDSA signature, so the DER still parses.
    bytes[token.end - 1] = (bytes[token.end - 1] ?? 0) ^ 0x01;
    const store = await read(bytes, { manifest: [root.certPem], tsa: [ourTsaRoot] });
    const c = codes(store);
    assert.ok(c.informational.includes('timeStamp.untrusted'), JSON.stringify(c));
    assert.ok(!c.success.some((code) => code.startsWith('timeStamp.')), JSON.stringify(c));
    assert.deepEqual(c.failure, []);
    assert.equal(store.validation_state, 'Trusted');
  });

  it('evidence verify shows the reader\'s verdict apart from ours: Trusted, our TSA, the signing time', async () => {
    const trust = await evidence(['trust', 'add', service.url]);
    assert.equal(trust.code, 0, trust.stderr);
    writeFileSync(path.join(dir, 'signer-roots.pem'), root.certPem);
    const verify = await evidence(['verify', signed, '--c2pa-anchors', 'signer-roots.pem']);
    // No receipt: ours is not established (the photo was not anchored), whatever the reader says.
    assert.equal(verify.code, 1, verify.stderr);
    assert.match(verify.stdout, /Content Credentials \(C2PA\), the official reader's verdict/);
    assert.match(verify.stdout, /state\s+Trusted/);
    assert.match(verify.stdout, /signer\s+Test Photographer/);
    assert.match(verify.stdout, /time-stamp\s+our TSA .*timeStamp\.trusted/);
    assert.match(verify.stderr, /No receipt at/);
    // Without the signer's root: Valid at most, and said so.
    const bare = await evidence(['verify', signed]);
    assert.match(bare.stdout, /state\s+Valid/);
    assert.match(bare.stdout, /signingCredential\.untrusted/);
  });
});

describe('the sample photo of the walk', () => {
  it('test/fixtures/c2pa/sample.jpg is what test/support/jpeg.ts makes (its provenance, test/fixtures/c2pa/README.md)', () => {
    const fixture = new Uint8Array(readFileSync(path.resolve(import.meta.dirname, '..', 'fixtures', 'c2pa', 'sample.jpg')));
    assert.deepEqual(fixture, makeJpeg({ width: 320, height: 240, seed: 38 }));
  });
});

describe('a signing certificate that has expired since', () => {
  it('is still Trusted because of our time-stamp, and Invalid (signingCredential.expired) without one', async () => {
    // Valid for 30 s from now: long enough to sign (the CLI refuses an expired certificate), then
    // the test waits for it to expire; the reader judges with the current time.
    const leaf = await makeLeaf(root, { notAfter: new Date(Date.now() + 30_000), commonName: 'Short-lived Photographer' });
    const { signed } = await signPhoto('expiring', leaf, 2);
    // The same photo, signed the same way but without a time-stamp, through the same builder.
    const untimed = await signJpeg(makeJpeg({ seed: 2 }), claimSigner({ chainDer: pemBlocks(leaf.certPem, 'CERTIFICATE').map((b) => b.der), privateKey: createPrivateKey(leaf.keyPem) }), {
      title: 'untimed.jpg',
      generator: { name: 'evidence-test', version: '1' },
    });
    await waitFor('the certificate to expire', 60_000, () => (Date.now() > leaf.notAfter.getTime() + 1_000 ? true : undefined), 500);

    const timed = await read(signed, { manifest: [root.certPem], tsa: [ourTsaRoot] });
    const c = codes(timed);
    assert.equal(timed.validation_state, 'Trusted', JSON.stringify(c));
    assert.ok(c.success.includes('timeStamp.trusted') && c.success.includes('signingCredential.trusted'), JSON.stringify(c));
    assert.ok(!c.failure.includes('signingCredential.expired'));

    const bare = await read(untimed, { manifest: [root.certPem], tsa: [ourTsaRoot] });
    assert.equal(bare.validation_state, 'Invalid');
    assert.ok(codes(bare).failure.includes('signingCredential.expired'), JSON.stringify(codes(bare)));
  });
});

describe('a certificate off C2PA\'s profile is refused before anything is sent', () => {
  const cases: [string, Parameters<typeof makeLeaf>[1], RegExp][] = [
    ['a CA certificate', { ca: true }, /is a CA certificate/],
    ['no digitalSignature', { keyUsage: [1] }, /lacks digitalSignature/],
    ['no keyUsage', { keyUsage: null }, /has no keyUsage/],
    ['no extendedKeyUsage', { eku: null }, /has no extendedKeyUsage/],
    ['a TSA\'s extendedKeyUsage', { eku: ['1.3.6.1.5.5.7.3.8'] }, /id-kp-timeStamping/],
    ['expired', { notBefore: new Date(Date.now() - 2 * 86_400_000), notAfter: new Date(Date.now() - 86_400_000) }, /expired on/],
    ['a P-384 key', { curve: 'P-384' }, /ES256 only/],
  ];
  for (const [what, options, message] of cases) {
    it(`${what}: exit 1, the reason in words, nothing charged, no file written`, async () => {
      const name = `refused-${what.replace(/\W+/g, '-')}`;
      const files = writeLeaf(dir, name, await makeLeaf(root, options));
      writeFileSync(path.join(dir, `${name}.jpg`), makeJpeg({ seed: 3 }));
      const before = await used();
      const run = await evidence(['c2pa', 'sign', `${name}.jpg`, '--out', `${name}-signed.jpg`, '--signer-cert', files.cert, '--signer-key', files.key, '--url', service.url]);
      assert.equal(run.code, 1, run.stdout);
      assert.match(run.stderr, /cannot sign Content Credentials: C2PA readers would refuse it/);
      assert.match(run.stderr, message);
      assert.match(run.stderr, /Nothing was sent\./);
      assert.equal(await used(), before);
      assert.throws(() => readFileSync(path.join(dir, `${name}-signed.jpg`)));
    });
  }

  it('a key that is not the certificate\'s: refused, nothing charged', async () => {
    const files = writeLeaf(dir, 'mismatch', await makeLeaf(root));
    writeFileSync(files.key, (await makeLeaf(root)).keyPem);
    writeFileSync(path.join(dir, 'mismatch.jpg'), makeJpeg({ seed: 4 }));
    const before = await used();
    const run = await evidence(['c2pa', 'sign', 'mismatch.jpg', '--out', 'mismatch-signed.jpg', '--signer-cert', files.cert, '--signer-key', files.key, '--url', service.url]);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /is not the key of the certificate/);
    assert.equal(await used(), before);
  });
});

describe('POST /api/v2/tsa as a C2PA client (c2pa-rs) calls it', () => {
  it('a SHA-256 imprint with a nonce and certReq, the API key as HTTP Basic from the URL\'s user-info: 200 application/timestamp-reply, the nonce echoed, the certificates in the token', async () => {
    const nonce = 0x1234_5678_9abc_def0n;
    const body = timeStampReq(new Uint8Array(32).fill(7), nonce);
    // What a client does with https://user:key@host/api/v2/tsa (ureq, c2pa-rs's blocking HTTP client): Basic base64(user:key).
    for (const user of ['c2pa', '']) {
      const url = new URL(`${service.url}/api/v2/tsa`);
      url.username = user;
      url.password = account.apiKey;
      const answer = await post(url, body);
      assert.equal(answer.status, 200, answer.body.toString());
      assert.equal(answer.contentType, 'application/timestamp-reply');
      const reply = parseTimestampResponse(new Uint8Array(answer.body));
      assert.equal(reply.pkiStatus.name, 'granted');
      assert.equal(reply.nonce, nonce);
      assert.ok(answer.body.length > 1000, 'certReq: the token carries the TSA certificates');
    }
  });
});

/** The TimeStampToken inside the signed JPEG's sigTst2 (a CBOR byte string after "val"). */
function tokenIn(bytes: Uint8Array): { start: number; end: number } {
  const buffer = Buffer.from(bytes);
  const at = buffer.indexOf('tstTokens');
  assert.ok(at > 0, 'sigTst2 in the file');
  const val = buffer.indexOf('val', at) + 3;
  // A byte string of 256…65535 bytes: 0x59 and a 2-byte length (RFC 8949 §3.1).
  assert.equal(buffer[val], 0x59);
  const length = buffer.readUInt16BE(val + 1);
  return { start: val + 3, end: val + 3 + length };
}

function timeStampReq(imprint: Uint8Array, nonce: bigint): Uint8Array {
  const hex = nonce.toString(16);
  const req = new pkijs.TimeStampReq({
    version: 1,
    messageImprint: new pkijs.MessageImprint({
      hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: '2.16.840.1.101.3.4.2.1' }),
      hashedMessage: new asn1js.OctetString({ valueHex: imprint.slice().buffer }),
    }),
    nonce: new asn1js.Integer({ valueHex: Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex') }),
    certReq: true,
  });
  return new Uint8Array(req.toSchema().toBER());
}

/** A POST over node:http with the Authorization a client derives from the URL's user-info, nothing else added. */
function post(url: URL, body: Uint8Array): Promise<{ status: number; contentType: string | undefined; body: Buffer }> {
  const authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/timestamp-query', authorization, 'content-length': body.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'], body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
