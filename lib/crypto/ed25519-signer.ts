/**
 * The service's own Ed25519 signing key (RFC 8032 §5.1, pure Ed25519) behind the {@link Signer}
 * port, with two schemes as for ML-DSA-65: `local` (a 32-byte seed in DATA_DIR) and `kms` (an AWS
 * KMS key of key spec `ECC_NIST_EDWARDS25519`, signing algorithm `ED25519_SHA_512`, `MessageType:
 * RAW`; the private key never leaves KMS). Device keys are not this: lib/crypto/ed25519.ts.
 */
import { SignCommand, type KMSClient } from '@aws-sdk/client-kms';
import { readKmsPublicKey } from './kms-client.js';
import { ED25519_PUBLIC_KEY_BYTES, ED25519_SIGNATURE_BYTES, ed25519PublicKeyFromSeed, signEd25519, verifyEd25519 } from './ed25519.js';
import { sha256Hex } from './hash.js';
import type { Ed25519Signer } from './ports.js';

/** SubjectPublicKeyInfo header of an Ed25519 key (RFC 8410 §4): what KMS GetPublicKey returns before the raw key. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
/** Largest message KMS signs with `MessageType: RAW` (KMS Sign API reference). */
const KMS_MAX_RAW_MESSAGE_BYTES = 4096;

/** `ed25519:` + the first 16 hex characters of SHA-256(raw public key), like `mldsa65:…` for ML-DSA-65. */
export function ed25519KeyId(publicKey: Uint8Array): string {
  return `ed25519:${ed25519PublicKeyFingerprint(publicKey).slice(0, 16)}`;
}

/** Full SHA-256 of a raw Ed25519 public key, 64 lower-case hex characters. */
export function ed25519PublicKeyFingerprint(publicKey: Uint8Array): string {
  if (publicKey.length !== ED25519_PUBLIC_KEY_BYTES) throw new RangeError(`Ed25519 public key: expected ${ED25519_PUBLIC_KEY_BYTES} bytes, got ${publicKey.length}`);
  return sha256Hex(publicKey);
}

/** The raw 32-byte key inside an Ed25519 SubjectPublicKeyInfo (RFC 8410 §4). */
export function ed25519PublicKeyFromSpki(spki: Uint8Array): Uint8Array {
  const der = Buffer.from(spki);
  if (der.length !== ED25519_SPKI_PREFIX.length + ED25519_PUBLIC_KEY_BYTES || !der.subarray(0, ED25519_SPKI_PREFIX.length).equals(ED25519_SPKI_PREFIX)) {
    throw new Error('not an Ed25519 SubjectPublicKeyInfo (RFC 8410)');
  }
  return Uint8Array.from(der.subarray(ED25519_SPKI_PREFIX.length));
}

/** Ed25519 signer holding its 32-byte seed in memory (scheme `local`). */
export class LocalEd25519Signer implements Ed25519Signer {
  readonly algorithm = 'Ed25519' as const;
  readonly keyId: string;
  readonly #seed: Uint8Array;
  readonly #publicKey: Uint8Array;

  private constructor(seed: Uint8Array) {
    this.#seed = Uint8Array.from(seed);
    this.#publicKey = ed25519PublicKeyFromSeed(this.#seed);
    this.keyId = ed25519KeyId(this.#publicKey);
  }

  /** @throws {RangeError} if `seed` is not 32 bytes. */
  static fromSeed(seed: Uint8Array): LocalEd25519Signer {
    return new LocalEd25519Signer(seed);
  }

  async publicKey(): Promise<Uint8Array> {
    return Uint8Array.from(this.#publicKey);
  }

  async sign(message: Uint8Array): Promise<Uint8Array> {
    return signEd25519(this.#seed, message);
  }
}

/**
 * Ed25519 signer backed by an AWS KMS key of key spec `ECC_NIST_EDWARDS25519` (scheme `kms`).
 * Pass a key ARN or id: the public key is fetched once ({@link KmsEd25519Signer.connect}) and every
 * signature KMS returns is verified with it before it is handed out (node:crypto, ~0.1 ms), so a
 * re-pointed alias or a faulty answer never yields a statement that cannot verify.
 */
export class KmsEd25519Signer implements Ed25519Signer {
  readonly algorithm = 'Ed25519' as const;
  readonly kmsKeyId: string;
  readonly #client: KMSClient;
  #publicKey: Uint8Array | undefined;

  constructor(client: KMSClient, kmsKeyId: string) {
    if (typeof kmsKeyId !== 'string' || kmsKeyId.length === 0) throw new TypeError('KMS key id: expected a non-empty string');
    this.#client = client;
    this.kmsKeyId = kmsKeyId;
  }

  /** Creates a signer and fetches its public key, so that `keyId` is available at once. */
  static async connect(client: KMSClient, kmsKeyId: string): Promise<KmsEd25519Signer> {
    const signer = new KmsEd25519Signer(client, kmsKeyId);
    await signer.publicKey();
    return signer;
  }

  /** @throws {Error} before the public key was fetched (use {@link KmsEd25519Signer.connect}). */
  get keyId(): string {
    if (this.#publicKey === undefined) throw new Error('KmsEd25519Signer: keyId is known only after publicKey() has resolved (use KmsEd25519Signer.connect)');
    return ed25519KeyId(this.#publicKey);
  }

  async publicKey(): Promise<Uint8Array> {
    if (this.#publicKey === undefined) {
      this.#publicKey = ed25519PublicKeyFromSpki(await readKmsPublicKey(this.#client, this.kmsKeyId, 'ECC_NIST_EDWARDS25519'));
    }
    return Uint8Array.from(this.#publicKey);
  }

  /**
   * Pure Ed25519 over `message` (KMS `ED25519_SHA_512`, `MessageType: RAW`: RFC 8032 §5.1.6, not
   * the pre-hashed Ed25519ph), 64 bytes.
   * @throws {RangeError} for an empty message or one over 4096 bytes (KMS's RAW limit);
   *   {Error} when KMS fails or answers with a signature that does not verify.
   */
  async sign(message: Uint8Array): Promise<Uint8Array> {
    if (message.length === 0 || message.length > KMS_MAX_RAW_MESSAGE_BYTES) {
      throw new RangeError(`KMS RAW message: expected 1..${KMS_MAX_RAW_MESSAGE_BYTES} bytes, got ${message.length}`);
    }
    const publicKey = await this.publicKey();
    let response;
    try {
      response = await this.#client.send(new SignCommand({ KeyId: this.kmsKeyId, Message: message, MessageType: 'RAW', SigningAlgorithm: 'ED25519_SHA_512' }));
    } catch (err) {
      throw new Error(`KMS Sign failed for ${this.kmsKeyId}: ${errorName(err)}`, { cause: err });
    }
    const signature = response.Signature;
    if (signature === undefined || signature.length !== ED25519_SIGNATURE_BYTES) {
      throw new Error(`KMS Sign for ${this.kmsKeyId} returned ${signature?.length ?? 'no'} signature bytes, expected ${ED25519_SIGNATURE_BYTES}`);
    }
    if (!verifyEd25519(signature, message, publicKey)) {
      throw new Error(`KMS Sign for ${this.kmsKeyId} returned a signature that does not verify under the key's public key`);
    }
    return Uint8Array.from(signature);
  }
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : 'unknown error';
}
