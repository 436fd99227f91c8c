import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { type TsaCertificateBundle, generateTsaCertificates, issueTsaCertificate } from '../../lib/crypto/tsa/certificates.js';
import { EmbeddedTsa } from '../../lib/crypto/tsa/embedded.js';
import { pemToDer } from '../../lib/crypto/tsa/pem.js';
import { parseTimestampResponse, verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';

const POLICY = '1.3.6.1.4.1.99999.1.1';
const OPENSSL = '/usr/bin/openssl';

let dir: string;
let bundle: TsaCertificateBundle;
let tsa: EmbeddedTsa;
let rootPath: string;
let tsaPath: string;
let fileCounter = 0;

function openssl(args: string[]): { ok: boolean; output: string } {
  const r = spawnSync(OPENSSL, args, { encoding: 'utf8' });
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}

function assertOpensslVerifies(args: string[]): void {
  const r = openssl(['ts', '-verify', ...args]);
  assert.ok(r.ok && r.output.includes('Verification: OK'), `openssl ts -verify ${args.join(' ')}\n${r.output}`);
}

/** Writes `content` to a fresh file in the temp dir and returns its path. */
function tempFile(name: string, content: string | Uint8Array): string {
  const p = path.join(dir, `${fileCounter++}-${name}`);
  writeFileSync(p, content);
  return p;
}

function sha256(data: string | Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(data).digest());
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

/** The SignedData of a TimeStampResp, decoded with pkijs. */
function signedDataOf(response: Uint8Array): pkijs.SignedData {
  const resp = pkijs.TimeStampResp.fromBER(Uint8Array.from(response).buffer);
  assert.ok(resp.timeStampToken, 'the response carries a token');
  return new pkijs.SignedData({ schema: resp.timeStampToken.content });
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'tsa-embedded-'));
  bundle = await generateTsaCertificates();
  rootPath = tempFile('root.pem', bundle.rootCertPem);
  tsaPath = tempFile('tsa.pem', bundle.tsaCertPem);
  tsa = await EmbeddedTsa.create({ ...bundle, policyOid: POLICY });
});

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('EmbeddedTsa tokens checked by openssl ts -verify', () => {
  it('passes -data with the file whose SHA-256 was stamped', async () => {
    const data = `photo bytes ${randomBytes(8).toString('hex')}`;
    const dataPath = tempFile('photo.jpg', data);
    const issued = await tsa.timestamp(sha256(data));
    const respPath = tempFile('data.tsr', issued.response);
    assertOpensslVerifies(['-data', dataPath, '-in', respPath, '-CAfile', rootPath]);
  });

  it('passes -digest with the hex imprint', async () => {
    const imprint = sha256(randomBytes(64));
    const issued = await tsa.timestamp(imprint);
    const respPath = tempFile('digest.tsr', issued.response);
    assertOpensslVerifies(['-digest', hex(imprint), '-in', respPath, '-CAfile', rootPath]);
  });

  it('passes -queryfile for a reply that respond() made to an openssl -cert query, nonce included', async () => {
    const dataPath = tempFile('query.bin', randomBytes(100));
    const tsqPath = path.join(dir, `${fileCounter++}-req.tsq`);
    assert.ok(openssl(['ts', '-query', '-sha256', '-cert', '-data', dataPath, '-out', tsqPath]).ok);
    const response = await tsa.respond(new Uint8Array(readFileSync(tsqPath)));
    const respPath = tempFile('query.tsr', response);
    assertOpensslVerifies(['-queryfile', tsqPath, '-in', respPath, '-CAfile', rootPath]);

    const req = pkijs.TimeStampReq.fromBER(Uint8Array.from(readFileSync(tsqPath)).buffer);
    assert.ok(req.nonce, 'openssl puts a nonce in its queries');
    assert.equal(parseTimestampResponse(response).nonce, req.nonce.toBigInt());
  });

  it('passes -queryfile with -untrusted when the query did not ask for certificates', async () => {
    const dataPath = tempFile('nocert.bin', randomBytes(100));
    const tsqPath = path.join(dir, `${fileCounter++}-nocert.tsq`);
    assert.ok(openssl(['ts', '-query', '-sha256', '-data', dataPath, '-out', tsqPath]).ok);
    const response = await tsa.respond(new Uint8Array(readFileSync(tsqPath)));
    assert.equal(signedDataOf(response).certificates, undefined, 'RFC 3161 §2.4.1: no certificates without certReq');
    const respPath = tempFile('nocert.tsr', response);
    assertOpensslVerifies(['-queryfile', tsqPath, '-in', respPath, '-CAfile', rootPath, '-untrusted', tsaPath]);
  });

  it('passes -data for a token issued with an explicit nonce and without certificates', async () => {
    const data = randomBytes(50);
    const dataPath = tempFile('explicit.bin', data);
    const issued = await tsa.issue({ imprint: sha256(data), nonce: 0x1234567890abcdefn, certReq: false });
    assert.equal(issued.nonce, 0x1234567890abcdefn);
    assert.equal(parseTimestampResponse(issued.response).nonce, 0x1234567890abcdefn);
    const respPath = tempFile('explicit.tsr', issued.response);
    assertOpensslVerifies(['-data', dataPath, '-in', respPath, '-CAfile', rootPath, '-untrusted', tsaPath]);
  });
});

describe('EmbeddedTsa token contents', () => {
  it('gives unique positive serial numbers across 100 tokens', async () => {
    const serials = new Set<string>();
    for (let i = 0; i < 100; i++) {
      const issued = await tsa.issue({ imprint: sha256(String(i)) });
      assert.ok(BigInt(issued.serial) > 0n);
      assert.equal(parseTimestampResponse(issued.response).serial, issued.serial);
      serials.add(issued.serial);
    }
    assert.equal(serials.size, 100);
  });

  it('writes the injected clock as genTime, milliseconds included', async () => {
    const at = new Date(Date.now() - 1000);
    at.setUTCMilliseconds(123);
    const clocked = await EmbeddedTsa.create({ ...bundle, policyOid: POLICY, clock: () => at });
    const issued = await clocked.timestamp(sha256('clock'));
    assert.equal(issued.genTime.getTime(), at.getTime());
    assert.equal(parseTimestampResponse(issued.response).genTime.getTime(), at.getTime());
  });

  it('writes a genTime within a second of the real clock', async () => {
    const before = Date.now();
    const issued = await tsa.timestamp(sha256('now'));
    const after = Date.now();
    const genTime = parseTimestampResponse(issued.response).genTime.getTime();
    assert.ok(genTime >= before - 1000 && genTime <= after + 1000, `genTime ${genTime} not within [${before}, ${after}] ± 1 s`);
  });

  it('uses the injected serial source', async () => {
    let next = 41n;
    const counted = await EmbeddedTsa.create({ ...bundle, policyOid: POLICY, serial: () => ++next });
    assert.equal((await counted.timestamp(sha256('a'))).serial, '42');
    assert.equal((await counted.timestamp(sha256('b'))).serial, '43');
  });

  it('fills TSTInfo as RFC 3161 §2.4.2 asks: v1, policy, SHA-256 with NULL, accuracy 1 s, no ordering, nonce, tsa name', async () => {
    const imprint = sha256('fields');
    const issued = await tsa.timestamp(imprint);
    assert.equal(issued.policy, POLICY);
    const sd = signedDataOf(issued.response);
    const eContent = sd.encapContentInfo.eContent;
    assert.ok(eContent && !eContent.idBlock.isConstructed, 'eContent is a primitive (DER) OCTET STRING');
    const tst = pkijs.TSTInfo.fromBER(eContent.getValue());
    assert.equal(tst.version, 1);
    assert.equal(tst.policy, POLICY);
    assert.equal(tst.messageImprint.hashAlgorithm.algorithmId, '2.16.840.1.101.3.4.2.1');
    assert.ok(tst.messageImprint.hashAlgorithm.algorithmParams instanceof asn1js.Null);
    assert.equal(hex(tst.messageImprint.hashedMessage.valueBlock.valueHexView), hex(imprint));
    assert.equal(tst.accuracy?.seconds, 1);
    assert.equal(tst.ordering, undefined, 'ordering is DEFAULT FALSE, so DER leaves it out');
    assert.ok(tst.nonce && tst.nonce.toBigInt() > 0n, 'our own requests carry a positive nonce');
    assert.equal(tst.tsa?.type, 4);
    assert.equal(sd.signerInfos.length, 1);
    assert.equal(sd.signerInfos[0]?.digestAlgorithm.algorithmId, '2.16.840.1.101.3.4.2.1');
  });

  it('signs a signingCertificateV2 whose ESSCertIDv2 is the SHA-256 of the TSA certificate', async () => {
    const issued = await tsa.timestamp(sha256('ess'));
    const attrs = signedDataOf(issued.response).signerInfos[0]?.signedAttrs?.attributes ?? [];
    assert.deepEqual(attrs.map((a) => a.type).sort(), ['1.2.840.113549.1.9.16.2.47', '1.2.840.113549.1.9.3', '1.2.840.113549.1.9.4'].sort());
    const v2 = attrs.find((a) => a.type === '1.2.840.113549.1.9.16.2.47');
    const signingCertificate = v2?.values[0] as asn1js.Sequence;
    const certs = signingCertificate.valueBlock.value[0] as asn1js.Sequence;
    const essCertIdV2 = certs.valueBlock.value[0] as asn1js.Sequence;
    const [first] = essCertIdV2.valueBlock.value;
    assert.ok(first instanceof asn1js.OctetString, 'hashAlgorithm is left out: SHA-256 is the DEFAULT (RFC 5035)');
    assert.equal(hex(first.valueBlock.valueHexView), hex(sha256(pemToDer(bundle.tsaCertPem))));
  });

  it('embeds a TSA certificate whose only ExtendedKeyUsage is timeStamping, marked critical', async () => {
    const issued = await tsa.timestamp(sha256('eku'));
    const certs = signedDataOf(issued.response).certificates ?? [];
    assert.equal(certs.length, 2, 'the TSA certificate and the root');
    const leaf = certs[0] as pkijs.Certificate;
    assert.equal(hex(new Uint8Array(leaf.toSchema().toBER())), hex(pemToDer(bundle.tsaCertPem)));
    const ekus = (leaf.extensions ?? []).filter((e) => e.extnID === '2.5.29.37');
    assert.equal(ekus.length, 1);
    assert.equal(ekus[0]?.critical, true);
    assert.deepEqual((ekus[0]?.parsedValue as pkijs.ExtKeyUsage).keyPurposes, ['1.3.6.1.5.5.7.3.8']);
    const bc = leaf.extensions?.find((e) => e.extnID === '2.5.29.19');
    assert.equal((bc?.parsedValue as pkijs.BasicConstraints).cA, false);
  });

  it('issues tokens that verifyTimestampResponse accepts, nonce included', async () => {
    const imprint = sha256('self');
    const issued = await tsa.issue({ imprint, nonce: 77n, certReq: true });
    const v = await verifyTimestampResponse(issued.response, { imprint, roots: [bundle.rootCertPem], nonce: 77n, policy: POLICY });
    assert.equal(v.ok, true, JSON.stringify(v.checks));
    assert.equal(v.serial, issued.serial);
    assert.equal(v.chainPem?.length, 2);
  });

  it('can verify each token in full before returning it', async () => {
    const strict = await EmbeddedTsa.create({ ...bundle, policyOid: POLICY, verifyIssued: true });
    const issued = await strict.timestamp(sha256('strict'));
    assert.equal(parseTimestampResponse(issued.response).policy, POLICY);
  });

  it('lists its certificates as PEM, leaf first', async () => {
    const pems = await tsa.certificates();
    assert.equal(pems.length, 2);
    assert.equal(hex(pemToDer(pems[0] ?? '')), hex(pemToDer(bundle.tsaCertPem)));
    assert.equal(hex(pemToDer(pems[1] ?? '')), hex(pemToDer(bundle.rootCertPem)));
  });

  it('refuses an imprint that is not 32 bytes', async () => {
    await assert.rejects(tsa.timestamp(new Uint8Array(20)), TypeError);
  });
});

describe('EmbeddedTsa.respond', () => {
  it('grants SHA-384 and SHA-512 queries in tokens that openssl ts -verify -queryfile accepts', async () => {
    for (const alg of ['sha384', 'sha512']) {
      const dataPath = tempFile(`${alg}.bin`, randomBytes(40));
      const tsqPath = path.join(dir, `${fileCounter++}-${alg}.tsq`);
      assert.ok(openssl(['ts', '-query', `-${alg}`, '-cert', '-data', dataPath, '-out', tsqPath]).ok);
      const response = await tsa.respond(new Uint8Array(readFileSync(tsqPath)));
      assertOpensslVerifies(['-queryfile', tsqPath, '-in', tempFile(`${alg}.tsr`, response), '-CAfile', rootPath]);
      assertOpensslVerifies(['-data', dataPath, '-in', tempFile(`${alg}-2.tsr`, response), '-CAfile', rootPath]);
    }
  });

  it('rejects a SHA-1 query with badAlg', async () => {
    const dataPath = tempFile('sha1.bin', 'x');
    const tsqPath = path.join(dir, `${fileCounter++}-sha1.tsq`);
    assert.ok(openssl(['ts', '-query', '-sha1', '-cert', '-data', dataPath, '-out', tsqPath]).ok);
    const response = await tsa.respond(new Uint8Array(readFileSync(tsqPath)));
    const v = await verifyTimestampResponse(response, { imprint: new Uint8Array(20), roots: [bundle.rootCertPem] });
    assert.equal(v.ok, false);
    assert.equal(v.pkiStatus?.name, 'rejection');
    assert.deepEqual(v.pkiStatus?.failInfo, ['badAlg']);
    const text = openssl(['ts', '-reply', '-in', tempFile('sha1.tsr', response), '-text']);
    assert.match(text.output, /Status: Rejected/);
  });

  it('rejects bytes that are not a TimeStampReq with badDataFormat', async () => {
    const v = await verifyTimestampResponse(await tsa.respond(randomBytes(40)), { imprint: new Uint8Array(32), roots: [bundle.rootCertPem] });
    assert.deepEqual(v.pkiStatus?.failInfo, ['badDataFormat']);
  });

  it('rejects a query for another policy with unacceptedPolicy', async () => {
    const dataPath = tempFile('policy.bin', 'x');
    const tsqPath = path.join(dir, `${fileCounter++}-policy.tsq`);
    assert.ok(openssl(['ts', '-query', '-sha256', '-tspolicy', '1.2.3.4.5', '-data', dataPath, '-out', tsqPath]).ok);
    const v = await verifyTimestampResponse(await tsa.respond(new Uint8Array(readFileSync(tsqPath))), {
      imprint: new Uint8Array(32),
      roots: [bundle.rootCertPem],
    });
    assert.deepEqual(v.pkiStatus?.failInfo, ['unacceptedPolicy']);
  });

  it('answers a query whose SHA-256 identifier has no parameters in the same form, which openssl accepts', async () => {
    const data = randomBytes(20);
    const req = new pkijs.TimeStampReq({
      version: 1,
      messageImprint: new pkijs.MessageImprint({
        hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: '2.16.840.1.101.3.4.2.1' }),
        hashedMessage: new asn1js.OctetString({ valueHex: Uint8Array.from(sha256(data)).buffer }),
      }),
      nonce: asn1js.Integer.fromBigInt(99n),
      certReq: true,
    });
    const tsqPath = tempFile('noparams.tsq', new Uint8Array(req.toSchema().toBER()));
    const response = await tsa.respond(new Uint8Array(readFileSync(tsqPath)));
    const tst = pkijs.TSTInfo.fromBER(signedDataOf(response).encapContentInfo.eContent?.getValue() ?? new ArrayBuffer(0));
    assert.equal(tst.messageImprint.hashAlgorithm.algorithmParams, undefined);
    assertOpensslVerifies(['-queryfile', tsqPath, '-in', tempFile('noparams.tsr', response), '-CAfile', rootPath]);
  });

  it('grants a query that names its own policy', async () => {
    const dataPath = tempFile('ownpolicy.bin', 'x');
    const tsqPath = path.join(dir, `${fileCounter++}-ownpolicy.tsq`);
    assert.ok(openssl(['ts', '-query', '-sha256', '-cert', '-tspolicy', POLICY, '-data', dataPath, '-out', tsqPath]).ok);
    const respPath = tempFile('ownpolicy.tsr', await tsa.respond(new Uint8Array(readFileSync(tsqPath))));
    assertOpensslVerifies(['-queryfile', tsqPath, '-in', respPath, '-CAfile', rootPath]);
  });
});

describe('EmbeddedTsa start-up checks', () => {
  it('refuses a TSA key that belongs to another certificate', async () => {
    const other = await generateTsaCertificates();
    await assert.rejects(
      EmbeddedTsa.create({ ...bundle, tsaKeyPkcs8Pem: other.tsaKeyPkcs8Pem, policyOid: POLICY }),
      /private key does not match the certificate/,
    );
  });

  it('refuses a leaf without the timeStamping ExtendedKeyUsage', async () => {
    const serverAuth = await generateTsaCertificates({ tsaKeyPurposes: ['1.3.6.1.5.5.7.3.1'] });
    assert.throws(() => new EmbeddedTsa({ ...serverAuth, policyOid: POLICY }), /does not include id-kp-timeStamping/);
    const none = await generateTsaCertificates({ tsaKeyPurposes: null });
    await assert.rejects(EmbeddedTsa.create({ ...none, policyOid: POLICY }), /no ExtendedKeyUsage/);
  });

  it('refuses a timeStamping ExtendedKeyUsage that is not critical or not alone', async () => {
    const lax = await generateTsaCertificates({ tsaEkuCritical: false });
    assert.throws(() => new EmbeddedTsa({ ...lax, policyOid: POLICY }), /not marked critical/);
    const mixed = await generateTsaCertificates({ tsaKeyPurposes: ['1.3.6.1.5.5.7.3.8', '1.3.6.1.5.5.7.3.1'] });
    assert.throws(() => new EmbeddedTsa({ ...mixed, policyOid: POLICY }), /only id-kp-timeStamping/);
  });

  it('refuses a leaf that does not chain to the configured root', async () => {
    const other = await generateTsaCertificates();
    await assert.rejects(EmbeddedTsa.create({ ...bundle, rootCertPem: other.rootCertPem, policyOid: POLICY }), /does not chain to the root/);
  });

  it('accepts a new leaf issued under the same root, e.g. after a key rotation', async () => {
    const rotated = await issueTsaCertificate({ rootCertPem: bundle.rootCertPem, rootKeyPkcs8Pem: bundle.rootKeyPkcs8Pem });
    assert.notEqual(rotated.tsaCertPem, bundle.tsaCertPem);
    const next = await EmbeddedTsa.create({ rootCertPem: bundle.rootCertPem, ...rotated, policyOid: POLICY });
    const data = randomBytes(16);
    const respPath = tempFile('rotated.tsr', (await next.timestamp(sha256(data))).response);
    assertOpensslVerifies(['-data', tempFile('rotated.bin', data), '-in', respPath, '-CAfile', rootPath]);
  });

  it('refuses a policy that is not an OID', () => {
    assert.throws(() => new EmbeddedTsa({ ...bundle, policyOid: 'policy-1' }), /not an OID/);
  });

  it('reports failed start-up checks on the first timestamp when built with new', async () => {
    const other = await generateTsaCertificates();
    const broken = new EmbeddedTsa({ ...bundle, tsaKeyPkcs8Pem: other.tsaKeyPkcs8Pem, policyOid: POLICY });
    await assert.rejects(broken.timestamp(sha256('x')), /private key does not match/);
  });
});

describe('a token with a flipped signature byte', () => {
  it('fails openssl ts -verify and the signature check of verifyTimestampResponse', async () => {
    const data = randomBytes(32);
    const dataPath = tempFile('flip.bin', data);
    const issued = await tsa.timestamp(sha256(data));
    const signature = signedDataOf(issued.response).signerInfos[0]?.signature.valueBlock.valueHexView;
    assert.ok(signature);
    const at = Buffer.from(issued.response).indexOf(Buffer.from(signature));
    assert.ok(at > 0, 'the signature bytes are found in the response');
    const tampered = Uint8Array.from(issued.response);
    // Inside the r INTEGER of the DER ECDSA-Sig-Value: the structure stays valid, the value not.
    const target = at + 10;
    tampered[target] = (tampered[target] ?? 0) ^ 0x01;

    const respPath = tempFile('flip.tsr', tampered);
    const r = openssl(['ts', '-verify', '-data', dataPath, '-in', respPath, '-CAfile', rootPath]);
    assert.equal(r.ok, false, r.output);
    assert.match(r.output, /signature failure/);

    const v = await verifyTimestampResponse(tampered, { imprint: sha256(data), roots: [bundle.rootCertPem] });
    assert.equal(v.ok, false);
    assert.equal(v.checks.signature.result, 'fail');
    assert.equal(v.checks.imprint.result, 'pass');
    assert.equal(v.checks.chain.result, 'pass');
  });
});
