/**
 * ML-DSA-65 signing with an AWS KMS key (key spec `ML_DSA_65`, `ML_DSA_SHAKE_256`, RAW messages).
 * Apart from lib/crypto/ml-dsa.ts so that functions which only verify never load the KMS client.
 */
import { SignCommand, type KMSClient } from '@aws-sdk/client-kms';
import { lazy } from '../memo.js';
import { readKmsPublicKey } from './kms-client.js';
import {
  assertBytes,
  errorName,
  KMS_MAX_RAW_MESSAGE_BYTES,
  liboqsMlDsa65,
  ML_DSA_65_SIGNATURE_BYTES,
  mlDsa65PublicKeyFromSpki,
  mlDsaKeyId,
  mlDsaPublicKeyFingerprint,
  nodeCryptoMlDsa65,
  verifyMlDsa65Node,
} from './ml-dsa.js';
import type { MLDSA65 } from '@oqs/liboqs-js/sig';
import type { PqSigner } from './ports.js';

/** Options of {@link KmsMlDsaSigner}. */
export interface KmsMlDsaSignerOptions {
  /**
   * Verify every signature KMS returns against the cached public key before handing it out
   * (default true; node:crypto, about 0.15 ms, or liboqs, about 0.2 ms, on a Node without ML-DSA). A signature that does not verify would make evidence
   * unverifiable forever; this catches a key alias re-pointed to another key and faulty responses.
   */
  verifyAfterSign?: boolean;
}

/**
 * ML-DSA-65 signer backed by an AWS KMS key of key spec `ML_DSA_65`: the private key never leaves
 * KMS. Pass a key ARN or key id rather than an alias: the public key is fetched once and cached.
 *
 * {@link PqSigner.keyId} is derived from the public key, which only KMS knows: it is available
 * after the first `publicKey()` call has resolved; {@link KmsMlDsaSigner.connect} does that for
 * you.
 */
export class KmsMlDsaSigner implements PqSigner {
  readonly algorithm = 'ML-DSA-65' as const;
  /** The KMS key id, ARN or alias this signer was given. */
  readonly kmsKeyId: string;
  readonly #client: KMSClient;
  readonly #verifyAfterSign: boolean;
  /** The public key once fetched (keyId needs it at once). */
  #publicKey: Uint8Array | undefined;
  readonly #fetchPublicKey = lazy(async () => mlDsa65PublicKeyFromSpki(await readKmsPublicKey(this.#client, this.kmsKeyId, 'ML_DSA_65')));

  constructor(client: KMSClient, kmsKeyId: string, options: KmsMlDsaSignerOptions = {}) {
    if (typeof kmsKeyId !== 'string' || kmsKeyId.length === 0) throw new TypeError('KMS key id: expected a non-empty string');
    this.#client = client;
    this.kmsKeyId = kmsKeyId;
    this.#verifyAfterSign = options.verifyAfterSign ?? true;
  }

  /** Creates a signer and fetches its public key, so that `keyId` is available at once. */
  static async connect(client: KMSClient, kmsKeyId: string, options: KmsMlDsaSignerOptions = {}): Promise<KmsMlDsaSigner> {
    const signer = new KmsMlDsaSigner(client, kmsKeyId, options);
    await signer.publicKey();
    return signer;
  }

  /**
   * `mldsa65:` + first 16 hex characters of SHA-256(public key).
   *
   * @throws {Error} if the public key has not been fetched yet.
   */
  get keyId(): string {
    if (this.#publicKey === undefined) {
      throw new Error('KmsMlDsaSigner: keyId is known only after publicKey() has resolved (use KmsMlDsaSigner.connect)');
    }
    return mlDsaKeyId(this.#publicKey);
  }

  /** Full SHA-256 of the public key, hex (fetches the key on first use). */
  async fingerprint(): Promise<string> {
    return mlDsaPublicKeyFingerprint(await this.publicKey());
  }

  /**
   * The raw 1952-byte public key, unwrapped from the SubjectPublicKeyInfo that KMS GetPublicKey
   * returns. Fetched once; a failed fetch is not cached, so the next call retries.
   */
  async publicKey(): Promise<Uint8Array> {
    this.#publicKey = await this.#fetchPublicKey();
    return Uint8Array.from(this.#publicKey);
  }

  /**
   * Pure ML-DSA-65 signature with an empty context over `message`, made by KMS
   * (`SigningAlgorithm: ML_DSA_SHAKE_256`, `MessageType: RAW`), 3309 bytes.
   *
   * @throws {RangeError} if `message` is empty or longer than 4096 bytes (KMS's RAW limits);
   *   {Error} if KMS fails or returns a signature that is malformed or does not verify.
   */
  async sign(message: Uint8Array): Promise<Uint8Array> {
    assertBytes(message, 'ML-DSA-65 message');
    if (message.length === 0 || message.length > KMS_MAX_RAW_MESSAGE_BYTES) {
      throw new RangeError(`KMS RAW message: expected 1..${KMS_MAX_RAW_MESSAGE_BYTES} bytes, got ${message.length}`);
    }
    // Both before KMS is called, so that neither can fail after a signature was paid for. liboqs is
    // loaded only where node:crypto has no ML-DSA (Node < 24.6).
    const check = this.#verifyAfterSign ? await Promise.all([this.publicKey(), nodeCryptoMlDsa65() ? undefined : liboqsMlDsa65()]) : undefined;
    let response;
    try {
      response = await this.#client.send(
        new SignCommand({ KeyId: this.kmsKeyId, Message: message, MessageType: 'RAW', SigningAlgorithm: 'ML_DSA_SHAKE_256' }),
      );
    } catch (err) {
      throw new Error(`KMS Sign failed for ${this.kmsKeyId}: ${errorName(err)}`, { cause: err });
    }
    if (response.SigningAlgorithm !== undefined && response.SigningAlgorithm !== 'ML_DSA_SHAKE_256') {
      throw new Error(`KMS Sign for ${this.kmsKeyId} used ${response.SigningAlgorithm}, expected ML_DSA_SHAKE_256`);
    }
    const signature = response.Signature;
    if (signature === undefined || signature.length !== ML_DSA_65_SIGNATURE_BYTES) {
      throw new Error(`KMS Sign for ${this.kmsKeyId} returned ${signature?.length ?? 'no'} signature bytes, expected ${ML_DSA_65_SIGNATURE_BYTES}`);
    }
    // node:crypto or liboqs rather than noble: the same check (pure, empty context), 0.15 or 0.2 ms
    // instead of 1 ms (bench/ml-dsa-runtimes.ts).
    if (check !== undefined && !verifiesKms(check[1], message, signature, check[0])) {
      throw new Error(`KMS Sign for ${this.kmsKeyId} returned a signature that does not verify under the key's public key`);
    }
    return Uint8Array.from(signature);
  }
}

/** The KMS signature check: node:crypto when `oqs` is undefined (this Node has ML-DSA), else liboqs. */
function verifiesKms(oqs: MLDSA65 | undefined, message: Uint8Array, signature: Uint8Array, publicKey: Uint8Array): boolean {
  if (oqs === undefined) return verifyMlDsa65Node(signature, message, publicKey);
  return oqs.verify(Uint8Array.from(message), Uint8Array.from(signature), publicKey);
}
