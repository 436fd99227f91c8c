/**
 * noble's ML-DSA-65 against the NIST ACVP vectors in test/vectors (provenance: its README.txt), run the way
 * vectors/README.txt prescribes: keyGen from the seed ξ, sigVer through the external (pure, with
 * context) or the internal interface as each group says, sigGen deterministically (rnd = 0^32).
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';
import { bytesToHex, hexToBytes } from '../../lib/crypto/hash.js';
import { LocalMlDsaSigner, verifyMlDsa65 } from '../../lib/crypto/ml-dsa.js';

interface KeyGenCase {
  tcId: number;
  parameterSet: string;
  seed: string;
  pk: string;
  sk: string;
}

interface SigVerCase {
  tcId: number;
  parameterSet: string;
  signatureInterface: 'external' | 'internal';
  preHash: string | null;
  externalMu: boolean;
  pk: string;
  message: string;
  context?: string;
  signature: string;
  testPassed: boolean;
  reason: string;
}

interface SigGenCase {
  tcId: number;
  parameterSet: string;
  deterministic: boolean;
  signatureInterface: string;
  preHash: string;
  sk: string;
  message: string;
  context: string;
  signature: string;
}

const VECTORS_DIR = new URL('../vectors/', import.meta.url);

function loadCases<T extends { parameterSet: string }>(file: string): T[] {
  if (!existsSync(VECTORS_DIR)) {
    throw new Error(`test vectors directory not found: ${fileURLToPath(VECTORS_DIR)} (test/vectors, see its README.txt)`);
  }
  const cases = JSON.parse(readFileSync(new URL(file, VECTORS_DIR), 'utf8')) as T[];
  if (!Array.isArray(cases) || cases.length === 0) throw new Error(`${file} yields no test cases`);
  for (const c of cases) assert.equal(c.parameterSet, 'ML-DSA-65', `${file}: unexpected parameter set`);
  return cases;
}

describe('ML-DSA-65 NIST ACVP vectors', () => {
  it('keyGen: the seed ξ yields the expected public and secret keys (25 cases)', async () => {
    const cases = loadCases<KeyGenCase>('ml-dsa-65-keygen.json');
    assert.equal(cases.length, 25);
    for (const c of cases) {
      const seed = hexToBytes(c.seed);
      const { publicKey, secretKey } = ml_dsa65.keygen(seed);
      assert.equal(bytesToHex(publicKey), c.pk, `tcId ${c.tcId}: public key`);
      assert.equal(bytesToHex(secretKey), c.sk, `tcId ${c.tcId}: secret key`);
      assert.equal(bytesToHex(ml_dsa65.getPublicKey(hexToBytes(c.sk))), c.pk, `tcId ${c.tcId}: public key from secret key`);
      // The service signer derives the same key pair from the same seed.
      assert.equal(bytesToHex(await LocalMlDsaSigner.fromSeed(seed).publicKey()), c.pk, `tcId ${c.tcId}: signer public key`);
    }
  });

  it('sigVer: external pure and internal verification give the expected results (25 cases, 6 valid, 19 invalid)', () => {
    const cases = loadCases<SigVerCase>('ml-dsa-65-sigver.json');
    assert.equal(cases.length, 25);
    assert.equal(cases.filter((c) => c.testPassed).length, 6);
    assert.equal(cases.filter((c) => !c.testPassed).length, 19);
    const external = cases.filter((c) => c.signatureInterface === 'external');
    const internal = cases.filter((c) => c.signatureInterface === 'internal');
    assert.equal(external.length, 15);
    assert.equal(internal.length, 10);

    for (const c of external) {
      assert.equal(c.preHash, 'pure', `tcId ${c.tcId}`);
      assert.equal(typeof c.context, 'string', `tcId ${c.tcId}: external case without context`);
      const [sig, msg, pk] = [hexToBytes(c.signature), hexToBytes(c.message), hexToBytes(c.pk)];
      const context = hexToBytes(c.context ?? '');
      // FIPS 204 Algorithm 3: M' = 0x00 || len(ctx) || ctx || M.
      assert.equal(ml_dsa65.verify(sig, msg, pk, { context }), c.testPassed, `tcId ${c.tcId}: ${c.reason}`);
      // verifyMlDsa65 is pure ML-DSA with an empty context: it may accept only a valid signature
      // made with an empty context. No valid external case here has one, so all must fail.
      const expected = c.testPassed && context.length === 0;
      assert.equal(verifyMlDsa65(sig, msg, pk), expected, `tcId ${c.tcId}: verifyMlDsa65`);
    }

    for (const c of internal) {
      assert.equal(c.context, undefined, `tcId ${c.tcId}: internal case with context`);
      assert.equal(c.externalMu, false, `tcId ${c.tcId}`);
      const [sig, msg, pk] = [hexToBytes(c.signature), hexToBytes(c.message), hexToBytes(c.pk)];
      // FIPS 204 Algorithm 8 on the raw message, no domain-separation prefix.
      assert.equal(ml_dsa65.internal.verify(sig, msg, pk), c.testPassed, `tcId ${c.tcId}: ${c.reason}`);
    }
  });

  it('sigGen: deterministic pure signing reproduces the expected signatures (15 cases)', () => {
    const cases = loadCases<SigGenCase>('ml-dsa-65-siggen.json');
    assert.equal(cases.length, 15);
    let emptyContextCases = 0;
    for (const c of cases) {
      assert.equal(c.deterministic, true, `tcId ${c.tcId}`);
      assert.equal(c.signatureInterface, 'external', `tcId ${c.tcId}`);
      assert.equal(c.preHash, 'pure', `tcId ${c.tcId}`);
      const [sk, msg, context] = [hexToBytes(c.sk), hexToBytes(c.message), hexToBytes(c.context)];
      // extraEntropy: false selects rnd = {0}^32, the deterministic variant (FIPS 204 Algorithm 2).
      const signature = ml_dsa65.sign(msg, sk, { context, extraEntropy: false });
      assert.equal(bytesToHex(signature), c.signature, `tcId ${c.tcId}: signature`);
      const pk = ml_dsa65.getPublicKey(sk);
      assert.equal(ml_dsa65.verify(signature, msg, pk, { context }), true, `tcId ${c.tcId}: verifies`);
      if (context.length === 0) {
        emptyContextCases++;
        assert.equal(verifyMlDsa65(hexToBytes(c.signature), msg, pk), true, `tcId ${c.tcId}: verifyMlDsa65`);
      }
    }
    // The one empty-context case ties verifyMlDsa65 to a NIST signature.
    assert.equal(emptyContextCases, 1);
  });
});
