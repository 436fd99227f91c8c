/**
 * The local keys' proofs on worker threads (lib/local/proof-threads.ts, PROOF_THREADS): the
 * threads sign under the process's key and issue tokens that verify, classic with its
 * certificates and nonce, post-quantum without its certificates; a pool whose key is not the
 * process's is refused at start.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { LocalMlDsaSigner, verifyMlDsa65 } from '../../lib/crypto/ml-dsa.js';
import { ProofThreads, type ProofKeys } from '../../lib/local/proof-threads.js';
import { generateTsaCertificates } from '../../lib/crypto/tsa/certificates.js';
import { EmbeddedTsa } from '../../lib/crypto/tsa/embedded.js';
import { generatePqTsaCertificates } from '../../lib/crypto/tsa/pq-certificates.js';
import { verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';

const POLICY = '1.3.6.1.4.1.55555.1.1';
const PQ_POLICY = '1.3.6.1.4.1.55555.1.2';

describe('proofs made on worker threads', () => {
  let keys: ProofKeys;
  let local: LocalMlDsaSigner;
  let threads: ProofThreads;

  before(async () => {
    const seed = randomBytes(32);
    const [classic, pq] = await Promise.all([generateTsaCertificates(), generatePqTsaCertificates()]);
    keys = {
      signerSeedHex: seed.toString('hex'),
      tsa: { rootCertPem: classic.rootCertPem, tsaCertPem: classic.tsaCertPem, tsaKeyPkcs8Pem: classic.tsaKeyPkcs8Pem, policyOid: POLICY },
      pqTsa: { rootCertPem: pq.rootCertPem, tsaCertPem: pq.tsaCertPem, tsaKeyPkcs8Pem: pq.tsaKeyPkcs8Pem, policyOid: PQ_POLICY },
    };
    local = LocalMlDsaSigner.fromSeed(seed);
    threads = await ProofThreads.start(keys, 1, local.keyId);
  });
  after(() => threads.close());

  it("sign under the process's ML-DSA-65 key: every signature verifies with its public key", async () => {
    const signer = threads.signer(local);
    assert.equal(signer.keyId, local.keyId);
    const messages = Array.from({ length: 6 }, () => randomBytes(32));
    const signatures = await Promise.all(messages.map((m) => signer.sign(m)));
    const publicKey = await local.publicKey();
    for (const [i, signature] of signatures.entries()) {
      assert.equal(signature.length, 3309);
      assert.ok(verifyMlDsa65(signature, messages[i] as Uint8Array, publicKey), `signature ${i} verifies`);
      assert.ok(!verifyMlDsa65(signature, messages[(i + 1) % messages.length] as Uint8Array, publicKey), `and only over its own message`);
    }
  });

  it('issue classic tokens that verify against the root, with the TSA certificates of the process', async () => {
    const tsa = threads.tsa(await EmbeddedTsa.create(keys.tsa));
    const imprint = randomBytes(32);
    const issued = await tsa.timestamp(imprint);
    assert.ok(issued.genTime instanceof Date);
    assert.equal(issued.policy, POLICY);
    const verdict = await verifyTimestampResponse(issued.response, { imprint, roots: [keys.tsa.rootCertPem], policy: POLICY });
    assert.ok(verdict.ok, JSON.stringify(verdict, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)));
    assert.equal((await tsa.certificates()).length, 2);
    const other = await verifyTimestampResponse(issued.response, { imprint: randomBytes(32), roots: [keys.tsa.rootCertPem] });
    assert.ok(!other.ok, 'for its own imprint only');
  });

  it('issue post-quantum tokens without their certificates, which verify with the chain given apart', async () => {
    const imprint = randomBytes(32);
    const issued = await threads.pqTimestamp(imprint);
    assert.equal(issued.policy, PQ_POLICY);
    const pq = keys.pqTsa as NonNullable<ProofKeys['pqTsa']>;
    const verdict = await verifyTimestampResponse(issued.response, { imprint, roots: [pq.rootCertPem], untrusted: [pq.tsaCertPem], policy: PQ_POLICY });
    assert.ok(verdict.ok, JSON.stringify(verdict, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)));
    const without = await verifyTimestampResponse(issued.response, { imprint, roots: [pq.rootCertPem], policy: PQ_POLICY });
    assert.ok(!without.ok, 'the token carries no certificate (certReq false)');
  });

  it("refuse to start when the threads' key is not the process's", async () => {
    const other = LocalMlDsaSigner.fromSeed(randomBytes(32));
    await assert.rejects(ProofThreads.start(keys, 1, other.keyId), /the proof threads sign under mldsa65:[0-9a-f]{16}, the process under mldsa65:/);
  });
});
