/**
 * The COSE_Sign1 of a C2PA claim signature (RFC 9052 §4.2; C2PA 2.1 §10.3.2.4 and §10.3.2.5), as
 * a callback signer of the official builder returns it: the builder hands over the claim's CBOR
 * and reserves a fixed number of bytes for the signature box; the signer returns the whole
 * COSE_Sign1_Tagged, exactly that long.
 *
 *     18([ protected: bstr .cbor {1: alg, 33: x5chain},
 *          unprotected: {"sigTst2": {"tstTokens": [{"val": TimeStampToken}]}, "pad": bstr},
 *          payload: nil (detached: the claim),
 *          signature ])
 *
 * The v2 time-stamp (`sigTst2`) stamps the signature, not the claim: its message imprint is the
 * SHA-256 of the COSE ToBeSigned with the context "CounterSignature" (RFC 9052 §4.4, C2PA 2.1
 * §10.3.2.5.3), `["CounterSignature", protected, h'', payload]`, whose payload is the signature
 * as a CBOR byte string, `bstr .cbor bstr(signature)`: what c2pa-rs, the official reader,
 * recomputes (a token over the bare signature bytes reads back as `timeStamp.mismatch`).
 *
 * CBOR comes from cborg (RFC 8949 preferred serialisation); nothing here is written by hand.
 */
import { Tagged, encode } from 'cborg';

/** COSE algorithm identifiers (IANA "COSE Algorithms") of the signatures we make. */
export const COSE_ALGORITHMS = { ES256: -7 } as const;
export type CoseAlgorithm = keyof typeof COSE_ALGORITHMS;

/** COSE header labels (RFC 9052 §3.1, RFC 9360 §2). */
const ALG = 1;
const X5CHAIN = 33;
/** The tag of COSE_Sign1_Tagged (RFC 9052 §2). */
const COSE_SIGN1_TAG = 18;

/**
 * The protected header, serialised: the algorithm and the signer's certificate chain, leaf first
 * (C2PA 2.1 §14.5: x5chain only in the protected bucket, under the integer label 33; one
 * certificate is a bare byte string, several an array, RFC 9360 §2).
 */
export function protectedHeader(alg: CoseAlgorithm, chainDer: readonly Uint8Array[]): Uint8Array {
  if (chainDer.length === 0) throw new Error('x5chain needs at least the signing certificate');
  const chain = chainDer.length === 1 ? bytes(chainDer[0] as Uint8Array) : chainDer.map(bytes);
  return encode(new Map<number, unknown>([[ALG, COSE_ALGORITHMS[alg]], [X5CHAIN, chain]]));
}

/** The bytes the claim signature signs: `["Signature1", protected, h'', claim]` (RFC 9052 §4.4, detached payload). */
export function claimToBeSigned(protectedBytes: Uint8Array, claim: Uint8Array): Uint8Array {
  return encode(['Signature1', bytes(protectedBytes), new Uint8Array(0), bytes(claim)]);
}

/**
 * The bytes a v2 time-stamp's message imprint is the SHA-256 of:
 * `["CounterSignature", protected, h'', bstr .cbor bstr(signature)]`.
 */
export function timestampToBeStamped(protectedBytes: Uint8Array, signature: Uint8Array): Uint8Array {
  return encode(['CounterSignature', bytes(protectedBytes), new Uint8Array(0), encode(bytes(signature))]);
}

export interface CoseSign1Parts {
  protectedBytes: Uint8Array;
  signature: Uint8Array;
  /** DER TimeStampToken (the CMS ContentInfo, not the TimeStampResp: C2PA 2.1 §10.3.2.5.4) for `sigTst2`. */
  timestampToken?: Uint8Array;
  /** The exact length the builder reserved (its `reserveSize`); the `pad` header fills the rest. */
  size: number;
}

/**
 * The COSE_Sign1_Tagged, padded to exactly `size` bytes with zero bytes in the unprotected `pad`
 * header. A shorter signature box would shift the bytes after it, and the reader would find the
 * data hash no longer matches (`assertion.dataHash.mismatch`). Some lengths cannot be reached by
 * one byte string (its length prefix grows by a byte at 24 and 256 bytes): then a second, `pad2`,
 * takes up the difference, as c2pa-rs does.
 * @throws Error when the signature does not fit into `size` bytes.
 */
export function coseSign1(parts: CoseSign1Parts): Uint8Array {
  const build = (pads: readonly number[]) => {
    const unprotected = new Map<string, unknown>();
    if (parts.timestampToken) unprotected.set('sigTst2', { tstTokens: [{ val: bytes(parts.timestampToken) }] });
    pads.forEach((length, i) => unprotected.set(i === 0 ? 'pad' : 'pad2', new Uint8Array(length)));
    return encode(new Tagged(COSE_SIGN1_TAG, [bytes(parts.protectedBytes), unprotected, null, bytes(parts.signature)]));
  };
  const bare = build([0]);
  if (bare.length > parts.size) {
    throw new Error(`the COSE signature needs ${bare.length} bytes, more than the ${parts.size} the builder reserved`);
  }
  // An empty pad is 1 byte (its header), so `missing` more bytes are needed; the header itself
  // grows by 1, 2 or 4 bytes at 24, 256 and 65,536 bytes of pad (RFC 8949 §3), hence the candidates.
  const missing = parts.size - bare.length;
  for (const grown of [0, 1, 2, 4]) {
    if (missing - grown < 0) continue;
    const out = build([missing - grown]);
    if (out.length === parts.size) return out;
  }
  // The lengths one pad cannot reach (its header would have to grow by part of a byte): a second,
  // empty pad takes 6 bytes (its key "pad2" and its header), and the first takes the rest.
  for (const grown of [0, 1, 2, 4]) {
    if (missing - 6 - grown < 0) continue;
    const out = build([missing - 6 - grown, 0]);
    if (out.length === parts.size) return out;
  }
  throw new Error(`no padding makes the COSE signature exactly ${parts.size} bytes long`);
}

/** A plain Uint8Array view (cborg writes a Buffer or any typed-array subclass as is, but says so only for Uint8Array). */
function bytes(value: Uint8Array): Uint8Array {
  return value.constructor === Uint8Array ? value : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
}
