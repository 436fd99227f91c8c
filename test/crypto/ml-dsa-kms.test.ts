import { generateKeyPairSync } from 'node:crypto';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KmsMlDsaSigner } from '../../lib/crypto/ml-dsa-kms.js';
import {
  ML_DSA_65_PUBLIC_KEY_BYTES,
  ML_DSA_65_SIGNATURE_BYTES,
  mlDsa65PublicKeyFromSpki,
  mlDsaKeyId,
  mlDsaPublicKeyFingerprint,
  verifyMlDsa65,
} from '../../lib/crypto/ml-dsa.js';
import { derElement, ID_ML_DSA_65_DER, mlDsa65Spki, mlDsa65TestKey, startKmsTestServer, type KmsTestServer } from '../support/kms-server.js';

const seed = new Uint8Array(32).fill(0x42);
const key = mlDsa65TestKey('1234abcd-12ab-34cd-56ef-1234567890ab', seed);
const message = new Uint8Array(32).fill(0xab);

describe('KmsMlDsaSigner against a KMS-protocol test server', () => {
  let kms: KmsTestServer;
  let tampering = false;

  before(async () => {
    kms = await startKmsTestServer([key], {
      aliases: { 'alias/evidence-signer': key.keyId },
      transformResponse: (operation, body) => {
        if (!tampering || operation !== 'Sign' || typeof body.Signature !== 'string') return body;
        const signature = Buffer.from(body.Signature, 'base64');
        signature[100]! ^= 0x01;
        return { ...body, Signature: signature.toString('base64') };
      },
    });
  });

  after(async () => {
    await kms.close();
  });

  it('unwraps the SubjectPublicKeyInfo to the raw 1952-byte key and derives keyId from it', async () => {
    const signer = await KmsMlDsaSigner.connect(kms.client(), kms.arn(key.keyId));
    const publicKey = await signer.publicKey();
    assert.equal(publicKey.length, ML_DSA_65_PUBLIC_KEY_BYTES);
    assert.deepEqual(publicKey, key.publicKey);
    assert.equal(signer.keyId, mlDsaKeyId(key.publicKey));
    assert.equal(await signer.fingerprint(), mlDsaPublicKeyFingerprint(key.publicKey));
    assert.equal(signer.algorithm, 'ML-DSA-65');
  });

  it('fetches the public key once and serves it from the cache afterwards', async () => {
    const before = kms.requests.filter((r) => r.operation === 'GetPublicKey').length;
    const signer = new KmsMlDsaSigner(kms.client(), key.keyId);
    await Promise.all([signer.publicKey(), signer.publicKey()]);
    await signer.publicKey();
    await signer.sign(message);
    assert.equal(kms.requests.filter((r) => r.operation === 'GetPublicKey').length - before, 1);
  });

  it('says clearly that keyId needs the public key first', () => {
    const signer = new KmsMlDsaSigner(kms.client(), key.keyId);
    assert.throws(() => signer.keyId, /publicKey\(\)/);
  });

  it('signs the raw message with ML_DSA_SHAKE_256 and the signature verifies under the public key', async () => {
    const signer = new KmsMlDsaSigner(kms.client(), 'alias/evidence-signer');
    const signature = await signer.sign(message);
    assert.equal(signature.length, ML_DSA_65_SIGNATURE_BYTES);
    assert.equal(verifyMlDsa65(signature, message, key.publicKey), true);
    const request = kms.requests.findLast((r) => r.operation === 'Sign');
    assert.ok(request);
    assert.equal(request.body.KeyId, 'alias/evidence-signer');
    assert.equal(request.body.SigningAlgorithm, 'ML_DSA_SHAKE_256');
    assert.equal(request.body.MessageType, 'RAW');
    assert.equal(request.body.Message, Buffer.from(message).toString('base64'));
  });

  it('refuses a signature from KMS that does not verify', async () => {
    const signer = new KmsMlDsaSigner(kms.client(), key.keyId);
    tampering = true;
    try {
      await assert.rejects(signer.sign(message), /does not verify/);
    } finally {
      tampering = false;
    }
  });

  it('refuses messages KMS cannot sign raw without calling it', async () => {
    const signer = new KmsMlDsaSigner(kms.client(), key.keyId);
    const count = kms.requests.length;
    await assert.rejects(signer.sign(new Uint8Array(4097)), RangeError);
    await assert.rejects(signer.sign(new Uint8Array(0)), RangeError);
    assert.equal(kms.requests.length, count);
  });

  it('reports an unknown key with the KMS error name and retries the fetch next time', async () => {
    const signer = new KmsMlDsaSigner(kms.client(), 'no-such-key');
    await assert.rejects(signer.publicKey(), /GetPublicKey failed for no-such-key: NotFoundException/);
    await assert.rejects(signer.publicKey(), /NotFoundException/);
  });

  it('refuses a key whose key spec is not ML_DSA_65', async () => {
    const ecKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'der', type: 'spki' });
    const p256 = { keyId: 'p256', keySpec: 'ECC_NIST_P256', signingAlgorithms: ['ECDSA_SHA_256'], publicKeyDer: () => Uint8Array.from(ecKey), sign: () => new Uint8Array(64) };
    const other = await startKmsTestServer([p256]);
    try {
      await assert.rejects(new KmsMlDsaSigner(other.client(), 'p256').publicKey(), /key spec ECC_NIST_P256/);
    } finally {
      await other.close();
    }
  });
});

describe('ML-DSA-65 SubjectPublicKeyInfo parsing', () => {
  const spki = mlDsa65Spki(key.publicKey);

  it('extracts the raw key from a well-formed SubjectPublicKeyInfo', () => {
    // 30 82 07b2 | 30 0b 06 09 <id-ml-dsa-65> | 03 82 07a1 00 <1952 bytes>
    assert.equal(Buffer.from(spki.subarray(0, 22)).toString('hex'), '308207b2300b0609608648016503040312038207a100');
    assert.deepEqual(mlDsa65PublicKeyFromSpki(spki), key.publicKey);
  });

  it('refuses another algorithm, naming its OID', () => {
    const ecKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'der', type: 'spki' });
    assert.throws(() => mlDsa65PublicKeyFromSpki(Uint8Array.from(ecKey)), /algorithm 1\.2\.840\.10045\.2\.1 is not id-ml-dsa-65/);
    // id-ml-dsa-44 (…3.17) with an ML-DSA-65-sized key
    const mlDsa44Oid = Uint8Array.from(ID_ML_DSA_65_DER);
    mlDsa44Oid[mlDsa44Oid.length - 1] = 0x11;
    assert.throws(() => mlDsa65PublicKeyFromSpki(mlDsa65Spki(key.publicKey, mlDsa44Oid)), /2\.16\.840\.1\.101\.3\.4\.3\.17/);
  });

  it('refuses algorithm parameters, which RFC 9881 requires to be absent', () => {
    const withNull = Uint8Array.from([...ID_ML_DSA_65_DER, 0x05, 0x00]);
    assert.throws(() => mlDsa65PublicKeyFromSpki(mlDsa65Spki(key.publicKey, withNull)), /parameters must be absent/);
  });

  it('refuses trailing bytes, truncation, unused bits and a key of the wrong length', () => {
    assert.throws(() => mlDsa65PublicKeyFromSpki(Uint8Array.from([...spki, 0])), /trailing bytes/);
    assert.throws(() => mlDsa65PublicKeyFromSpki(spki.subarray(0, spki.length - 1)), /truncated/);
    const unused = Uint8Array.from(spki);
    unused[21] = 0x01;
    assert.throws(() => mlDsa65PublicKeyFromSpki(unused), /unused bits/);
    assert.throws(() => mlDsa65PublicKeyFromSpki(mlDsa65Spki(key.publicKey.subarray(1))), /1951 bytes, expected 1952/);
  });

  it('refuses non-minimal and indefinite DER lengths', () => {
    const algorithm = derElement(0x30, ID_ML_DSA_65_DER);
    // A 1-byte length written in long form: 03 81 05 ...
    const shortKey = Uint8Array.from([0x03, 0x81, 0x05, 0x00, 1, 2, 3, 4]);
    assert.throws(() => mlDsa65PublicKeyFromSpki(derElement(0x30, Uint8Array.from([...algorithm, ...shortKey]))), /non-minimal length/);
    assert.throws(() => mlDsa65PublicKeyFromSpki(Uint8Array.from([0x30, 0x80, 0x00, 0x00])), /unsupported length/);
  });
});
