/**
 * The service's public keys as JSON Web Keys (RFC 7517) for GET /.well-known/jwks.json:
 * - Ed25519 as an OKP key (RFC 8037 §2: `kty: "OKP"`, `crv: "Ed25519"`, `x` the raw 32-byte key,
 *   base64url), `alg: "Ed25519"` (RFC 9864, the fully specified name of pure Ed25519);
 * - ML-DSA-65 as an AKP key (draft-ietf-cose-dilithium, "JOSE and COSE Encoding for ML-DSA":
 *   `kty: "AKP"`, `alg: "ML-DSA-65"`, `pub` the raw 1952-byte key, base64url).
 * Every key has its `kid` (the signer's keyId, the same string statements and receipts name) and
 * `status`: `active` for the key that signs now, `retired` for an earlier one that no longer signs
 * but whose statements still verify (kept in the set on purpose). `key_ops: ["verify"]` because
 * only verification is offered to anyone holding the set.
 */
import { ED25519_PUBLIC_KEY_BYTES } from './ed25519.js';
import { ed25519KeyId } from './ed25519-signer.js';
import { ML_DSA_65_PUBLIC_KEY_BYTES, mlDsaKeyId } from './ml-dsa.js';

import type { ValidityWindow } from './key-windows.js';

export type KeyStatus = 'active' | 'retired';

export interface Ed25519Jwk {
  kty: 'OKP';
  crv: 'Ed25519';
  alg: 'Ed25519';
  use: 'sig';
  key_ops: ['verify'];
  kid: string;
  x: string;
  status: KeyStatus;
}

export interface MlDsa65Jwk {
  kty: 'AKP';
  alg: 'ML-DSA-65';
  use: 'sig';
  key_ops: ['verify'];
  kid: string;
  pub: string;
  status: KeyStatus;
}

export type ServiceJwk = Ed25519Jwk | MlDsa65Jwk;

/** A published key: its JWK and its validity window (GET /.well-known/jwks.json). */
export type PublishedJwk = ServiceJwk & ValidityWindow;

/** The JWK of a raw Ed25519 public key. @throws {RangeError} unless 32 bytes. */
export function ed25519Jwk(publicKey: Uint8Array, status: KeyStatus): Ed25519Jwk {
  if (publicKey.length !== ED25519_PUBLIC_KEY_BYTES) throw new RangeError(`Ed25519 public key: expected ${ED25519_PUBLIC_KEY_BYTES} bytes`);
  return { kty: 'OKP', crv: 'Ed25519', alg: 'Ed25519', use: 'sig', key_ops: ['verify'], kid: ed25519KeyId(publicKey), x: Buffer.from(publicKey).toString('base64url'), status };
}

/** The JWK of a raw ML-DSA-65 public key. @throws {RangeError} unless 1952 bytes. */
export function mlDsa65Jwk(publicKey: Uint8Array, status: KeyStatus): MlDsa65Jwk {
  if (publicKey.length !== ML_DSA_65_PUBLIC_KEY_BYTES) throw new RangeError(`ML-DSA-65 public key: expected ${ML_DSA_65_PUBLIC_KEY_BYTES} bytes`);
  return { kty: 'AKP', alg: 'ML-DSA-65', use: 'sig', key_ops: ['verify'], kid: mlDsaKeyId(publicKey), pub: Buffer.from(publicKey).toString('base64url'), status };
}

/**
 * The JWK with its validity window (decisions.md "Key validity windows"); `status` follows the
 * window: `retired` once `retired_at` is set.
 */
export function withWindow<K extends ServiceJwk>(jwk: K, window: ValidityWindow): K & ValidityWindow {
  const status: KeyStatus = window.retired_at === null ? jwk.status : 'retired';
  return Object.assign({}, jwk, { status }, { not_before: window.not_before, not_after: window.not_after, retired_at: window.retired_at } satisfies ValidityWindow);
}

/** The validity window a JWK of this service's set carries; a JWK without one (an older set) is unbounded. */
export function windowOfJwk(jwk: unknown): ValidityWindow {
  const k = (typeof jwk === 'object' && jwk !== null ? jwk : {}) as Record<string, unknown>;
  const t = (v: unknown) => (typeof v === 'string' ? v : null);
  return { not_before: t(k.not_before), not_after: t(k.not_after), retired_at: t(k.retired_at) };
}

/** A raw public key from a JWK of this service's set, or undefined for any other kind of key. */
export function rawPublicKeyOf(jwk: unknown): { algorithm: 'Ed25519' | 'ML-DSA-65'; publicKey: Uint8Array } | undefined {
  if (typeof jwk !== 'object' || jwk === null) return undefined;
  const k = jwk as Record<string, unknown>;
  if (k.kty === 'OKP' && k.crv === 'Ed25519' && typeof k.x === 'string') {
    const publicKey = Buffer.from(k.x, 'base64url');
    return publicKey.length === ED25519_PUBLIC_KEY_BYTES ? { algorithm: 'Ed25519', publicKey } : undefined;
  }
  if (k.kty === 'AKP' && k.alg === 'ML-DSA-65' && typeof k.pub === 'string') {
    const publicKey = Buffer.from(k.pub, 'base64url');
    return publicKey.length === ML_DSA_65_PUBLIC_KEY_BYTES ? { algorithm: 'ML-DSA-65', publicKey } : undefined;
  }
  return undefined;
}
