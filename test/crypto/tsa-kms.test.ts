import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GetPublicKeyCommand } from '@aws-sdk/client-kms';
import { p256 } from '@noble/curves/nist.js';
import * as pkijs from 'pkijs';
import { generateTsaCertificates, parseCertificate } from '../../lib/crypto/tsa/certificates.js';
import { EmbeddedTsa } from '../../lib/crypto/tsa/embedded.js';
import { KmsTsaKeySigner, signerMatchesCertificate } from '../../lib/crypto/tsa/key-signer.js';
import { verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';
import { ecdsaTestKey, startKmsTestServer, type KmsTestServer } from '../support/kms-server.js';

/**
 * The TSA key on KMS (ECC_NIST_P256), end to end: the key exists only inside the KMS test server;
 * its certificate is issued with the OpenSSL commands of docs/runbook.md ("TSA key") from the
 * public key that GetPublicKey returns; tokens are signed through the real @aws-sdk/client-kms and
 * checked by `openssl ts -verify` and by our verifier.
 */

const POLICY = '1.3.6.1.4.1.99999.1.1';
const OPENSSL = '/usr/bin/openssl';
const tsaKey = ecdsaTestKey('2b0c3a4e-tsa0-4b5f-9d0e-000000000256', 'ECC_NIST_P256', p256.utils.randomSecretKey());

let dir: string;
let kms: KmsTestServer;
let rootPem: string;
let leafPem: string;
let tsa: EmbeddedTsa;
let counter = 0;

function openssl(args: string[], input?: string): string {
  const r = spawnSync(OPENSSL, args, { encoding: 'utf8', cwd: dir, ...(input !== undefined ? { input } : {}) });
  assert.equal(r.status, 0, `openssl ${args.join(' ')}\n${r.stdout}${r.stderr}`);
  return `${r.stdout}${r.stderr}`;
}

function file(name: string, content: string | Uint8Array): string {
  const p = path.join(dir, `${counter++}-${name}`);
  writeFileSync(p, content);
  return p;
}

const sha256 = (data: Uint8Array | string): Uint8Array => new Uint8Array(createHash('sha256').update(data).digest());

let startupOperations: string[] = [];

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'tsa-kms-'));
  kms = await startKmsTestServer([tsaKey], { aliases: { 'alias/evidence-tsa': tsaKey.keyId } });

  // docs/runbook.md, "TSA key": the public key from KMS, an offline root, the leaf for the KMS key.
  const pub = await kms.client().send(new GetPublicKeyCommand({ KeyId: 'alias/evidence-tsa' }));
  assert.ok(pub.PublicKey);
  writeFileSync(path.join(dir, 'tsa-pub.der'), pub.PublicKey);
  openssl(['pkey', '-pubin', '-inform', 'DER', '-in', 'tsa-pub.der', '-out', 'tsa-pub.pem']);
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'root.key']);
  openssl([
    'req', '-x509', '-new', '-key', 'root.key', '-sha256', '-days', '7300',
    '-subj', '/O=Evidence Anchoring Service/CN=Evidence Anchoring Root CA',
    '-addext', 'basicConstraints=critical,CA:TRUE,pathlen:0',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    '-out', 'root.pem',
  ]);
  writeFileSync(
    path.join(dir, 'tsa-ext.cnf'),
    [
      '[tsa]',
      'basicConstraints = critical, CA:FALSE',
      'keyUsage = critical, digitalSignature, nonRepudiation',
      'extendedKeyUsage = critical, timeStamping',
      'subjectKeyIdentifier = hash',
      'authorityKeyIdentifier = keyid',
      '',
    ].join('\n'),
  );
  openssl([
    'x509', '-new', '-subj', '/O=Evidence Anchoring Service/CN=Evidence Anchoring TSA',
    '-force_pubkey', 'tsa-pub.pem', '-CA', 'root.pem', '-CAkey', 'root.key',
    '-days', '3650', '-sha256', '-extfile', 'tsa-ext.cnf', '-extensions', 'tsa', '-out', 'tsa.pem',
  ]);
  rootPem = readFileSync(path.join(dir, 'root.pem'), 'utf8');
  leafPem = readFileSync(path.join(dir, 'tsa.pem'), 'utf8');

  const before = kms.requests.length;
  tsa = await EmbeddedTsa.create({
    rootCertPem: rootPem,
    tsaCertPem: leafPem,
    keySigner: new KmsTsaKeySigner(kms.client(), kms.arn(tsaKey.keyId)),
    policyOid: POLICY,
  });
  startupOperations = kms.requests.slice(before).map((r) => r.operation);
});

after(async () => {
  await kms?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('EmbeddedTsa with its key on KMS (ECC_NIST_P256)', () => {
  it('starts by comparing the KMS key with the certificate (GetPublicKey, what a `public` grant allows), signing nothing', () => {
    assert.deepEqual(startupOperations, ['GetPublicKey']);
  });

  it('issues a token that openssl ts -verify accepts for the stamped data', async () => {
    const data = randomBytes(200);
    const issued = await tsa.timestamp(sha256(data));
    const out = openssl(['ts', '-verify', '-data', file('photo.bin', data), '-in', file('token.tsr', issued.response), '-CAfile', 'root.pem']);
    assert.match(out, /Verification: OK/);
  });

  it('issues a token that our verifier accepts with the KMS-made root as the only trust anchor', async () => {
    const imprint = sha256(randomBytes(32));
    const issued = await tsa.issue({ imprint, nonce: 42n, certReq: true });
    const check = await verifyTimestampResponse(issued.response, { imprint, nonce: 42n, roots: [rootPem], hashAlgorithm: 'SHA-256', policy: POLICY });
    assert.equal(check.ok, true, JSON.stringify(check.checks));
  });

  it('answers an openssl query through KMS and the reply verifies against the query', async () => {
    const tsq = path.join(dir, `${counter++}-req.tsq`);
    openssl(['ts', '-query', '-sha256', '-cert', '-data', file('q.bin', randomBytes(64)), '-out', tsq]);
    const response = await tsa.respond(new Uint8Array(readFileSync(tsq)));
    const out = openssl(['ts', '-verify', '-queryfile', tsq, '-in', file('reply.tsr', response), '-CAfile', 'root.pem']);
    assert.match(out, /Verification: OK/);
  });

  it('signs the SHA-256 of the signed attributes with MessageType DIGEST and ECDSA_SHA_256', async () => {
    const before = kms.requests.length;
    const issued = await tsa.timestamp(sha256('which request'));
    const signs = kms.requests.slice(before).filter((r) => r.operation === 'Sign');
    assert.equal(signs.length, 1, 'one KMS call per token');
    assert.equal(signs[0]?.body.MessageType, 'DIGEST');
    assert.equal(signs[0]?.body.SigningAlgorithm, 'ECDSA_SHA_256');
    assert.equal(Buffer.from(String(signs[0]?.body.Message), 'base64').length, 32);

    const resp = pkijs.TimeStampResp.fromBER(Uint8Array.from(issued.response).buffer);
    assert.ok(resp.timeStampToken);
    const signerInfo = new pkijs.SignedData({ schema: resp.timeStampToken.content }).signerInfos[0];
    assert.equal(signerInfo?.signatureAlgorithm.algorithmId, '1.2.840.10045.4.3.2', 'ecdsa-with-SHA256');
    assert.equal(signerInfo?.signatureAlgorithm.algorithmParams, undefined, 'RFC 5758 §3.2: parameters absent');
    assert.equal(signerInfo?.digestAlgorithm.algorithmId, '2.16.840.1.101.3.4.2.1');
  });

  it('refuses at start-up a KMS key that is not the certificate’s', async () => {
    const other = await generateTsaCertificates();
    await assert.rejects(
      EmbeddedTsa.create({ rootCertPem: other.rootCertPem, tsaCertPem: other.tsaCertPem, keySigner: new KmsTsaKeySigner(kms.client(), tsaKey.keyId), policyOid: POLICY }),
      /private key does not match the certificate/,
    );
  });

  it('reports that a KMS key is unknown as a mismatch rather than crashing', async () => {
    assert.equal(await signerMatchesCertificate(new KmsTsaKeySigner(kms.client(), 'no-such-key'), parseCertificate(leafPem)), false);
    await assert.rejects(new KmsTsaKeySigner(kms.client(), 'no-such-key').sign(new Uint8Array(8)), /KMS Sign failed for no-such-key: NotFoundException/);
  });

  it('refuses options with both a PKCS#8 key and a signer, or neither', async () => {
    const bundle = await generateTsaCertificates();
    const signer = new KmsTsaKeySigner(kms.client(), tsaKey.keyId);
    assert.throws(() => new EmbeddedTsa({ ...bundle, keySigner: signer, policyOid: POLICY }), /exactly one/);
    assert.throws(() => new EmbeddedTsa({ rootCertPem: bundle.rootCertPem, tsaCertPem: bundle.tsaCertPem, policyOid: POLICY }), /exactly one/);
  });
});
