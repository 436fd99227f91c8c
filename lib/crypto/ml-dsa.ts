/**
 * ML-DSA-65 (FIPS 204): verification, a local signer and an AWS KMS signer.
 *
 * Everything here is the *pure* ML-DSA of FIPS 204 §5.2 / §5.3 (Algorithms 2 and 3) with an empty
 * context string, i.e. the signed message is M' = 0x00 || 0x00 || M. That is the form AWS KMS
 * (`ML_DSA_SHAKE_256`, `MessageType: RAW`), liboqs and OpenSSL produce, so evidence signed by any
 * backend verifies with any FIPS 204 implementation (measured: noble, liboqs and node:crypto verify
 * each other's pure, empty-context signatures in every direction). HashML-DSA, non-empty contexts
 * and the internal interface do not interoperate and are not offered.
 *
 * Three implementations are used on purpose, each where it is fastest (BENCHMARKS.md "ML-DSA on
 * Node 24"): @noble/post-quantum (TypeScript) derives key pairs, signs in the deterministic test
 * mode and verifies where node:crypto cannot; node:crypto (OpenSSL 3.5, Node ≥ 24.6) is the
 * public verifier ({@link verifyMlDsa65}, 6.6× faster than noble, nothing to load) and checks KMS
 * signatures; liboqs (C compiled to WASM, @oqs/liboqs-js) signs for {@link LocalMlDsaSigner}
 * (warm, 1.4–1.75× faster than node:crypto and 10× faster than noble). Evidence signed by one is
 * verified by another.
 */
import { createPrivateKey, createPublicKey, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';
import type { MLDSA65 } from '@oqs/liboqs-js/sig';
import { lazy } from '../memo.js';
import { sha256Hex } from './hash.js';
import type { PqSigner } from './ports.js';

/** Public key length of ML-DSA-65 (FIPS 204 Table 2). */
export const ML_DSA_65_PUBLIC_KEY_BYTES = 1952;
/** Signature length of ML-DSA-65 (FIPS 204 Table 2). */
export const ML_DSA_65_SIGNATURE_BYTES = 3309;
/** Length of the key-generation seed ξ (FIPS 204 Algorithm 1). */
export const ML_DSA_65_SEED_BYTES = 32;
/** id-ml-dsa-65, the algorithm OID of ML-DSA-65 public keys (NIST CSOR; RFC 9881). */
export const ID_ML_DSA_65 = '2.16.840.1.101.3.4.3.18';
/** Largest message AWS KMS signs with `MessageType: RAW` (KMS Sign API reference). */
export const KMS_MAX_RAW_MESSAGE_BYTES = 4096;

/** Throws a TypeError unless `value` is a Uint8Array. */
export function assertBytes(value: unknown, name: string): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) throw new TypeError(`${name}: expected a Uint8Array`);
}

function assertPublicKey(publicKey: unknown): asserts publicKey is Uint8Array {
  assertBytes(publicKey, 'ML-DSA-65 public key');
  if (publicKey.length !== ML_DSA_65_PUBLIC_KEY_BYTES) {
    throw new RangeError(`ML-DSA-65 public key: expected ${ML_DSA_65_PUBLIC_KEY_BYTES} bytes, got ${publicKey.length}`);
  }
}

/**
 * Verifies a pure ML-DSA-65 signature with an empty context (FIPS 204 Algorithm 3, ML-DSA.Verify):
 * with node:crypto where this Node has ML-DSA ({@link nodeCryptoMlDsa65}), else with noble
 * ({@link verifyMlDsa65Noble}; Node 22 and older, e.g. the CLI on a machine's own Node).
 *
 * @returns true if valid; false for any bad signature, including one of the wrong length (a
 *   signature is untrusted data, and a wrong length is just another way of being invalid).
 * @throws {TypeError} if an argument is not a Uint8Array; {RangeError} if the public key is not
 *   1952 bytes (that is a configuration error on our side, not a bad signature).
 */
export function verifyMlDsa65(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  return nodeCryptoMlDsa65() ? verifyMlDsa65Node(signature, message, publicKey) : verifyMlDsa65Noble(signature, message, publicKey);
}

/** {@link verifyMlDsa65} by noble, whatever the runtime (the fallback, and the tests' reference). */
export function verifyMlDsa65Noble(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  assertBytes(signature, 'ML-DSA-65 signature');
  assertBytes(message, 'ML-DSA-65 message');
  assertPublicKey(publicKey);
  if (signature.length !== ML_DSA_65_SIGNATURE_BYTES) return false;
  try {
    return ml_dsa65.verify(signature, message, publicKey);
  } catch {
    // Lengths and types are checked above, so a throw can only come from decoding the signature
    // bytes; FIPS 204 Algorithm 8 treats an undecodable signature (sigDecode = ⊥) as invalid.
    return false;
  }
}

/**
 * {@link verifyMlDsa65} by node:crypto (OpenSSL 3.5).
 *
 * @throws {Error} additionally, if this Node has no ML-DSA in node:crypto (Node < 24.6): then
 *   every call would say "invalid", so it says why instead.
 */
export function verifyMlDsa65Node(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  assertBytes(signature, 'ML-DSA-65 signature');
  assertBytes(message, 'ML-DSA-65 message');
  assertPublicKey(publicKey);
  if (!nodeCryptoMlDsa65()) throw new Error(`node:crypto of Node ${process.version} cannot verify ML-DSA-65 (Node ≥ 24.6 can)`);
  if (signature.length !== ML_DSA_65_SIGNATURE_BYTES) return false;
  try {
    // A new public KeyObject per call: 0.03 ms of the 0.15 (bench/ml-dsa-runtimes.ts).
    return nodeVerify(null, message, { key: spkiOf(publicKey), format: 'der', type: 'spki' }, signature);
  } catch {
    // Same as noble's: lengths and types are checked, so only the signature's bytes can be at fault.
    return false;
  }
}

// node:crypto takes ML-DSA keys as DER (raw key formats came only in Node 24.15), so the raw keys
// are wrapped in fixed prefixes, as lib/crypto/ed25519.ts does for Ed25519 (RFC 9881 §4 and §6):
//   SubjectPublicKeyInfo: SEQUENCE { SEQUENCE { OID id-ml-dsa-65 } BIT STRING { 0x00 || pk } }
//   PKCS#8, seed form:    SEQUENCE { INTEGER 0, SEQUENCE { OID id-ml-dsa-65 }, OCTET STRING { [0] IMPLICIT OCTET STRING ξ } }
const SPKI_PREFIX = Buffer.from('308207b2300b0609608648016503040312038207a100', 'hex');
const PKCS8_SEED_PREFIX = Buffer.from('3034020100300b06096086480165030403120422' + '8020', 'hex');

function spkiOf(publicKey: Uint8Array): Buffer {
  return Buffer.concat([SPKI_PREFIX, publicKey]);
}

/** A raw ML-DSA-65 public key as a DER SubjectPublicKeyInfo (RFC 9881 §4: parameters absent). */
export function mlDsa65Spki(publicKey: Uint8Array): Uint8Array {
  assertPublicKey(publicKey);
  return new Uint8Array(spkiOf(publicKey));
}

/**
 * The seed ξ as an ML-DSA-65 PKCS#8 private key in the seed form of RFC 9881 §6
 * (`[0] IMPLICIT OCTET STRING (SIZE (32))`): the form OpenSSL 3.5 reads and writes by default, so
 * `openssl pkey -in key.pem -pubout` derives the same public key.
 */
export function mlDsa65Pkcs8FromSeed(seed: Uint8Array): Uint8Array {
  assertBytes(seed, 'ML-DSA-65 seed');
  if (seed.length !== ML_DSA_65_SEED_BYTES) throw new RangeError(`ML-DSA-65 seed: expected ${ML_DSA_65_SEED_BYTES} bytes, got ${seed.length}`);
  return new Uint8Array(Buffer.concat([PKCS8_SEED_PREFIX, seed]));
}

/**
 * The seed ξ of an ML-DSA-65 PKCS#8 key in the seed form ({@link mlDsa65Pkcs8FromSeed}); the
 * expandedKey and both forms of RFC 9881 §6 are refused (a seed is all we store and sign from).
 * @throws {Error} when the DER is not exactly that form.
 */
export function mlDsa65SeedFromPkcs8(der: Uint8Array): Uint8Array {
  assertBytes(der, 'ML-DSA-65 PKCS#8');
  const bytes = Buffer.from(der.buffer, der.byteOffset, der.byteLength);
  if (bytes.length !== PKCS8_SEED_PREFIX.length + ML_DSA_65_SEED_BYTES || !bytes.subarray(0, PKCS8_SEED_PREFIX.length).equals(PKCS8_SEED_PREFIX)) {
    throw new Error('not an ML-DSA-65 PKCS#8 private key in the seed form of RFC 9881 §6');
  }
  return Uint8Array.from(bytes.subarray(PKCS8_SEED_PREFIX.length));
}

/**
 * Whether this Node signs and verifies ML-DSA-65 in node:crypto (Node ≥ 24.6, OpenSSL 3.5; Node 22
 * bundles OpenSSL 3.5 as well and imports the key, but its signing and verification fail).
 * Decided once per process (about 2 ms) by doing it: a key from a fixed seed signs a message; its
 * public key must come out as an ML-DSA-65 SubjectPublicKeyInfo, the signature must verify, and it
 * must fail once a bit of it is flipped. That it agrees with the other implementations is for the
 * tests (test/crypto/ml-dsa-node.test.ts: the NIST vectors, and noble and liboqs both ways).
 */
export function nodeCryptoMlDsa65(): boolean {
  return nodeSupport();
}

const nodeSupport = /* @__PURE__ */ lazy((): boolean => {
  try {
    const key = createPrivateKey({ key: Buffer.concat([PKCS8_SEED_PREFIX, Buffer.alloc(ML_DSA_65_SEED_BYTES, 0x5a)]), format: 'der', type: 'pkcs8' });
    const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
    const message = Buffer.from('ML-DSA-65 in node:crypto');
    const signature = nodeSign(null, message, key);
    const tampered = Buffer.from(signature);
    tampered[100]! ^= 1;
    return (
      spki.length === SPKI_PREFIX.length + ML_DSA_65_PUBLIC_KEY_BYTES &&
      spki.subarray(0, SPKI_PREFIX.length).equals(SPKI_PREFIX) &&
      signature.length === ML_DSA_65_SIGNATURE_BYTES &&
      nodeVerify(null, message, { key: spki, format: 'der', type: 'spki' }, signature) &&
      !nodeVerify(null, message, { key: spki, format: 'der', type: 'spki' }, tampered)
    );
  } catch {
    return false;
  }
});

/** Full SHA-256 of a raw ML-DSA-65 public key, as 64 lower-case hex characters. */
export function mlDsaPublicKeyFingerprint(publicKey: Uint8Array): string {
  assertPublicKey(publicKey);
  return sha256Hex(publicKey);
}

/** The key id of {@link PqSigner}: `mldsa65:` + the first 16 hex characters of the fingerprint. */
export function mlDsaKeyId(publicKey: Uint8Array): string {
  return `mldsa65:${mlDsaPublicKeyFingerprint(publicKey).slice(0, 16)}`;
}

/**
 * The process's one liboqs ML-DSA-65 instance, loaded on first use (bundled, instantiating the
 * WASM module takes ~8 ms) and shared: its calls are synchronous, so concurrent signers never
 * interleave inside it. A failed load is not cached; the next call tries again.
 */
export function liboqsMlDsa65(): Promise<MLDSA65> {
  return liboqs();
}

const liboqs = /* @__PURE__ */ lazy(() =>
  import('./liboqs-ml-dsa-65.js')
    .then(({ createMLDSA65 }) => createMLDSA65())
    .catch((err: unknown) => {
      throw new Error(`liboqs ML-DSA-65 failed to load: ${errorName(err)}`, { cause: err });
    }),
);

/** Options of {@link LocalMlDsaSigner.fromSeed}. */
export interface LocalMlDsaSignerOptions {
  /**
   * Sign deterministically (FIPS 204 §3.4, rnd = 32 zero bytes) instead of hedged. Only for tests
   * that need reproducible bytes; hedged signing is the default because FIPS 204 recommends it
   * against fault and side-channel attacks. Deterministic signatures are made by noble: liboqs
   * always signs hedged (its API takes no rnd).
   */
  deterministic?: boolean;
}

/**
 * ML-DSA-65 signer holding its key in memory, derived from a 32-byte seed ξ
 * (FIPS 204 Algorithm 1 / 6): the seed is the whole private key, so that is what we store.
 *
 * noble derives the key pair (so the seed, public key, key id and fingerprint are those of every
 * FIPS 204 implementation); liboqs signs with noble's encoded secret key (FIPS 204 skEncode, the
 * format both use). The first liboqs signature of each signer is checked with
 * {@link verifyMlDsa65} (node:crypto, or noble on a Node without ML-DSA: another implementation
 * either way) before it is handed out, so a liboqs that disagreed with the verifier
 * (another context, another key format) would fail the first anchor instead of storing evidence
 * that can never verify.
 */
export class LocalMlDsaSigner implements PqSigner {
  readonly algorithm = 'ML-DSA-65' as const;
  /** `mldsa65:` + first 16 hex characters of SHA-256(public key). */
  readonly keyId: string;
  /** Full SHA-256 of the public key, hex. */
  readonly fingerprint: string;
  readonly #publicKey: Uint8Array;
  readonly #secretKey: Uint8Array;
  readonly #deterministic: boolean;
  /** Whether a liboqs signature of this signer has verified with verifyMlDsa65. */
  #crossChecked = false;

  private constructor(publicKey: Uint8Array, secretKey: Uint8Array, deterministic: boolean) {
    this.#publicKey = publicKey;
    this.#secretKey = secretKey;
    this.#deterministic = deterministic;
    this.fingerprint = mlDsaPublicKeyFingerprint(publicKey);
    this.keyId = mlDsaKeyId(publicKey);
  }

  /**
   * Derives the key pair from the seed ξ with ML-DSA.KeyGen_internal (FIPS 204 Algorithm 6).
   *
   * @throws {TypeError} if `seed` is not a Uint8Array; {RangeError} if it is not 32 bytes.
   */
  static fromSeed(seed: Uint8Array, options: LocalMlDsaSignerOptions = {}): LocalMlDsaSigner {
    assertBytes(seed, 'ML-DSA-65 seed');
    if (seed.length !== ML_DSA_65_SEED_BYTES) {
      throw new RangeError(`ML-DSA-65 seed: expected ${ML_DSA_65_SEED_BYTES} bytes, got ${seed.length}`);
    }
    const { publicKey, secretKey } = ml_dsa65.keygen(Uint8Array.from(seed));
    return new LocalMlDsaSigner(publicKey, secretKey, options.deterministic === true);
  }

  /** The raw 1952-byte public key (a copy: callers cannot alter the signer's key). */
  publicKey(): Promise<Uint8Array> {
    return Promise.resolve(Uint8Array.from(this.#publicKey));
  }

  /**
   * Pure ML-DSA-65 signature with an empty context (FIPS 204 Algorithm 2), 3309 bytes: hedged by
   * liboqs (rnd from the WASM module's CSPRNG, node:crypto), or deterministic by noble.
   *
   * @throws {Error} (as a rejection) if liboqs cannot be loaded or fails to sign: there is no
   *   fallback to noble, whose 7–9 ms per signature would silently change the service's capacity.
   */
  async sign(message: Uint8Array): Promise<Uint8Array> {
    // Inside an async function, bad input surfaces as a rejection like every other signer failure.
    assertBytes(message, 'ML-DSA-65 message');
    // rnd = {0}^32 (FIPS 204 Algorithm 2, deterministic variant).
    if (this.#deterministic) return ml_dsa65.sign(message, this.#secretKey, { extraEntropy: false });
    const oqs = await liboqsMlDsa65();
    // liboqs accepts plain Uint8Arrays only (no Buffer): copy. It copies the key into its heap.
    const signature = oqs.sign(Uint8Array.from(message), this.#secretKey);
    if (signature.length !== ML_DSA_65_SIGNATURE_BYTES) {
      throw new Error(`liboqs returned a ${signature.length}-byte ML-DSA-65 signature, expected ${ML_DSA_65_SIGNATURE_BYTES}`);
    }
    if (!this.#crossChecked) {
      if (!verifyMlDsa65(signature, message, this.#publicKey)) {
        throw new Error(`liboqs ML-DSA-65 signature does not verify with verifyMlDsa65 under ${this.keyId}: refusing to sign with liboqs`);
      }
      this.#crossChecked = true;
    }
    return signature;
  }
}

/**
 * ML-DSA-65 signer on node:crypto (OpenSSL 3.5, Node ≥ 24.6) from the seed's PKCS#8 (RFC 9881 §6):
 * the post-quantum TSA's local key. It costs the bundle nothing (node:crypto is built in), where
 * liboqs would add its WASM module to every function that time-stamps (infra/functions.json).
 * Pure ML-DSA, empty context, hedged (OpenSSL's default). Its first signature is checked by noble,
 * another implementation, before it is handed out.
 */
export class NodeMlDsaSigner implements PqSigner {
  readonly algorithm = 'ML-DSA-65' as const;
  readonly keyId: string;
  readonly fingerprint: string;
  readonly #publicKey: Uint8Array;
  readonly #key: ReturnType<typeof createPrivateKey>;
  #crossChecked = false;

  private constructor(key: ReturnType<typeof createPrivateKey>, publicKey: Uint8Array) {
    this.#key = key;
    this.#publicKey = publicKey;
    this.fingerprint = mlDsaPublicKeyFingerprint(publicKey);
    this.keyId = mlDsaKeyId(publicKey);
  }

  /** @throws {Error} when this Node has no ML-DSA in node:crypto, or the seed is not 32 bytes. */
  static fromSeed(seed: Uint8Array): NodeMlDsaSigner {
    if (!nodeCryptoMlDsa65()) throw new Error(`node:crypto of Node ${process.version} cannot sign ML-DSA-65 (Node ≥ 24.6 can)`);
    const key = createPrivateKey({ key: Buffer.from(mlDsa65Pkcs8FromSeed(seed)), format: 'der', type: 'pkcs8' });
    const spki = new Uint8Array(createPublicKey(key).export({ format: 'der', type: 'spki' }));
    return new NodeMlDsaSigner(key, mlDsa65PublicKeyFromSpki(spki));
  }

  publicKey(): Promise<Uint8Array> {
    return Promise.resolve(Uint8Array.from(this.#publicKey));
  }

  sign(message: Uint8Array): Promise<Uint8Array> {
    assertBytes(message, 'ML-DSA-65 message');
    const signature = new Uint8Array(nodeSign(null, message, this.#key));
    if (!this.#crossChecked) {
      if (!verifyMlDsa65Noble(signature, message, this.#publicKey)) return Promise.reject(new Error(`node:crypto ML-DSA-65 signature does not verify with noble under ${this.keyId}`));
      this.#crossChecked = true;
    }
    return Promise.resolve(signature);
  }
}

/** `Name: message` of an error, for the messages of the ML-DSA adapters. */
export function errorName(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

// ---------------------------------------------------------------------------------------------
// SubjectPublicKeyInfo (RFC 5280 §4.1.2.7) for ML-DSA-65 (RFC 9881):
//   SEQUENCE { SEQUENCE { OID id-ml-dsa-65 }  -- parameters absent
//              BIT STRING { 0 unused bits, pk (1952 bytes, FIPS 204 pkEncode) } }
// A minimal DER reader (X.690 §8 and §10) is enough: definite lengths, low tag numbers.
// ---------------------------------------------------------------------------------------------

const TAG_SEQUENCE = 0x30;
const TAG_OID = 0x06;
const TAG_BIT_STRING = 0x03;

/** One DER element: identifier octet, and where its contents start and end. */
interface Tlv {
  tag: number;
  /** First content octet. */
  start: number;
  /** One past the last content octet; also where the next element starts. */
  end: number;
}

function readTlv(der: Uint8Array, offset: number, limit: number, what: string): Tlv {
  const fail = (why: string): never => {
    throw new Error(`SubjectPublicKeyInfo: ${what}: ${why}`);
  };
  if (offset + 2 > limit) fail('truncated');
  const tag = der[offset]!;
  // High tag numbers (X.690 §8.1.2.4) never occur in an SPKI.
  if ((tag & 0x1f) === 0x1f) fail('unsupported high tag number');
  const first = der[offset + 1]!;
  let length: number;
  let start = offset + 2;
  if (first < 0x80) {
    length = first; // short form, X.690 §8.1.3.4
  } else {
    const count = first & 0x7f;
    // 0x80 is the indefinite form, forbidden in DER (X.690 §10.1); 4 octets is far above any key.
    if (count === 0 || count > 4) fail('unsupported length encoding');
    if (start + count > limit) fail('truncated');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + der[start + i]!;
    // DER uses the fewest length octets (X.690 §10.1): no leading zero, no long form below 128.
    if (der[start] === 0 || length < 0x80) fail('non-minimal length');
    start += count;
  }
  const end = start + length;
  if (end > limit) fail('truncated');
  return { tag, start, end };
}

/** Decodes OBJECT IDENTIFIER contents (X.690 §8.19) to dotted form. */
function decodeOid(bytes: Uint8Array): string {
  const arcs: number[] = [];
  let value = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    // A subidentifier starting with 0x80 is not minimal (X.690 §8.19.2).
    if (value === 0 && b === 0x80) throw new Error('SubjectPublicKeyInfo: malformed algorithm OID');
    value = value * 128 + (b & 0x7f);
    if (value > Number.MAX_SAFE_INTEGER) throw new Error('SubjectPublicKeyInfo: algorithm OID arc too large');
    if ((b & 0x80) === 0) {
      if (arcs.length === 0) {
        // The first subidentifier packs the first two arcs (X.690 §8.19.4).
        const first = value < 40 ? 0 : value < 80 ? 1 : 2;
        arcs.push(first, value - first * 40);
      } else {
        arcs.push(value);
      }
      value = 0;
    }
  }
  if (bytes.length === 0 || (bytes[bytes.length - 1]! & 0x80) !== 0) throw new Error('SubjectPublicKeyInfo: malformed algorithm OID');
  return arcs.join('.');
}

/**
 * Extracts the raw 1952-byte ML-DSA-65 public key from a DER SubjectPublicKeyInfo, as returned
 * by KMS GetPublicKey. Strict: the algorithm must be id-ml-dsa-65 with parameters absent and
 * nothing may follow the structure.
 *
 * @throws {Error} if the DER is malformed, the algorithm is not ML-DSA-65 or the key length is wrong.
 */
export function mlDsa65PublicKeyFromSpki(der: Uint8Array): Uint8Array {
  assertBytes(der, 'SubjectPublicKeyInfo');
  const spki = readTlv(der, 0, der.length, 'SubjectPublicKeyInfo');
  if (spki.tag !== TAG_SEQUENCE) throw new Error('SubjectPublicKeyInfo: not a SEQUENCE');
  if (spki.end !== der.length) throw new Error('SubjectPublicKeyInfo: trailing bytes');

  const algorithm = readTlv(der, spki.start, spki.end, 'AlgorithmIdentifier');
  if (algorithm.tag !== TAG_SEQUENCE) throw new Error('SubjectPublicKeyInfo: AlgorithmIdentifier is not a SEQUENCE');
  const oid = readTlv(der, algorithm.start, algorithm.end, 'algorithm OID');
  if (oid.tag !== TAG_OID) throw new Error('SubjectPublicKeyInfo: algorithm is not an OBJECT IDENTIFIER');
  const oidText = decodeOid(der.subarray(oid.start, oid.end));
  if (oidText !== ID_ML_DSA_65) throw new Error(`SubjectPublicKeyInfo: algorithm ${oidText} is not id-ml-dsa-65 (${ID_ML_DSA_65})`);
  // RFC 9881: the parameters field MUST be absent for ML-DSA.
  if (oid.end !== algorithm.end) throw new Error('SubjectPublicKeyInfo: ML-DSA algorithm parameters must be absent');

  const bits = readTlv(der, algorithm.end, spki.end, 'subjectPublicKey');
  if (bits.tag !== TAG_BIT_STRING) throw new Error('SubjectPublicKeyInfo: subjectPublicKey is not a BIT STRING');
  if (bits.end !== spki.end) throw new Error('SubjectPublicKeyInfo: unexpected element after subjectPublicKey');
  // The first content octet of a BIT STRING counts the unused bits (X.690 §8.6.2); a key is whole octets.
  if (bits.end === bits.start || der[bits.start] !== 0) throw new Error('SubjectPublicKeyInfo: subjectPublicKey has unused bits');
  const key = der.subarray(bits.start + 1, bits.end);
  if (key.length !== ML_DSA_65_PUBLIC_KEY_BYTES) {
    throw new Error(`SubjectPublicKeyInfo: ML-DSA-65 public key is ${key.length} bytes, expected ${ML_DSA_65_PUBLIC_KEY_BYTES}`);
  }
  return Uint8Array.from(key);
}

