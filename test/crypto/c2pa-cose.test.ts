/**
 * The C2PA COSE_Sign1 of lib/crypto/c2pa/cose-sign1.ts, decoded with cborg: its structure (tag 18,
 * alg and x5chain protected, sigTst2 and pad unprotected, detached payload), the two to-be-signed
 * structures, and the padding, which must hit the reserved length exactly for every length,
 * the ones a single pad cannot reach included.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Tagged, decode } from 'cborg';
import { claimToBeSigned, coseSign1, protectedHeader, timestampToBeStamped } from '../../lib/crypto/c2pa/cose-sign1.js';

const cert = new Uint8Array(300).fill(0x30);
const intermediate = new Uint8Array(280).fill(0x31);
const signature = new Uint8Array(64).fill(0xab);
const token = new Uint8Array(1500).fill(0x42);

describe('C2PA COSE_Sign1', () => {
  it('protects alg (ES256, -7) and x5chain (33: one bstr, or an array for a chain)', () => {
    assert.deepEqual(decode(protectedHeader('ES256', [cert]), { useMaps: true }), new Map<number, unknown>([[1, -7], [33, cert]]));
    assert.deepEqual(decode(protectedHeader('ES256', [cert, intermediate]), { useMaps: true }), new Map<number, unknown>([[1, -7], [33, [cert, intermediate]]]));
  });

  it('signs ["Signature1", protected, h\'\', claim] and stamps ["CounterSignature", protected, h\'\', bstr .cbor signature]', () => {
    const protectedBytes = protectedHeader('ES256', [cert]);
    const claim = new Uint8Array([0xa1, 0x61, 0x61, 0x01]);
    assert.deepEqual(decode(claimToBeSigned(protectedBytes, claim)), ['Signature1', protectedBytes, new Uint8Array(0), claim]);
    const stamped = decode(timestampToBeStamped(protectedBytes, signature)) as [string, Uint8Array, Uint8Array, Uint8Array];
    assert.deepEqual(stamped.slice(0, 3), ['CounterSignature', protectedBytes, new Uint8Array(0)]);
    assert.deepEqual(decode(stamped[3]), signature);
  });

  it('is COSE_Sign1_Tagged with sigTst2 {tstTokens: [{val}]} and a zero pad, payload nil', () => {
    const protectedBytes = protectedHeader('ES256', [cert]);
    const out = coseSign1({ protectedBytes, signature, timestampToken: token, size: 4000 });
    const tagged = decode(out, { useMaps: true, tags: Tagged.preserve(18) }) as Tagged;
    assert.equal(tagged.tag, 18);
    const [p, unprotected, payload, sig] = tagged.value as [Uint8Array, Map<string, unknown>, null, Uint8Array];
    assert.deepEqual(p, protectedBytes);
    assert.equal(payload, null);
    assert.deepEqual(sig, signature);
    assert.deepEqual(unprotected.get('sigTst2'), new Map([['tstTokens', [new Map([['val', token]])]]]));
    assert.ok((unprotected.get('pad') as Uint8Array).every((b) => b === 0));
  });

  it('is exactly the reserved length for every length from the bare size to 2 KiB beyond it, and around a 64 KiB pad', () => {
    const protectedBytes = protectedHeader('ES256', [cert]);
    const minimum = coseSign1({ protectedBytes, signature, timestampToken: token, size: 100_000 });
    assert.equal(minimum.length, 100_000);
    let smallest = 0;
    for (let size = 1; size < 3000 && smallest === 0; size++) {
      try {
        coseSign1({ protectedBytes, signature, timestampToken: token, size });
        smallest = size;
      } catch {
        // too small
      }
    }
    assert.ok(smallest > 0);
    for (let size = smallest + 65_520; size < smallest + 65_560; size++) assert.equal(coseSign1({ protectedBytes, signature, timestampToken: token, size }).length, size, `size ${size}`);
    for (let size = smallest; size < smallest + 2048; size++) assert.equal(coseSign1({ protectedBytes, signature, timestampToken: token, size }).length, size, `size ${size}`);
    assert.throws(() => coseSign1({ protectedBytes, signature, timestampToken: token, size: smallest - 1 }), /more than the/);
  });
});
