/**
 * The ledger wallet on an AWS KMS key (key spec `ECC_SECG_P256K1`): an ethers Signer whose private
 * key never leaves KMS. It signs the 32-byte transaction hash with KMS `Sign` (`MessageType:
 * DIGEST`, `ECDSA_SHA_256`: KMS signs the given digest as is, without hashing it again) and turns
 * the DER signature into Ethereum's (r, s, v).
 */
import { createPublicKey } from 'node:crypto';
import { SignCommand, type KMSClient } from '@aws-sdk/client-kms';
import { readKmsPublicKey } from '../crypto/kms-client.js';
import { lazy } from '../memo.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import {
  AbstractSigner,
  Signature,
  Transaction,
  TypedDataEncoder,
  computeAddress,
  copyRequest,
  getAddress,
  getBytes,
  hashMessage,
  recoverAddress,
  resolveAddress,
  resolveProperties,
  toBeHex,
  type Provider,
  type TransactionLike,
  type TransactionRequest,
  type TypedDataDomain,
  type TypedDataField,
} from 'ethers';

/** Order of the secp256k1 group (SEC 2 §2.4.1). */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const HALF_N = SECP256K1_N / 2n;

/**
 * The Ethereum address of a secp256k1 SubjectPublicKeyInfo (DER, as KMS GetPublicKey returns it):
 * the uncompressed point 04‖X‖Y, keccak-256 of X‖Y, last 20 bytes (Yellow Paper eq. 284).
 * @throws Error when the key is not an EC key on secp256k1.
 */
export function addressFromSpki(spki: Uint8Array): string {
  let jwk: { kty?: string; crv?: string; x?: string; y?: string };
  try {
    jwk = createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' }).export({ format: 'jwk' });
  } catch (err) {
    throw new Error('the public key is not a DER SubjectPublicKeyInfo of an EC key', { cause: err });
  }
  if (jwk.kty !== 'EC' || jwk.crv !== 'secp256k1' || !jwk.x || !jwk.y) {
    throw new Error(`the public key is not on secp256k1 (${jwk.kty ?? '?'} ${jwk.crv ?? '?'})`);
  }
  const x = Buffer.from(jwk.x, 'base64url');
  const y = Buffer.from(jwk.y, 'base64url');
  if (x.length !== 32 || y.length !== 32) throw new Error('the secp256k1 point has unexpected coordinates');
  return computeAddress(`0x04${x.toString('hex')}${y.toString('hex')}`);
}

/**
 * (r, s) of a DER ECDSA-Sig-Value (RFC 3279 §2.2.3), with s moved to the lower half of the group
 * order (EIP-2: Ethereum refuses s > n/2; (r, n − s) is the other valid signature of the same
 * digest, so normalising changes nothing else).
 * @throws Error for malformed DER or out-of-range values.
 */
export function lowSFromDer(der: Uint8Array): { r: bigint; s: bigint; flipped: boolean } {
  let sig;
  try {
    sig = secp256k1.Signature.fromBytes(der, 'der');
  } catch (err) {
    throw new Error('KMS returned a signature that is not a DER ECDSA-Sig-Value', { cause: err });
  }
  const flipped = sig.s > HALF_N;
  return { r: sig.r, s: flipped ? SECP256K1_N - sig.s : sig.s, flipped };
}

/**
 * An ethers Signer on a KMS key of key spec `ECC_SECG_P256K1`. Pass a key ARN or id: the address
 * comes from GetPublicKey once and is cached (a failed fetch is retried on the next call).
 *
 * KMS does not return the recovery id; it is found by recovering the address from the digest with
 * v = 27 and v = 28 and keeping the one that yields this key's address. A signature that yields
 * neither (the alias now points to another key, a faulty answer) is refused, so nothing is ever
 * sent from an unexpected address.
 */
export class KmsLedgerSigner extends AbstractSigner {
  /** The KMS key id, ARN or alias this signer was given. */
  readonly kmsKeyId: string;
  readonly #client: KMSClient;
  /** The address once known (given, or fetched): connect() hands it on. */
  #address: string | undefined;
  readonly #fetchAddress = lazy(async () => addressFromSpki(await readKmsPublicKey(this.#client, this.kmsKeyId, 'ECC_SECG_P256K1')));

  constructor(client: KMSClient, kmsKeyId: string, provider: Provider | null = null, address?: string) {
    super(provider);
    if (typeof kmsKeyId !== 'string' || kmsKeyId.length === 0) throw new TypeError('KMS key id: expected a non-empty string');
    this.#client = client;
    this.kmsKeyId = kmsKeyId;
    this.#address = address;
  }

  /** The same KMS key on another provider (the cached address is kept). */
  connect(provider: Provider | null): KmsLedgerSigner {
    return new KmsLedgerSigner(this.#client, this.kmsKeyId, provider, this.#address);
  }

  /** The checksummed address of the KMS key (GetPublicKey once). */
  async getAddress(): Promise<string> {
    if (this.#address === undefined) this.#address = await this.#fetchAddress();
    return this.#address;
  }

  /**
   * Signs a 32-byte digest with KMS and returns the Ethereum signature (low s, v 27/28).
   * @throws Error when KMS fails or its signature does not recover to this key's address.
   */
  async signDigest(digest: string | Uint8Array): Promise<Signature> {
    const bytes = getBytes(digest);
    if (bytes.length !== 32) throw new RangeError(`a digest has 32 bytes, got ${bytes.length}`);
    const address = await this.getAddress();
    let response;
    try {
      response = await this.#client.send(
        new SignCommand({ KeyId: this.kmsKeyId, Message: bytes, MessageType: 'DIGEST', SigningAlgorithm: 'ECDSA_SHA_256' }),
      );
    } catch (err) {
      throw new Error(`KMS Sign failed for ${this.kmsKeyId}: ${errorName(err)}`, { cause: err });
    }
    if (response.Signature === undefined) throw new Error(`KMS Sign for ${this.kmsKeyId} returned no signature`);
    const { r, s } = lowSFromDer(response.Signature);
    for (const v of [27, 28] as const) {
      const signature = Signature.from({ r: toBeHex(r, 32), s: toBeHex(s, 32), v });
      let recovered: string;
      try {
        recovered = recoverAddress(bytes, signature);
      } catch {
        continue; // r is not the x-coordinate of a point for this parity
      }
      if (recovered === address) return signature;
    }
    throw new Error(`KMS Sign for ${this.kmsKeyId} returned a signature that does not recover to ${address}`);
  }

  /** Signs a transaction like ethers' Wallet does: the unsigned hash (keccak of the typed payload), serialised with the signature. */
  async signTransaction(tx: TransactionRequest): Promise<string> {
    const request = copyRequest(tx);
    const { to, from } = await resolveProperties({
      to: request.to ? resolveAddress(request.to, this) : undefined,
      from: request.from ? resolveAddress(request.from, this) : undefined,
    });
    if (to != null) request.to = to;
    if (from != null && getAddress(from) !== (await this.getAddress())) throw new Error('transaction from address mismatch');
    delete request.from;
    const btx = Transaction.from(request as TransactionLike<string>);
    btx.signature = await this.signDigest(btx.unsignedHash);
    return btx.serialized;
  }

  /** EIP-191 personal message signature. */
  async signMessage(message: string | Uint8Array): Promise<string> {
    return (await this.signDigest(hashMessage(message))).serialized;
  }

  /** EIP-712 typed data signature (ENS names resolved through the provider). */
  async signTypedData(domain: TypedDataDomain, types: Record<string, TypedDataField[]>, value: Record<string, unknown>): Promise<string> {
    const populated = await TypedDataEncoder.resolveNames(domain, types, value, async (name) => {
      if (!this.provider) throw new Error('cannot resolve ENS names without a provider');
      const address = await this.provider.resolveName(name);
      if (!address) throw new Error(`unconfigured ENS name ${name}`);
      return address;
    });
    return (await this.signDigest(TypedDataEncoder.hash(populated.domain, types, populated.value))).serialized;
  }
}

function errorName(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
