/**
 * The post-quantum TSA key on KMS (key spec ML_DSA_65), end to end as docs/runbook.md "Rotating
 * the TSA keys" does it: the key exists only inside the KMS test server; its ML-DSA-65 leaf is
 * issued by `npm run admin -- issue-pq-tsa-cert` from the public key GetPublicKey returns; tokens
 * are signed through the real @aws-sdk/client-kms (ML_DSA_SHAKE_256, MessageType RAW) and checked
 * by our verifier and by node:crypto. A key that is not the certificate's is refused at start-up.
 */
import assert from 'node:assert/strict';
import { X509Certificate, createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GetPublicKeyCommand } from '@aws-sdk/client-kms';
import { issuePqTsaCertificateFor } from '../../lib/cli/tsa-rotate.js';
import { EmbeddedTsa } from '../../lib/crypto/tsa/embedded.js';
import { KmsMlDsaTsaKeySigner } from '../../lib/crypto/tsa/key-signer.js';
import { generatePqTsaCertificates } from '../../lib/crypto/tsa/pq-certificates.js';
import { verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';
import { type KmsTestServer, mlDsa65TestKey, startKmsTestServer } from '../support/kms-server.js';

const key = mlDsa65TestKey('7d1e0c3a-pqts-4b5f-9d0e-000000000065', randomBytes(32));
const other = mlDsa65TestKey('7d1e0c3a-pqts-4b5f-9d0e-000000000066', randomBytes(32));
let kms: KmsTestServer;
let dir: string;
let rootPem: string;
let leafPem: string;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'tsa-pq-kms-'));
  kms = await startKmsTestServer([key, other]);
  const pub = await kms.client().send(new GetPublicKeyCommand({ KeyId: key.keyId }));
  assert.ok(pub.PublicKey);
  writeFileSync(path.join(dir, 'pq-pub.der'), pub.PublicKey);
  const root = await generatePqTsaCertificates();
  writeFileSync(path.join(dir, 'pq-root.pem'), root.rootCertPem);
  writeFileSync(path.join(dir, 'pq-root.key.pem'), root.rootKeyPkcs8Pem);
  await issuePqTsaCertificateFor({ rootCertFile: path.join(dir, 'pq-root.pem'), rootKeyFile: path.join(dir, 'pq-root.key.pem'), publicKeyFile: path.join(dir, 'pq-pub.der'), outFile: path.join(dir, 'pq-tsa.pem') });
  rootPem = root.rootCertPem;
  leafPem = readFileSync(path.join(dir, 'pq-tsa.pem'), 'utf8');
});

after(() => kms.close());

describe('the post-quantum TSA with its key on KMS', () => {
  it('signs tokens through KMS (ML_DSA_SHAKE_256, RAW) that our verifier and node:crypto accept', async () => {
    const before = kms.requests.length;
    const tsa = await EmbeddedTsa.create({ rootCertPem: rootPem, tsaCertPem: leafPem, keySigner: new KmsMlDsaTsaKeySigner(kms.client(), key.keyId), policyOid: '2.25.7' });
    // Start-up compares keys (GetPublicKey, what a `public` grant allows: health, the reconciler); it signs nothing.
    assert.deepEqual(kms.requests.slice(before).map((r) => r.operation), ['GetPublicKey']);
    const imprint = createHash('sha256').update('a photo').digest();
    const { response } = await tsa.issue({ imprint, certReq: true });
    const v = await verifyTimestampResponse(response, { imprint, roots: [rootPem], policy: '2.25.7' });
    assert.equal(v.ok, true, JSON.stringify(v.checks));
    const signs = kms.requests.filter((r) => r.operation === 'Sign');
    assert.equal(signs.length, 1, 'one signature: the token\'s');
    for (const s of signs) assert.deepEqual([s.body.MessageType, s.body.SigningAlgorithm, s.body.KeyId], ['RAW', 'ML_DSA_SHAKE_256', key.keyId]);
    assert.ok(new X509Certificate(leafPem).verify(new X509Certificate(rootPem).publicKey), 'node:crypto: the root signed the leaf');
  });

  it('refuses at start-up a KMS key that is not the certificate\'s', async () => {
    await assert.rejects(
      EmbeddedTsa.create({ rootCertPem: rootPem, tsaCertPem: leafPem, keySigner: new KmsMlDsaTsaKeySigner(kms.client(), other.keyId), policyOid: '2.25.7' }),
      /does not match the certificate/,
    );
  });
});
