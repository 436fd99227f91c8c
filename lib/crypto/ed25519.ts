/**
 * Ed25519 (RFC 8032 §5.1, pure Ed25519) with node:crypto: device signatures on chain links.
 *
 * node:crypto takes keys as DER, so raw keys are wrapped in fixed prefixes: the 32-byte public
 * key in a SubjectPublicKeyInfo (RFC 8410 §4) and the 32-byte seed in a PKCS#8 OneAsymmetricKey
 * (RFC 8410 §7). With algorithm id-Ed25519 (1.3.101.112) and no parameters both prefixes are
 * constant.
 */
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { ProcessCache } from '../memo.js';
import { hexToBytes, normaliseHash } from './hash.js';

/** SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING (0 unused bits) ... } header, RFC 8410 §4. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
/** SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.112 }, OCTET STRING { OCTET STRING ... } }, RFC 8410 §7. */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** Ed25519 public key length (RFC 8032 §5.1.5). */
export const ED25519_PUBLIC_KEY_BYTES = 32;
/** Ed25519 private key (seed) length (RFC 8032 §5.1.5). */
export const ED25519_SEED_BYTES = 32;
/** Ed25519 signature length (RFC 8032 §5.1.6). */
export const ED25519_SIGNATURE_BYTES = 64;

function publicKeyObject(publicKey: Uint8Array): KeyObject {
  if (publicKey.length !== ED25519_PUBLIC_KEY_BYTES) {
    throw new RangeError(`Ed25519 public key: expected ${ED25519_PUBLIC_KEY_BYTES} bytes, got ${publicKey.length}`);
  }
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' });
}

function privateKeyObject(seed: Uint8Array): KeyObject {
  if (seed.length !== ED25519_SEED_BYTES) {
    throw new RangeError(`Ed25519 seed: expected ${ED25519_SEED_BYTES} bytes, got ${seed.length}`);
  }
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

/**
 * Parses a raw Ed25519 public key given as 64 hex characters (either case).
 *
 * The point itself is not validated here: an invalid encoding simply never verifies
 * (RFC 8032 §5.1.7 step 1 fails inside verification).
 *
 * @throws {TypeError} if `hex` is not hex; {RangeError} if it is not 32 bytes.
 */
export function parseEd25519PublicKey(hex: string): KeyObject {
  // A device sends many links (a batch anchor: up to 100 in one request): its key is parsed once.
  return parsedKeys.getOrSet(hex, () => publicKeyObject(hexToBytes(hex)));
}

/** Device keys parsed lately, by their hex (a KeyObject is immutable). */
const parsedKeys = new ProcessCache<string, KeyObject>('Ed25519 device keys by hex', 1000);

/**
 * Verifies a pure Ed25519 signature (RFC 8032 §5.1.7).
 *
 * @returns false for a bad signature, including one that is not 64 bytes long.
 * @throws {RangeError} if `publicKey` is not 32 bytes.
 */
export function verifyEd25519(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  const key = publicKeyObject(publicKey);
  if (signature.length !== ED25519_SIGNATURE_BYTES) return false;
  // Ed25519 hashes internally, so the digest algorithm argument must be null.
  return verify(null, message, key, signature);
}

/**
 * Verifies a device's signature on a chain link (decisions.md "Device chains"): the device signs the
 * 32 raw bytes of `image_hash`; a signature over the 64-character lower-case hex string of
 * `image_hash` (its ASCII bytes) is accepted too, because some device SDKs can only sign text.
 *
 * @param signatureHex the 64-byte signature as hex.
 * @param imageHashHex `image_hash`, 64 hex characters (either case).
 * @param publicKeyHex the device key, 32 bytes as hex.
 * @returns true if the signature verifies over either form; false for a bad signature, including
 *   well-formed hex of the wrong length.
 * @throws {TypeError} if an argument is not hex or `imageHashHex` is not a SHA-256 hash;
 *   {RangeError} if the public key is not 32 bytes.
 */
export function verifyDeviceSignature(signatureHex: string, imageHashHex: string, publicKeyHex: string): boolean {
  const imageHash = normaliseHash(imageHashHex);
  const key = parseEd25519PublicKey(publicKeyHex);
  const signature = hexToBytes(signatureHex);
  if (signature.length !== ED25519_SIGNATURE_BYTES) return false;
  if (verify(null, hexToBytes(imageHash), key, signature)) return true;
  return verify(null, Buffer.from(imageHash, 'ascii'), key, signature);
}

/**
 * Signs `message` with pure Ed25519 (RFC 8032 §5.1.6) using a 32-byte seed (the RFC's private
 * key). For device clients and tests; the service itself never holds device keys.
 *
 * @throws {RangeError} if `seed32` is not 32 bytes.
 */
export function signEd25519(seed32: Uint8Array, message: Uint8Array): Uint8Array {
  return Uint8Array.from(sign(null, message, privateKeyObject(seed32)));
}

/**
 * Derives the raw 32-byte public key from a 32-byte seed (RFC 8032 §5.1.5).
 *
 * @throws {RangeError} if `seed32` is not 32 bytes.
 */
export function ed25519PublicKeyFromSeed(seed32: Uint8Array): Uint8Array {
  const spki = createPublicKey(privateKeyObject(seed32)).export({ format: 'der', type: 'spki' });
  // The SPKI of an Ed25519 key is the constant prefix followed by the raw key (RFC 8410 §4).
  if (spki.length !== SPKI_PREFIX.length + ED25519_PUBLIC_KEY_BYTES || !spki.subarray(0, SPKI_PREFIX.length).equals(SPKI_PREFIX)) {
    throw new Error('Ed25519: unexpected SubjectPublicKeyInfo from node:crypto');
  }
  return Uint8Array.from(spki.subarray(SPKI_PREFIX.length));
}
