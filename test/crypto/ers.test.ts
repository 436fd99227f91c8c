import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  type ArchiveTimeStamp,
  ErsFormatError,
  buildHashTree,
  encodeArchiveTimeStamp,
  encodeEvidenceRecord,
  ersDigest,
  parseArchiveTimeStamp,
  parseEvidenceRecord,
  rootOfReducedTree,
} from '../../lib/crypto/ers.js';

/**
 * RFC 4998 structures and hash trees without the stack (lib/crypto/ers.ts): every leaf's reduced
 * hash tree leads to the root by the RFC's §4.3 walk, for every tree size up to 33 and for leaf
 * groups; the hash rule is the RFC's (sorted concatenation), checked by hand on a tree of two;
 * the DER encodes back to itself and the parser refuses what is not DER or not a record.
 */

const h = (s: string) => Uint8Array.from(createHash('sha256').update(s).digest());
/** Stands for a timestamp token in structure tests: a DER SEQUENCE (a ContentInfo is one). */
const fakeToken = (n: number) => Uint8Array.from([0x30, 0x03, 0x02, 0x01, n & 0x7f]);

describe('RFC 4998 hash trees', () => {
  it('a tree of two: the root is SHA-256 of the two leaves in binary ascending order (§4.2)', () => {
    const [a, b] = [h('a'), h('b')];
    const [lo, hi] = Buffer.compare(Buffer.from(a), Buffer.from(b)) <= 0 ? [a, b] : [b, a];
    const tree = buildHashTree('SHA-256', [[a], [b]]);
    assert.deepEqual(tree.root, Uint8Array.from(createHash('sha256').update(lo).update(hi).digest()));
    assert.deepEqual(tree.reduced(0), [[a], [b]]);
  });

  it('every leaf of every tree of 1 to 33 leaves leads to the root by its reduced hash tree, and no other leaf does', () => {
    for (let n = 1; n <= 33; n++) {
      const leaves = Array.from({ length: n }, () => Uint8Array.from(randomBytes(32)));
      const tree = buildHashTree('SHA-256', leaves.map((l) => [l]));
      for (let i = 0; i < n; i++) {
        const reduced = tree.reduced(i);
        assert.ok(reduced[0]?.some((x) => Buffer.from(x).equals(Buffer.from(leaves[i] as Uint8Array))), `n=${n} i=${i}: the first list holds the leaf`);
        assert.ok(reduced.slice(1).every((list) => list.length === 1), 'one value per later list');
        assert.ok(reduced.length <= Math.ceil(Math.log2(n)) + 1);
        assert.deepEqual(rootOfReducedTree('SHA-256', reduced), tree.root, `n=${n} i=${i}`);
      }
      if (n > 1) {
        const forged = tree.reduced(0);
        forged[0] = [Uint8Array.from(randomBytes(32))];
        assert.notDeepEqual(rootOfReducedTree('SHA-256', forged), tree.root);
      }
    }
  });

  it('leaf groups: a group node is the hash of its sorted values, and its reduced tree starts with all of them', () => {
    const groups = [[h('t0'), h('t1')], [h('u0')], [h('v0'), h('v1'), h('v2')]];
    const tree = buildHashTree('SHA-512', groups);
    for (let i = 0; i < groups.length; i++) {
      const reduced = tree.reduced(i);
      assert.equal(reduced[0]?.length, groups[i]?.length);
      assert.deepEqual(rootOfReducedTree('SHA-512', reduced), tree.root);
    }
    assert.equal(tree.root.length, 64);
    assert.deepEqual(ersDigest('SHA-512', new Uint8Array()).length, 64);
  });
});

describe('RFC 4998 DER', () => {
  const ats = (n: number): ArchiveTimeStamp => ({ digestAlgorithm: 'SHA-256', reducedHashtree: [[h(`x${n}`)], [h(`y${n}`)]], timeStamp: fakeToken(n) });

  it('an EvidenceRecord encodes to DER that parses back to the same record, tokens byte for byte', () => {
    const record = { digestAlgorithms: ['SHA-256' as const, 'SHA-512' as const], chains: [[ats(1), ats(2)], [{ ...ats(3), digestAlgorithm: 'SHA-512' as const }]] };
    const der = encodeEvidenceRecord(record);
    assert.equal(der[0], 0x30);
    const back = parseEvidenceRecord(der);
    assert.deepEqual(back, record);
    assert.deepEqual(encodeEvidenceRecord(back), der);
    // [0] IMPLICIT AlgorithmIdentifier (0xa0) and [2] IMPLICIT SEQUENCE OF PartialHashtree (0xa2).
    const one = encodeArchiveTimeStamp(ats(7));
    assert.equal(one[2], 0xa0);
    assert.ok(Buffer.from(one).includes(Buffer.from([0xa2])));
    assert.deepEqual(parseArchiveTimeStamp(one), ats(7));
    // A record large enough for long-form lengths (over 127 and over 255 bytes).
    const big = { digestAlgorithms: ['SHA-256' as const], chains: [Array.from({ length: 12 }, (_, i) => ats(i))] };
    assert.deepEqual(parseEvidenceRecord(encodeEvidenceRecord(big)), big);
  });

  it('refuses trailing bytes, a BER length, another version, a hash it does not support, an empty record and what is no record', () => {
    const der = encodeEvidenceRecord({ digestAlgorithms: ['SHA-256'], chains: [[ats(1)]] });
    assert.throws(() => parseEvidenceRecord(Uint8Array.from([...der, 0])), ErsFormatError);
    // The same record with its outer length in long form (BER, not DER).
    const ber = Uint8Array.from([0x30, 0x81, der[1] as number, ...der.slice(2)]);
    if ((der[1] as number) < 0x80) assert.throws(() => parseEvidenceRecord(ber), ErsFormatError);
    const v2 = Uint8Array.from(der);
    v2[4] = 2; // INTEGER 1 → 2 (30 len 02 01 01 …)
    assert.throws(() => parseEvidenceRecord(v2), /version 1/);
    assert.throws(() => parseEvidenceRecord(new Uint8Array([0x30, 0x00])), ErsFormatError);
    assert.throws(() => parseEvidenceRecord(new TextEncoder().encode('not a record')), ErsFormatError);
    // SHA-224 (2.16.840.1.101.3.4.2.4) in place of SHA-256: same length, an algorithm records do not use.
    const sha224 = Buffer.from(Buffer.from(der).toString('hex').replaceAll('0609608648016503040201', '0609608648016503040204'), 'hex');
    assert.throws(() => parseEvidenceRecord(Uint8Array.from(sha224)), /2\.16\.840\.1\.101\.3\.4\.2\.4 is not supported/);
  });
});

describe('the archive stamper\'s requests', () => {
  it('are DER whatever the random nonce: a first byte 0x00 or 0x80 (1 in 128) still gives a request the TSA grants', async () => {
    const { timeStampRequest } = await import('../../lib/crypto/ers-stamper.js');
    const { generateTsaCertificates } = await import('../../lib/crypto/tsa/certificates.js');
    const { EmbeddedTsa } = await import('../../lib/crypto/tsa/embedded.js');
    const tsa = await EmbeddedTsa.create({ ...(await generateTsaCertificates()), policyOid: '2.25.1' });
    const digest = createHash('sha512').update('a photo').digest();
    for (const first of [0x00, 0x80, 0x7f, 0xff]) {
      const random = Uint8Array.from([first, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77]);
      const answer = await tsa.answer(timeStampRequest('SHA-512', digest, random));
      assert.equal(answer.granted, true, `nonce starting ${first.toString(16)}: ${'text' in answer ? answer.text : ''}`);
    }
  });
});
