/**
 * The TSA's signing key behind one small interface, chosen by configuration (like sigstore's
 * timestamp-authority): a WebCrypto key loaded from PKCS#8 (local, generated into DATA_DIR), or an
 * AWS KMS key of key spec `ECC_NIST_P256` whose private half never leaves KMS (production).
 */
import { createHash, createPublicKey, randomBytes, verify as nodeVerify } from 'node:crypto';
import { GetPublicKeyCommand, SignCommand, type KMSClient } from '@aws-sdk/client-kms';
import type * as pkijs from 'pkijs';
import { ID_ML_DSA_65, KMS_MAX_RAW_MESSAGE_BYTES, ML_DSA_65_SIGNATURE_BYTES, mlDsa65PublicKeyFromSpki, verifyMlDsa65 } from '../ml-dsa.js';
import type { PqSigner } from '../ports.js';

const subtle = globalThis.crypto.subtle;

/** ecdsa-with-SHA256 (RFC 5758 §3.2) and sha256WithRSAEncryption (RFC 4055 §5). */
export const SIGNATURE_OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  sha256WithRsa: '1.2.840.113549.1.1.11',
  /** id-ml-dsa-65 (RFC 9881 §2, RFC 9882 §3): parameters absent. */
  mlDsa65: ID_ML_DSA_65,
} as const;

/** What the embedded TSA needs of its key: a SHA-256 signature over the DER of the signed attributes. */
export interface TsaKeySigner {
  /**
   * SignerInfo.signatureAlgorithm (RFC 5652 §5.3). `nullParameters`: RFC 4055 §5 wants NULL for
   * the RSA algorithms; RFC 5758 §3.2 wants the parameters absent for ECDSA.
   */
  readonly signatureAlgorithm: { oid: string; nullParameters: boolean };
  /**
   * The CMS digest algorithm (SignerInfo.digestAlgorithm and the message-digest attribute, RFC 5652
   * §5.3, §11.2). SHA-256 when absent; SHA-512 for ML-DSA-65 (RFC 9882 §3.3 asks of a digest at
   * least the collision strength of the signature: SHA-384 or SHA-512 for ML-DSA-65, SHA-512 the one
   * every implementation has).
   */
  readonly digest?: 'SHA-256' | 'SHA-512';
  /**
   * Signs SHA-256(`data`): for ECDSA a DER ECDSA-Sig-Value (RFC 3279 §2.2.3, the form CMS carries,
   * RFC 5753 §7.2), for RSA the PKCS#1 v1.5 signature bytes; for ML-DSA-65 the pure signature over
   * `data` itself (RFC 9882 §3.3: no pre-hash, empty context).
   */
  sign(data: Uint8Array): Promise<Uint8Array>;
  /**
   * The key's DER SubjectPublicKeyInfo, when the key can tell it without signing (a KMS key:
   * GetPublicKey). Then {@link signerMatchesCertificate} compares keys instead of signing a
   * challenge, so that a function granted only kms:GetPublicKey on the TSA key (health, the
   * reconciler) can build the TSA, and a cold start costs no signature.
   */
  publicKeySpki?(): Promise<Uint8Array>;
}

/** A TSA key on AWS KMS: its id and client, and its public key by GetPublicKey (no signature). */
abstract class KmsTsaKey {
  /** The KMS key id, ARN or alias this signer was given. */
  readonly kmsKeyId: string;
  protected readonly client: KMSClient;

  constructor(client: KMSClient, kmsKeyId: string) {
    if (typeof kmsKeyId !== 'string' || kmsKeyId.length === 0) throw new TypeError('KMS key id: expected a non-empty string');
    this.client = client;
    this.kmsKeyId = kmsKeyId;
  }

  /** GetPublicKey: the key's DER SubjectPublicKeyInfo. */
  async publicKeySpki(): Promise<Uint8Array> {
    let response;
    try {
      response = await this.client.send(new GetPublicKeyCommand({ KeyId: this.kmsKeyId }));
    } catch (err) {
      throw new Error(`KMS GetPublicKey failed for ${this.kmsKeyId}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`, { cause: err });
    }
    if (!response.PublicKey || response.PublicKey.length === 0) throw new Error(`KMS GetPublicKey for ${this.kmsKeyId} returned no public key`);
    return Uint8Array.from(response.PublicKey);
  }
}

/** A TSA key held in the process as a non-extractable WebCrypto key (ECDSA P-256/384/521 or RSA). */
export class WebCryptoTsaKeySigner implements TsaKeySigner {
  readonly signatureAlgorithm: { oid: string; nullParameters: boolean };
  readonly #key: CryptoKey;

  constructor(key: CryptoKey) {
    if (key.algorithm.name === 'ECDSA') this.signatureAlgorithm = { oid: SIGNATURE_OID.ecdsaWithSha256, nullParameters: false };
    else if (key.algorithm.name === 'RSASSA-PKCS1-v1_5') this.signatureAlgorithm = { oid: SIGNATURE_OID.sha256WithRsa, nullParameters: true };
    else throw new Error(`unsupported TSA key algorithm ${key.algorithm.name} (ECDSA and RSA PKCS#1 v1.5 are supported)`);
    this.#key = key;
  }

  async sign(data: Uint8Array): Promise<Uint8Array> {
    if (this.#key.algorithm.name === 'ECDSA') {
      // WebCrypto returns r‖s (IEEE P1363); CMS carries the DER SEQUENCE { r, s }.
      const raw = new Uint8Array(await subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, this.#key, toBuffer(data)));
      return ecdsaP1363ToDer(raw);
    }
    return new Uint8Array(await subtle.sign({ name: 'RSASSA-PKCS1-v1_5' }, this.#key, toBuffer(data)));
  }
}

/**
 * A TSA key on AWS KMS (key spec `ECC_NIST_P256`, key usage `SIGN_VERIFY`). The SHA-256 of the
 * signed attributes is computed here and sent with `MessageType: DIGEST`, `ECDSA_SHA_256`: KMS
 * signs it without hashing again, and the attributes themselves never leave the service. KMS
 * answers a DER ECDSA-Sig-Value, exactly what CMS carries.
 */
export class KmsTsaKeySigner extends KmsTsaKey implements TsaKeySigner {
  readonly signatureAlgorithm = { oid: SIGNATURE_OID.ecdsaWithSha256, nullParameters: false };

  async sign(data: Uint8Array): Promise<Uint8Array> {
    const digest = createHash('sha256').update(data).digest();
    let response;
    try {
      response = await this.client.send(
        new SignCommand({ KeyId: this.kmsKeyId, Message: digest, MessageType: 'DIGEST', SigningAlgorithm: 'ECDSA_SHA_256' }),
      );
    } catch (err) {
      throw new Error(`KMS Sign failed for ${this.kmsKeyId}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`, { cause: err });
    }
    if (response.SigningAlgorithm !== undefined && response.SigningAlgorithm !== 'ECDSA_SHA_256') {
      throw new Error(`KMS Sign for ${this.kmsKeyId} used ${response.SigningAlgorithm}, expected ECDSA_SHA_256`);
    }
    if (response.Signature === undefined || response.Signature.length === 0) throw new Error(`KMS Sign for ${this.kmsKeyId} returned no signature`);
    return Uint8Array.from(response.Signature);
  }
}

/**
 * An ML-DSA-65 TSA key behind the service's {@link PqSigner} port (RFC 9882): the local seed in
 * DATA_DIR (a LocalMlDsaSigner: liboqs signs, another implementation checks its first signature)
 * or an AWS KMS key of key spec `ML_DSA_65` (KmsMlDsaSigner: `ML_DSA_SHAKE_256`, `MessageType:
 * RAW`, every signature verified before it is used). The signed attributes of a token are about
 * 200 bytes, far below KMS's 4096-byte RAW limit, so EXTERNAL_MU is not needed.
 */
export class MlDsaTsaKeySigner implements TsaKeySigner {
  readonly signatureAlgorithm = { oid: SIGNATURE_OID.mlDsa65, nullParameters: false };
  readonly digest = 'SHA-512' as const;
  readonly pq: PqSigner;

  constructor(pq: PqSigner) {
    this.pq = pq;
  }

  sign(data: Uint8Array): Promise<Uint8Array> {
    return this.pq.sign(data);
  }
}

/**
 * The post-quantum TSA's key on AWS KMS (key spec `ML_DSA_65`, key usage `SIGN_VERIFY`): the
 * signed attributes are sent as they are (`MessageType: RAW`, `ML_DSA_SHAKE_256`, as
 * lib/crypto/ml-dsa-kms.ts signs the service's ML-DSA key; a token's signed attributes are ~200
 * bytes, far below the 4096-byte RAW limit) and KMS answers the 3309-byte pure ML-DSA-65
 * signature CMS carries (RFC 9882 §3.3). Not KmsMlDsaSigner itself: that one checks signatures with
 * liboqs on a Node without ML-DSA, which would put liboqs' WASM into every function that
 * time-stamps; the embedded TSA checks every signature with the leaf's key before it issues.
 */
export class KmsMlDsaTsaKeySigner extends KmsTsaKey implements TsaKeySigner {
  readonly signatureAlgorithm = { oid: SIGNATURE_OID.mlDsa65, nullParameters: false };
  readonly digest = 'SHA-512' as const;

  async sign(data: Uint8Array): Promise<Uint8Array> {
    if (data.length === 0 || data.length > KMS_MAX_RAW_MESSAGE_BYTES) throw new RangeError(`KMS RAW message: expected 1..${KMS_MAX_RAW_MESSAGE_BYTES} bytes, got ${data.length}`);
    let response;
    try {
      response = await this.client.send(new SignCommand({ KeyId: this.kmsKeyId, Message: data, MessageType: 'RAW', SigningAlgorithm: 'ML_DSA_SHAKE_256' }));
    } catch (err) {
      throw new Error(`KMS Sign failed for ${this.kmsKeyId}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`, { cause: err });
    }
    if (response.SigningAlgorithm !== undefined && response.SigningAlgorithm !== 'ML_DSA_SHAKE_256') {
      throw new Error(`KMS Sign for ${this.kmsKeyId} used ${response.SigningAlgorithm}, expected ML_DSA_SHAKE_256`);
    }
    if (response.Signature === undefined || response.Signature.length !== ML_DSA_65_SIGNATURE_BYTES) {
      throw new Error(`KMS Sign for ${this.kmsKeyId} returned ${response.Signature?.length ?? 'no'} signature bytes, expected ${ML_DSA_65_SIGNATURE_BYTES}`);
    }
    return Uint8Array.from(response.Signature);
  }
}

/**
 * Whether `signer` holds the private key of `cert`. A signer that tells its public key (a KMS key,
 * GetPublicKey) is compared key to key, with no signature; any other signs a random challenge,
 * verified with the certificate's public key. False on any failure.
 */
export async function signerMatchesCertificate(signer: TsaKeySigner, cert: pkijs.Certificate): Promise<boolean> {
  const challenge = randomBytes(32);
  try {
    const spki = Buffer.from(cert.subjectPublicKeyInfo.toSchema().toBER(false));
    if (signer.publicKeySpki) return sameSpki(await signer.publicKeySpki(), spki, signer.signatureAlgorithm.oid);
    if (cert.subjectPublicKeyInfo.algorithm.algorithmId === SIGNATURE_OID.mlDsa65) {
      if (signer.signatureAlgorithm.oid !== SIGNATURE_OID.mlDsa65) return false;
      return verifyMlDsa65(await signer.sign(challenge), challenge, mlDsa65PublicKeyFromSpki(spki));
    }
    const publicKey = createPublicKey({ key: spki, format: 'der', type: 'spki' });
    const expected = publicKey.asymmetricKeyType === 'ec' ? SIGNATURE_OID.ecdsaWithSha256 : SIGNATURE_OID.sha256WithRsa;
    if (signer.signatureAlgorithm.oid !== expected) return false;
    // node:crypto verifies ECDSA in its DER form by default, like CMS carries it.
    return nodeVerify('sha256', challenge, publicKey, await signer.sign(challenge));
  } catch {
    return false;
  }
}

/**
 * Whether two DER SubjectPublicKeyInfos hold the same key of the signer's algorithm: ML-DSA-65 by
 * its raw public key (RFC 9881 §4), EC and RSA through node:crypto (the same key, however its
 * encoder wrote the curve or the integers).
 */
function sameSpki(a: Uint8Array, b: Uint8Array, signatureOid: string): boolean {
  if (signatureOid === SIGNATURE_OID.mlDsa65) return Buffer.from(mlDsa65PublicKeyFromSpki(Buffer.from(a))).equals(Buffer.from(mlDsa65PublicKeyFromSpki(Buffer.from(b))));
  const [ka, kb] = [a, b].map((der) => createPublicKey({ key: Buffer.from(der), format: 'der', type: 'spki' }));
  const expected = ka!.asymmetricKeyType === 'ec' ? SIGNATURE_OID.ecdsaWithSha256 : SIGNATURE_OID.sha256WithRsa;
  return signatureOid === expected && ka!.equals(kb!);
}

/** r‖s (each half of `raw`) → DER SEQUENCE { INTEGER r, INTEGER s } (X.690 minimal integers). */
export function ecdsaP1363ToDer(raw: Uint8Array): Uint8Array {
  if (raw.length === 0 || raw.length % 2 !== 0) throw new Error('an IEEE P1363 ECDSA signature has two halves of equal length');
  const integer = (bytes: Uint8Array): number[] => {
    let i = 0;
    while (i < bytes.length - 1 && bytes[i] === 0) i++;
    const body = [...bytes.subarray(i)];
    if ((body[0] ?? 0) & 0x80) body.unshift(0);
    return [0x02, ...derLength(body.length), ...body];
  };
  const half = raw.length / 2;
  const content = [...integer(raw.subarray(0, half)), ...integer(raw.subarray(half))];
  return Uint8Array.from([0x30, ...derLength(content.length), ...content]);
}

function derLength(n: number): number[] {
  if (n < 0x80) return [n];
  if (n < 0x100) return [0x81, n];
  return [0x82, n >> 8, n & 0xff];
}

function toBuffer(data: Uint8Array): ArrayBuffer {
  return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer;
}
