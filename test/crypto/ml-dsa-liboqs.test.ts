/**
 * Conformance of LocalMlDsaSigner's production path: key pair from the seed by noble, hedged
 * signing by liboqs (@oqs/liboqs-js), verification by noble (verifyMlDsa65). Every signature the
 * liboqs path makes must verify with noble under the noble-derived public key, NIST ACVP keys
 * included; tampering must fail.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';
import { createMLDSA65, type MLDSA65 } from '@oqs/liboqs-js';
import { bytesToHex, hexToBytes, sha256Hex } from '../../lib/crypto/hash.js';
import { LocalMlDsaSigner, ML_DSA_65_SIGNATURE_BYTES, verifyMlDsa65 } from '../../lib/crypto/ml-dsa.js';

const VECTORS_DIR = new URL('../vectors/', import.meta.url);

function loadCases<T extends { parameterSet: string }>(file: string, count: number): T[] {
  if (!existsSync(VECTORS_DIR)) throw new Error(`test vectors directory not found: ${fileURLToPath(VECTORS_DIR)}`);
  const cases = JSON.parse(readFileSync(new URL(file, VECTORS_DIR), 'utf8')) as T[];
  assert.equal(cases.length, count, `${file}: number of cases`);
  for (const c of cases) assert.equal(c.parameterSet, 'ML-DSA-65', `${file}: unexpected parameter set`);
  return cases;
}

function flipBit(bytes: Uint8Array, index: number, bit = 0): Uint8Array {
  const copy = Uint8Array.from(bytes);
  copy[index]! ^= 1 << bit;
  return copy;
}

const seed = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);

describe('LocalMlDsaSigner (liboqs signing) against noble verification', () => {
  it('keeps the key identity of the seed: public key, key id and fingerprint are noble’s', async () => {
    const { publicKey } = ml_dsa65.keygen(Uint8Array.from(seed));
    const signer = LocalMlDsaSigner.fromSeed(seed);
    assert.deepEqual(await signer.publicKey(), publicKey);
    assert.equal(signer.fingerprint, sha256Hex(publicKey));
    assert.equal(signer.keyId, `mldsa65:${sha256Hex(publicKey).slice(0, 16)}`);
  });

  it('signs messages of every length (empty to 4096 bytes, and 64 server hashes) so that verifyMlDsa65 accepts them', async () => {
    const signer = LocalMlDsaSigner.fromSeed(seed);
    const publicKey = await signer.publicKey();
    const lengths = [0, 1, 2, 31, 32, 33, 64, 100, 255, 256, 1000, 1024, 3309, 4095, 4096];
    const messages = [...lengths.map((n) => Uint8Array.from(randomBytes(n))), ...Array.from({ length: 64 }, () => Uint8Array.from(randomBytes(32)))];
    for (const message of messages) {
      const signature = await signer.sign(message);
      assert.equal(signature.length, ML_DSA_65_SIGNATURE_BYTES, `${message.length}-byte message`);
      assert.equal(verifyMlDsa65(signature, message, publicKey), true, `${message.length}-byte message`);
    }
  });

  it('makes signatures that fail verification once the signature, the message or the key is altered', async () => {
    const signer = LocalMlDsaSigner.fromSeed(seed);
    const publicKey = await signer.publicKey();
    for (const message of [new Uint8Array(0), Uint8Array.from(randomBytes(32)), Uint8Array.from(randomBytes(4096))]) {
      const signature = await signer.sign(message);
      // c̃ (start), z (middle), hint (end).
      for (const index of [0, 47, 48, 1700, 3200, ML_DSA_65_SIGNATURE_BYTES - 1]) {
        assert.equal(verifyMlDsa65(flipBit(signature, index, index % 8), message, publicKey), false, `${message.length}-byte message, signature byte ${index}`);
      }
      if (message.length > 0) assert.equal(verifyMlDsa65(signature, flipBit(message, message.length - 1), publicKey), false);
      assert.equal(verifyMlDsa65(signature, Uint8Array.of(...message, 0), publicKey), false, 'one byte appended');
      assert.equal(verifyMlDsa65(signature, message, flipBit(publicKey, 500)), false, 'altered public key');
      assert.equal(verifyMlDsa65(signature.subarray(0, -1), message, publicKey), false, 'truncated signature');
    }
  });

  it('does not verify under another seed’s key', async () => {
    const [a, b] = [LocalMlDsaSigner.fromSeed(seed), LocalMlDsaSigner.fromSeed(new Uint8Array(32))];
    const message = Uint8Array.from(randomBytes(32));
    assert.equal(verifyMlDsa65(await a.sign(message), message, await b.publicKey()), false);
  });

  it('signs hedged: signatures of one message differ and all verify', async () => {
    const signer = LocalMlDsaSigner.fromSeed(seed);
    const message = Uint8Array.from(randomBytes(32));
    const signatures = await Promise.all(Array.from({ length: 8 }, () => signer.sign(message)));
    assert.equal(new Set(signatures.map(bytesToHex)).size, signatures.length);
    for (const s of signatures) assert.equal(verifyMlDsa65(s, message, await signer.publicKey()), true);
  });

  it('shares one liboqs instance between concurrent signers without mixing their keys', async () => {
    const signers = [LocalMlDsaSigner.fromSeed(seed), LocalMlDsaSigner.fromSeed(Uint8Array.from(randomBytes(32)))];
    const keys = await Promise.all(signers.map((s) => s.publicKey()));
    const jobs = Array.from({ length: 40 }, (_, i) => ({ who: i % 2, message: Uint8Array.from(randomBytes(32)) }));
    const signatures = await Promise.all(jobs.map((j) => signers[j.who]!.sign(j.message)));
    jobs.forEach((j, i) => {
      assert.equal(verifyMlDsa65(signatures[i]!, j.message, keys[j.who]!), true, `job ${i}`);
      assert.equal(verifyMlDsa65(signatures[i]!, j.message, keys[1 - j.who]!), false, `job ${i}, other key`);
    });
  });

  it('accepts a Buffer message (liboqs itself takes plain Uint8Arrays only)', async () => {
    const signer = LocalMlDsaSigner.fromSeed(seed);
    const message = randomBytes(32);
    assert.equal(verifyMlDsa65(await signer.sign(message), message, await signer.publicKey()), true);
  });

  it('rejects a message that is not bytes', async () => {
    const signer = LocalMlDsaSigner.fromSeed(seed);
    await assert.rejects(signer.sign('not bytes' as unknown as Uint8Array), TypeError);
  });

  it('signs the deterministic test mode with noble: rnd = 0^32, reproducible, equal to noble’s own signature', async () => {
    const signer = LocalMlDsaSigner.fromSeed(seed, { deterministic: true });
    const { secretKey } = ml_dsa65.keygen(Uint8Array.from(seed));
    const message = Uint8Array.from(randomBytes(32));
    const signature = await signer.sign(message);
    assert.deepEqual(signature, ml_dsa65.sign(message, secretKey, { extraEntropy: false }));
    assert.deepEqual(await signer.sign(message), signature);
    assert.equal(verifyMlDsa65(signature, message, await signer.publicKey()), true);
  });
});

describe('the liboqs signing path on the NIST ACVP vectors', () => {
  let oqs: MLDSA65;

  before(async () => {
    oqs = await createMLDSA65();
  });

  after(() => {
    oqs.destroy();
  });

  it('keyGen: noble reproduces each pk and sk from ξ; liboqs signatures with the sk, and the signer’s, verify under the pk (25 cases)', async () => {
    const cases = loadCases<{ tcId: number; parameterSet: string; seed: string; pk: string; sk: string }>('ml-dsa-65-keygen.json', 25);
    for (const c of cases) {
      const { publicKey, secretKey } = ml_dsa65.keygen(hexToBytes(c.seed));
      assert.equal(bytesToHex(publicKey), c.pk, `tcId ${c.tcId}: pk`);
      assert.equal(bytesToHex(secretKey), c.sk, `tcId ${c.tcId}: sk`);
      const pk = hexToBytes(c.pk);
      const message = Uint8Array.from(randomBytes(32));
      const byLiboqs = oqs.sign(message, hexToBytes(c.sk));
      assert.equal(verifyMlDsa65(byLiboqs, message, pk), true, `tcId ${c.tcId}: liboqs with the vector's sk`);
      const signer = LocalMlDsaSigner.fromSeed(hexToBytes(c.seed));
      const bySigner = await signer.sign(message);
      assert.equal(verifyMlDsa65(bySigner, message, pk), true, `tcId ${c.tcId}: signer`);
      assert.equal(verifyMlDsa65(flipBit(bySigner, 2000), message, pk), false, `tcId ${c.tcId}: tampered`);
    }
  });

  it('sigGen keys and messages: liboqs signatures (empty context) verify with verifyMlDsa65 (15 cases)', () => {
    const cases = loadCases<{ tcId: number; parameterSet: string; sk: string; message: string; context: string; signature: string }>('ml-dsa-65-siggen.json', 15);
    let emptyContext = 0;
    for (const c of cases) {
      const [sk, message] = [hexToBytes(c.sk), hexToBytes(c.message)];
      const pk = ml_dsa65.getPublicKey(sk);
      const signature = oqs.sign(message, sk);
      assert.equal(verifyMlDsa65(signature, message, pk), true, `tcId ${c.tcId}`);
      assert.equal(verifyMlDsa65(signature, flipBit(message, 0), pk), false, `tcId ${c.tcId}: tampered message`);
      if (c.context === '') {
        // liboqs signs pure ML-DSA with an empty context: it accepts NIST's deterministic signature.
        emptyContext++;
        assert.equal(oqs.verify(message, hexToBytes(c.signature), pk), true, `tcId ${c.tcId}: NIST signature under liboqs`);
      }
    }
    assert.equal(emptyContext, 1);
  });

  it('sigVer: liboqs (pure, empty context) refuses every external case, as verifyMlDsa65 does, and accepts none with a context', () => {
    type SigVerCase = { tcId: number; parameterSet: string; signatureInterface: string; pk: string; message: string; context?: string; signature: string; testPassed: boolean };
    const cases = loadCases<SigVerCase>('ml-dsa-65-sigver.json', 25).filter((c) => c.signatureInterface === 'external');
    assert.equal(cases.length, 15);
    for (const c of cases) {
      const [sig, msg, pk] = [hexToBytes(c.signature), hexToBytes(c.message), hexToBytes(c.pk)];
      // No valid external case has an empty context (ml-dsa-vectors.test.ts checks that with noble).
      const expected = c.testPassed && (c.context ?? '') === '';
      let accepted: boolean;
      try {
        accepted = oqs.verify(msg, sig, pk);
      } catch {
        accepted = false; // liboqs-js refuses malformed lengths by throwing
      }
      assert.equal(accepted, expected, `tcId ${c.tcId}`);
      assert.equal(verifyMlDsa65(sig, msg, pk), expected, `tcId ${c.tcId}: verifyMlDsa65`);
    }
  });
});
