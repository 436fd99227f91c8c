/**
 * node:crypto's ML-DSA-65 (OpenSSL 3.5, Node ≥ 24.6): the public verifier (verifyMlDsa65) and the
 * KMS signature check on the runtime the service runs (the npm scripts' pinned Node 24, Lambda's
 * nodejs24.x). Checked against the NIST ACVP vectors of test/vectors and, both ways, against noble
 * and liboqs.
 *
 * What node:crypto lets us check, and what not:
 * - keyGen: the key pair from ξ (PKCS#8 seed form); the expanded secret key only as Node 24 exports it
 *   (PKCS#8 "both" form; Node 26 exports the seed alone, nodejs/node#62178).
 * - sigVer, external interface (pure, with context): all 15 cases. The internal interface
 *   (ML-DSA.Verify_internal, no M' prefix) is not offered by node:crypto: its 10 cases stay with
 *   noble (ml-dsa-vectors.test.ts); here only that node:crypto refuses their valid signatures.
 * - sigGen: node:crypto signs hedged only (it passes no rnd and no "deterministic" parameter to
 *   OpenSSL), so NIST's deterministic signatures cannot be reproduced; node:crypto verifies them,
 *   and signs the same keys, messages and contexts in a way noble verifies.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, randomBytes, sign as nodeSign, verify as nodeVerify, type KeyObject } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';
import { createMLDSA65, type MLDSA65 } from '@oqs/liboqs-js';
import { bytesToHex, hexToBytes } from '../../lib/crypto/hash.js';
import {
  LocalMlDsaSigner,
  ML_DSA_65_SIGNATURE_BYTES,
  mlDsa65PublicKeyFromSpki,
  nodeCryptoMlDsa65,
  verifyMlDsa65,
  verifyMlDsa65Node,
  verifyMlDsa65Noble,
} from '../../lib/crypto/ml-dsa.js';

const VECTORS_DIR = new URL('../vectors/', import.meta.url);
const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
const nodeHasMlDsa = major > 24 || (major === 24 && minor >= 6);
const skip = nodeCryptoMlDsa65() ? false : `node:crypto of Node ${process.version} has no ML-DSA (Node ≥ 24.6 has): the npm scripts run the pinned Node 24, so this skips only on another Node`;

function loadCases<T extends { parameterSet: string }>(file: string, count: number): T[] {
  if (!existsSync(VECTORS_DIR)) throw new Error(`test vectors directory not found: ${fileURLToPath(VECTORS_DIR)}`);
  const cases = JSON.parse(readFileSync(new URL(file, VECTORS_DIR), 'utf8')) as T[];
  assert.equal(cases.length, count, `${file}: number of cases`);
  for (const c of cases) assert.equal(c.parameterSet, 'ML-DSA-65', `${file}: unexpected parameter set`);
  return cases;
}

// RFC 9881 §6 private key forms and §4 SubjectPublicKeyInfo, as DER prefixes of fixed length.
const PKCS8_SEED = '3034020100300b0609608648016503040312' + '0422' + '8020';
const PKCS8_EXPANDED = '30820fd8020100300b0609608648016503040312' + '04820fc4' + '04820fc0';
const PKCS8_BOTH = '30820ffe020100300b0609608648016503040312' + '04820fea' + '30820fe6' + '0420';

function keyFromSeed(seed: Uint8Array): KeyObject {
  return createPrivateKey({ key: Buffer.concat([Buffer.from(PKCS8_SEED, 'hex'), seed]), format: 'der', type: 'pkcs8' });
}

function keyFromExpanded(sk: Uint8Array): KeyObject {
  return createPrivateKey({ key: Buffer.concat([Buffer.from(PKCS8_EXPANDED, 'hex'), sk]), format: 'der', type: 'pkcs8' });
}

function rawPublicKey(key: KeyObject): Uint8Array {
  return mlDsa65PublicKeyFromSpki(createPublicKey(key).export({ format: 'der', type: 'spki' }));
}

function spki(publicKey: Uint8Array): { key: Buffer; format: 'der'; type: 'spki' } {
  return { key: Buffer.concat([Buffer.from('308207b2300b0609608648016503040312038207a100', 'hex'), publicKey]), format: 'der', type: 'spki' };
}

function flipBit(bytes: Uint8Array, index: number): Uint8Array {
  const copy = Uint8Array.from(bytes);
  copy[index]! ^= 1 << index % 8;
  return copy;
}

describe('node:crypto ML-DSA-65 on this runtime', () => {
  it(`is detected exactly on Node ≥ 24.6 (this is ${process.version}): the service verifies with it there`, () => {
    assert.equal(nodeCryptoMlDsa65(), nodeHasMlDsa);
  });

  it('verifyMlDsa65Node says why on a Node without ML-DSA instead of calling every signature invalid', { skip: nodeCryptoMlDsa65() ? 'this Node has ML-DSA in node:crypto' : false }, () => {
    const signer = ml_dsa65.keygen(new Uint8Array(32));
    const message = new Uint8Array(32);
    assert.throws(() => verifyMlDsa65Node(ml_dsa65.sign(message, signer.secretKey), message, signer.publicKey), /cannot verify ML-DSA-65/);
  });
});

describe('node:crypto ML-DSA-65 on the NIST ACVP vectors', { skip }, () => {
  it('keyGen: the key from ξ has the vector pk, and exports the vector sk; the vector sk imports to the vector pk (25 cases)', () => {
    const cases = loadCases<{ tcId: number; parameterSet: string; seed: string; pk: string; sk: string }>('ml-dsa-65-keygen.json', 25);
    for (const c of cases) {
      const key = keyFromSeed(hexToBytes(c.seed));
      assert.equal(bytesToHex(rawPublicKey(key)), c.pk, `tcId ${c.tcId}: pk from ξ`);
      // Node 24 exports both forms: SEQUENCE { seed, expandedKey }.
      const pkcs8 = bytesToHex(key.export({ format: 'der', type: 'pkcs8' }));
      assert.equal(pkcs8, PKCS8_BOTH + c.seed + '04820fc0' + c.sk, `tcId ${c.tcId}: PKCS#8 export (seed and sk)`);
      assert.equal(bytesToHex(rawPublicKey(keyFromExpanded(hexToBytes(c.sk)))), c.pk, `tcId ${c.tcId}: pk from the vector sk`);
    }
  });

  it('sigVer, external pure interface with context: every case gives the expected result (15 cases)', () => {
    type SigVerCase = { tcId: number; parameterSet: string; signatureInterface: string; pk: string; message: string; context?: string; signature: string; testPassed: boolean; reason: string };
    const cases = loadCases<SigVerCase>('ml-dsa-65-sigver.json', 25).filter((c) => c.signatureInterface === 'external');
    assert.equal(cases.length, 15);
    for (const c of cases) {
      const [sig, msg, pk, context] = [hexToBytes(c.signature), hexToBytes(c.message), hexToBytes(c.pk), hexToBytes(c.context ?? '')];
      let accepted: boolean;
      try {
        accepted = nodeVerify(null, msg, { ...spki(pk), context }, sig);
      } catch {
        accepted = false;
      }
      assert.equal(accepted, c.testPassed, `tcId ${c.tcId}: ${c.reason}`);
      // The service's verifier is pure ML-DSA with an empty context; no valid case has one.
      assert.equal(verifyMlDsa65Node(sig, msg, pk), c.testPassed && context.length === 0, `tcId ${c.tcId}: verifyMlDsa65Node`);
    }
  });

  it('sigVer, internal interface: not offered by node:crypto; its valid signatures fail the external interface (3 of 10 cases)', () => {
    type SigVerCase = { tcId: number; parameterSet: string; signatureInterface: string; pk: string; message: string; signature: string; testPassed: boolean };
    const valid = loadCases<SigVerCase>('ml-dsa-65-sigver.json', 25).filter((c) => c.signatureInterface === 'internal' && c.testPassed);
    assert.equal(valid.length, 3);
    for (const c of valid) {
      const [sig, msg, pk] = [hexToBytes(c.signature), hexToBytes(c.message), hexToBytes(c.pk)];
      assert.equal(ml_dsa65.internal.verify(sig, msg, pk), true, `tcId ${c.tcId}: noble, internal`);
      assert.equal(verifyMlDsa65Node(sig, msg, pk), false, `tcId ${c.tcId}: node:crypto, external`);
    }
  });

  it('sigGen: NIST’s deterministic signatures verify with node:crypto; its own hedged ones with the same sk, message and context verify with noble (15 cases)', () => {
    type SigGenCase = { tcId: number; parameterSet: string; deterministic: boolean; sk: string; message: string; context: string; signature: string };
    const cases = loadCases<SigGenCase>('ml-dsa-65-siggen.json', 15);
    let emptyContext = 0;
    for (const c of cases) {
      assert.equal(c.deterministic, true);
      const [sk, msg, context, expected] = [hexToBytes(c.sk), hexToBytes(c.message), hexToBytes(c.context), hexToBytes(c.signature)];
      const pk = ml_dsa65.getPublicKey(sk);
      assert.equal(nodeVerify(null, msg, { ...spki(pk), context }, expected), true, `tcId ${c.tcId}: NIST signature`);
      assert.equal(nodeVerify(null, flipBit(msg, 0), { ...spki(pk), context }, expected), false, `tcId ${c.tcId}: altered message`);
      const key = keyFromExpanded(sk);
      const ours = nodeSign(null, msg, { key, context });
      assert.equal(ours.length, ML_DSA_65_SIGNATURE_BYTES);
      assert.equal(ml_dsa65.verify(ours, msg, pk, { context }), true, `tcId ${c.tcId}: node:crypto signature under noble`);
      // Hedged: another signature, so NIST's bytes cannot be reproduced here.
      assert.notEqual(bytesToHex(nodeSign(null, msg, { key, context })), bytesToHex(ours), `tcId ${c.tcId}: hedged`);
      if (context.length === 0) {
        emptyContext++;
        assert.equal(verifyMlDsa65Node(expected, msg, pk), true, `tcId ${c.tcId}: verifyMlDsa65Node`);
      }
    }
    assert.equal(emptyContext, 1);
  });
});

describe('node:crypto ML-DSA-65 against noble and liboqs', { skip }, () => {
  let oqs: MLDSA65;
  const seed = Uint8Array.from({ length: 32 }, (_, i) => 3 * i + 1);

  before(async () => {
    oqs = await createMLDSA65();
  });

  after(() => {
    oqs.destroy();
  });

  it('derives the public key noble and the service signer derive from the stored seed', async () => {
    assert.deepEqual(rawPublicKey(keyFromSeed(seed)), ml_dsa65.keygen(Uint8Array.from(seed)).publicKey);
    assert.deepEqual(rawPublicKey(keyFromSeed(seed)), await LocalMlDsaSigner.fromSeed(seed).publicKey());
  });

  it('signs so that noble and liboqs verify, and verifies what noble and liboqs sign (pure, empty context)', () => {
    const key = keyFromSeed(seed);
    const { publicKey, secretKey } = ml_dsa65.keygen(Uint8Array.from(seed));
    for (let i = 0; i < 16; i++) {
      const message = Uint8Array.from(randomBytes(i === 0 ? 0 : 32 * i));
      const byNode = Uint8Array.from(nodeSign(null, message, key)); // liboqs takes plain Uint8Arrays only
      assert.equal(ml_dsa65.verify(byNode, message, publicKey), true, `noble verifies node:crypto, ${message.length} bytes`);
      assert.equal(oqs.verify(message, byNode, publicKey), true, `liboqs verifies node:crypto, ${message.length} bytes`);
      assert.equal(verifyMlDsa65Node(ml_dsa65.sign(message, secretKey), message, publicKey), true, `node:crypto verifies noble, ${message.length} bytes`);
      assert.equal(verifyMlDsa65Node(oqs.sign(message, secretKey), message, publicKey), true, `node:crypto verifies liboqs, ${message.length} bytes`);
    }
  });

  it('agrees with noble on every altered signature, message and key', () => {
    const { publicKey, secretKey } = ml_dsa65.keygen(Uint8Array.from(seed));
    const message = Uint8Array.from(randomBytes(32));
    const signature = oqs.sign(message, secretKey);
    const trials: [string, Uint8Array, Uint8Array, Uint8Array][] = [['valid', signature, message, publicKey]];
    for (const index of [0, 31, 32, 47, 48, 1000, 1700, 3200, 3250, ML_DSA_65_SIGNATURE_BYTES - 1]) trials.push([`signature byte ${index}`, flipBit(signature, index), message, publicKey]);
    trials.push(['message', signature, flipBit(message, 7), publicKey], ['appended byte', signature, Uint8Array.of(...message, 0), publicKey]);
    trials.push(['public key byte 0', signature, message, flipBit(publicKey, 0)], ['public key byte 1900', signature, message, flipBit(publicKey, 1900)]);
    trials.push(['truncated signature', signature.subarray(1), message, publicKey], ['empty signature', new Uint8Array(0), message, publicKey]);
    trials.push(['hint bytes all 0xff', Uint8Array.of(...signature.subarray(0, 3309 - 61), ...new Uint8Array(61).fill(0xff)), message, publicKey]);
    for (const [what, sig, msg, pk] of trials) {
      assert.equal(verifyMlDsa65Node(sig, msg, pk), verifyMlDsa65Noble(sig, msg, pk), what);
      assert.equal(verifyMlDsa65Node(sig, msg, pk), what === 'valid', what);
    }
  });

  it('verifyMlDsa65 accepts and rejects as node:crypto does; verifyMlDsa65Node checks its arguments', () => {
    const { publicKey, secretKey } = ml_dsa65.keygen(Uint8Array.from(seed));
    const message = Uint8Array.from(randomBytes(32));
    const signature = oqs.sign(message, secretKey);
    assert.equal(verifyMlDsa65(signature, message, publicKey), true);
    assert.equal(verifyMlDsa65(flipBit(signature, 5), message, publicKey), false);
    assert.throws(() => verifyMlDsa65Node(signature, message, publicKey.subarray(1)), RangeError);
    assert.throws(() => verifyMlDsa65Node('x' as unknown as Uint8Array, message, publicKey), TypeError);
    assert.equal(verifyMlDsa65Node(signature, Buffer.from(message), Buffer.from(publicKey)), true, 'Buffers');
  });
});
