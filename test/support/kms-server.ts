/**
 * A tiny AWS KMS stand-in for tests: speaks the AWS JSON 1.1 protocol the SDK uses
 * (POST / with `X-Amz-Target: TrentService.<Operation>`, JSON bodies, blobs as base64) and answers
 * GetPublicKey and Sign with real signatures, and Encrypt/Decrypt with real AES-256-GCM.
 * Request signatures (SigV4) are not checked.
 *
 * Keys are pluggable ({@link KmsTestKey}): {@link mlDsa65TestKey} (ML_DSA_65),
 * {@link ecdsaTestKey} (ECC_NIST_P256, ECC_SECG_P256K1), {@link ed25519TestKey} (ECC_NIST_EDWARDS25519) and {@link symmetricTestKey}
 * (SYMMETRIC_DEFAULT).
 */
import { createCipheriv, createDecipheriv, createHash, createPrivateKey, createPublicKey, randomBytes, sign as nodeSign } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KMSClient } from '@aws-sdk/client-kms';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';

/**
 * One key held by the test server: an asymmetric signing key (`publicKeyDer` and `sign`) or a
 * symmetric encryption key (`keyUsage: 'ENCRYPT_DECRYPT'`, `encrypt` and `decrypt`).
 */
export interface KmsTestKey {
  /** Bare key id (the last part of the ARN). */
  readonly keyId: string;
  /** KMS key spec, e.g. `ML_DSA_65`, `ECC_NIST_P256`, `ECC_SECG_P256K1`, `SYMMETRIC_DEFAULT`. */
  readonly keySpec: string;
  /** Default `SIGN_VERIFY`. */
  readonly keyUsage?: 'SIGN_VERIFY' | 'ENCRYPT_DECRYPT';
  /** Signing algorithms KMS lists for the key, e.g. `ML_DSA_SHAKE_256`, `ECDSA_SHA_256`. */
  readonly signingAlgorithms: readonly string[];
  /** DER SubjectPublicKeyInfo, as GetPublicKey returns it. */
  publicKeyDer?(): Uint8Array;
  /**
   * Signs like KMS would. Throw a {@link KmsTestError} to answer with a KMS error
   * (e.g. a `ValidationException` for an unsupported message type).
   */
  sign?(message: Uint8Array, messageType: string, signingAlgorithm: string): Uint8Array;
  /** Symmetric keys: the ciphertext of `plaintext` bound to `context` (the EncryptionContext as AAD). */
  encrypt?(plaintext: Uint8Array, context: Uint8Array): { iv: Uint8Array; ciphertext: Uint8Array };
  /** Symmetric keys: the plaintext, or a {@link KmsTestError} `InvalidCiphertextException`. */
  decrypt?(iv: Uint8Array, ciphertext: Uint8Array, context: Uint8Array): Uint8Array;
}

/** An error the server answers with as a KMS error (`__type`, HTTP 400 by default). */
export class KmsTestError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

/** A request the server received, parsed. */
export interface KmsRecordedRequest {
  /** The operation, e.g. `Sign` (from `X-Amz-Target: TrentService.Sign`). */
  operation: string;
  body: Record<string, unknown>;
}

/** Options of {@link startKmsTestServer}. */
export interface KmsTestServerOptions {
  region?: string;
  account?: string;
  /** Alias name (`alias/...`) → bare key id. */
  aliases?: Record<string, string>;
  /** Lets a test alter a successful response body before it is sent (fault injection). */
  transformResponse?: (operation: string, body: Record<string, unknown>) => Record<string, unknown>;
}

/** A running test server. */
export interface KmsTestServer {
  /** `http://127.0.0.1:<port>`, for the KMSClient `endpoint`. */
  readonly endpoint: string;
  readonly region: string;
  /** Every request received, in order. */
  readonly requests: KmsRecordedRequest[];
  /** The ARN the server reports for a key. */
  arn(keyId: string): string;
  /** A KMSClient pointed at this server with dummy credentials and no retries. */
  client(): KMSClient;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 1 << 20;
/** KMS Sign limit for `MessageType: RAW` (KMS API reference, Sign). */
const MAX_RAW_MESSAGE_BYTES = 4096;

/** Starts the server on an ephemeral port of 127.0.0.1. */
export async function startKmsTestServer(keys: readonly KmsTestKey[], options: KmsTestServerOptions = {}): Promise<KmsTestServer> {
  const region = options.region ?? 'us-east-1';
  const account = options.account ?? '111122223333';
  const byId = new Map(keys.map((k) => [k.keyId, k]));
  const aliases = new Map(Object.entries(options.aliases ?? {}));
  const requests: KmsRecordedRequest[] = [];
  const clients: KMSClient[] = [];
  const arn = (keyId: string): string => `arn:aws:kms:${region}:${account}:key/${keyId}`;

  const findKey = (keyIdParam: unknown): KmsTestKey => {
    if (typeof keyIdParam !== 'string' || keyIdParam === '') throw new KmsTestError('ValidationException', 'KeyId is required');
    let id = keyIdParam;
    const arnPrefix = `arn:aws:kms:${region}:${account}:`;
    if (id.startsWith(arnPrefix)) id = id.slice(arnPrefix.length);
    if (id.startsWith('key/')) id = id.slice('key/'.length);
    if (id.startsWith('alias/')) id = aliases.get(id) ?? '';
    const key = byId.get(id);
    if (key === undefined) throw new KmsTestError('NotFoundException', `Key '${keyIdParam}' does not exist`);
    return key;
  };

  const operations: Record<string, (body: Record<string, unknown>) => Record<string, unknown>> = {
    GetPublicKey(body) {
      const key = findKey(body.KeyId);
      if (key.publicKeyDer === undefined) {
        throw new KmsTestError('UnsupportedOperationException', `${arn(key.keyId)} is not an asymmetric key`);
      }
      return {
        KeyId: arn(key.keyId),
        PublicKey: Buffer.from(key.publicKeyDer()).toString('base64'),
        KeySpec: key.keySpec,
        CustomerMasterKeySpec: key.keySpec,
        KeyUsage: 'SIGN_VERIFY',
        SigningAlgorithms: [...key.signingAlgorithms],
      };
    },
    Sign(body) {
      const key = findKey(body.KeyId);
      if (key.sign === undefined) throw new KmsTestError('InvalidKeyUsageException', `${arn(key.keyId)} is not a signing key`);
      if (typeof body.Message !== 'string') throw new KmsTestError('ValidationException', 'Message is required');
      const message = Buffer.from(body.Message, 'base64');
      const messageType = typeof body.MessageType === 'string' ? body.MessageType : 'RAW';
      const algorithm = body.SigningAlgorithm;
      if (typeof algorithm !== 'string') throw new KmsTestError('ValidationException', 'SigningAlgorithm is required');
      if (!key.signingAlgorithms.includes(algorithm)) {
        throw new KmsTestError('InvalidKeyUsageException', `Algorithm ${algorithm} is not supported by key ${arn(key.keyId)}`);
      }
      if (message.length === 0 || (messageType === 'RAW' && message.length > MAX_RAW_MESSAGE_BYTES)) {
        throw new KmsTestError('ValidationException', `Message length ${message.length} is out of range for ${messageType}`);
      }
      const signature = key.sign(Uint8Array.from(message), messageType, algorithm);
      return { KeyId: arn(key.keyId), Signature: Buffer.from(signature).toString('base64'), SigningAlgorithm: algorithm };
    },
    Encrypt(body) {
      const key = findKey(body.KeyId);
      if (key.encrypt === undefined) throw new KmsTestError('InvalidKeyUsageException', `${arn(key.keyId)} is not an encryption key`);
      if (typeof body.Plaintext !== 'string') throw new KmsTestError('ValidationException', 'Plaintext is required');
      const plaintext = Buffer.from(body.Plaintext, 'base64');
      // KMS Encrypt: 1..4096 bytes of plaintext.
      if (plaintext.length === 0 || plaintext.length > 4096) throw new KmsTestError('ValidationException', 'Plaintext must be 1..4096 bytes');
      const { iv, ciphertext } = key.encrypt(plaintext, encryptionContextBytes(body.EncryptionContext));
      const blob = encodeCiphertextBlob(key.keyId, iv, ciphertext);
      return { KeyId: arn(key.keyId), CiphertextBlob: Buffer.from(blob).toString('base64'), EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' };
    },
    Decrypt(body) {
      if (typeof body.CiphertextBlob !== 'string') throw new KmsTestError('ValidationException', 'CiphertextBlob is required');
      const parsed = decodeCiphertextBlob(Buffer.from(body.CiphertextBlob, 'base64'));
      // Like KMS: for symmetric keys the key is named inside the ciphertext; a KeyId given by the
      // caller must be that key.
      const key = findKey(parsed.keyId);
      if (body.KeyId !== undefined && findKey(body.KeyId).keyId !== key.keyId) {
        throw new KmsTestError('IncorrectKeyException', 'The key ID in the request does not identify the key that encrypted the ciphertext');
      }
      if (key.decrypt === undefined) throw new KmsTestError('InvalidCiphertextException', 'the ciphertext does not belong to a symmetric key');
      const plaintext = key.decrypt(parsed.iv, parsed.ciphertext, encryptionContextBytes(body.EncryptionContext));
      return { KeyId: arn(key.keyId), Plaintext: Buffer.from(plaintext).toString('base64'), EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' };
    },
  };

  const server = createServer((req, res) => {
    void handle(req, res);
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const target = req.headers['x-amz-target'];
      if (req.method !== 'POST' || typeof target !== 'string' || !target.startsWith('TrentService.')) {
        throw new KmsTestError('UnknownOperationException', `unsupported request ${req.method ?? ''} ${String(target)}`);
      }
      const operation = target.slice('TrentService.'.length);
      const body = await readJson(req);
      requests.push({ operation, body });
      const handler = operations[operation];
      if (handler === undefined) throw new KmsTestError('UnknownOperationException', `operation ${operation} is not implemented`);
      let result = handler(body);
      if (options.transformResponse) result = options.transformResponse(operation, result);
      send(res, 200, result);
    } catch (err) {
      const e = err instanceof KmsTestError ? err : new KmsTestError('KMSInternalException', String(err), 500);
      res.setHeader('x-amzn-ErrorType', e.type);
      send(res, e.status, { __type: e.type, message: e.message });
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;

  return {
    endpoint,
    region,
    requests,
    arn,
    client() {
      const client = new KMSClient({
        region,
        endpoint,
        credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'test-secret' },
        maxAttempts: 1,
      });
      clients.push(client);
      return client;
    },
    async close() {
      for (const c of clients) c.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new KmsTestError('ValidationException', 'request body too large');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  let parsed: unknown;
  try {
    parsed = text === '' ? {} : JSON.parse(text);
  } catch {
    throw new KmsTestError('SerializationException', 'request body is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new KmsTestError('SerializationException', 'request body is not a JSON object');
  }
  return parsed as Record<string, unknown>;
}

function send(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'content-length': Buffer.byteLength(payload) });
  res.end(payload);
}

// --- DER helpers (X.690) for building SubjectPublicKeyInfo -------------------------------------

/** Encodes one DER element with a definite, minimal length. */
export function derElement(tag: number, content: Uint8Array): Uint8Array {
  const n = content.length;
  let header: number[];
  if (n < 0x80) header = [tag, n];
  else if (n < 0x100) header = [tag, 0x81, n];
  else if (n < 0x10000) header = [tag, 0x82, n >> 8, n & 0xff];
  else header = [tag, 0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  const out = new Uint8Array(header.length + n);
  out.set(header, 0);
  out.set(content, header.length);
  return out;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, p) => sum + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

/** DER of OBJECT IDENTIFIER 2.16.840.1.101.3.4.3.18 (id-ml-dsa-65). */
export const ID_ML_DSA_65_DER = Uint8Array.from([0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x12]);

/**
 * SubjectPublicKeyInfo of an ML-DSA-65 key as RFC 9881 defines it (and KMS returns it):
 * algorithm id-ml-dsa-65 with parameters absent, the raw key in a BIT STRING.
 */
export function mlDsa65Spki(publicKey: Uint8Array, algorithmOidDer: Uint8Array = ID_ML_DSA_65_DER): Uint8Array {
  const algorithm = derElement(0x30, algorithmOidDer);
  const bits = derElement(0x03, concat(Uint8Array.of(0), publicKey));
  return derElement(0x30, concat(algorithm, bits));
}

/** An ML-DSA-65 key (key spec `ML_DSA_65`) whose pair is derived from `seed` with noble. */
export function mlDsa65TestKey(keyId: string, seed: Uint8Array): KmsTestKey & { readonly publicKey: Uint8Array } {
  const { publicKey, secretKey } = ml_dsa65.keygen(seed);
  return {
    keyId,
    keySpec: 'ML_DSA_65',
    signingAlgorithms: ['ML_DSA_SHAKE_256'],
    publicKey,
    publicKeyDer: () => mlDsa65Spki(publicKey),
    sign(message, messageType) {
      // RAW: pure ML-DSA with an empty context (FIPS 204 Algorithm 2), hedged, as KMS signs.
      if (messageType === 'RAW') return ml_dsa65.sign(message, secretKey);
      // EXTERNAL_MU: the caller computed μ (FIPS 204 Algorithm 7) and sends its 64 bytes.
      if (messageType === 'EXTERNAL_MU') {
        if (message.length !== 64) throw new KmsTestError('ValidationException', 'EXTERNAL_MU message must be 64 bytes');
        return ml_dsa65.internal.sign(message, secretKey, { externalMu: true });
      }
      throw new KmsTestError('ValidationException', `MessageType ${messageType} is not supported for ML_DSA_65 keys`);
    },
  };
}

// --- ECDSA keys (ECC_NIST_P256, ECC_SECG_P256K1) -------------------------------------------

/** DER of OBJECT IDENTIFIER 1.2.840.10045.2.1 (id-ecPublicKey, RFC 5480 §2.1.1). */
const ID_EC_PUBLIC_KEY_DER = Uint8Array.from([0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01]);
/** secp256r1 (1.2.840.10045.3.1.7) and secp256k1 (1.3.132.0.10), RFC 5480 §2.1.1.1. */
const CURVE_OID_DER = {
  ECC_NIST_P256: Uint8Array.from([0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]),
  ECC_SECG_P256K1: Uint8Array.from([0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0a]),
} as const;

/** What an ECDSA test key does with `s` (KMS itself returns either half, at random). */
export type EcdsaSForm = 'as-signed' | 'high' | 'low';

/** Options of {@link ecdsaTestKey}. */
export interface EcdsaTestKeyOptions {
  /**
   * `as-signed` (default): random nonces and whichever `s` comes out, as KMS does; `high` forces
   * s > n/2 (replaces s with n - s when needed), `low` forces s ≤ n/2. Changeable later through
   * the key's `sForm` property.
   */
  sForm?: EcdsaSForm;
}

/**
 * An ECDSA key (`ECC_NIST_P256` or `ECC_SECG_P256K1`, signing algorithm `ECDSA_SHA_256`) on the
 * given 32-byte private scalar. GetPublicKey answers an RFC 5480 SubjectPublicKeyInfo with the
 * uncompressed point; Sign answers a DER ECDSA-Sig-Value (RFC 3279 §2.2.3) over SHA-256(message)
 * for `MessageType: RAW`, or over the 32-byte message itself for `DIGEST`.
 */
export function ecdsaTestKey(
  keyId: string,
  keySpec: 'ECC_NIST_P256' | 'ECC_SECG_P256K1',
  privateKey: Uint8Array,
  options: EcdsaTestKeyOptions = {},
): KmsTestKey & { readonly publicKey: Uint8Array; sForm: EcdsaSForm } {
  const curve = keySpec === 'ECC_NIST_P256' ? p256 : secp256k1;
  const publicKey = curve.getPublicKey(privateKey, false);
  const n = curve.Point.CURVE().n;
  return {
    keyId,
    keySpec,
    signingAlgorithms: ['ECDSA_SHA_256'],
    publicKey,
    sForm: options.sForm ?? 'as-signed',
    publicKeyDer: () => ecSpki(publicKey, CURVE_OID_DER[keySpec]),
    sign(message, messageType, algorithm) {
      if (algorithm !== 'ECDSA_SHA_256') throw new KmsTestError('InvalidKeyUsageException', `${algorithm} is not supported`);
      let digest: Uint8Array;
      if (messageType === 'RAW') digest = createHash('sha256').update(message).digest();
      else if (messageType === 'DIGEST') {
        if (message.length !== 32) throw new KmsTestError('ValidationException', 'a DIGEST message for ECDSA_SHA_256 must be 32 bytes');
        digest = message;
      } else throw new KmsTestError('ValidationException', `MessageType ${messageType} is not supported for ${keySpec} keys`);
      // Random k (extraEntropy), and no low-s normalisation: KMS's signatures are not deterministic
      // and their s lies in either half of the group order.
      const compact = curve.sign(digest, privateKey, { prehash: false, lowS: false, extraEntropy: true });
      let sig = curve.Signature.fromBytes(compact, 'compact');
      const high = sig.s > n / 2n;
      if ((this.sForm === 'high' && !high) || (this.sForm === 'low' && high)) sig = new curve.Signature(sig.r, n - sig.s);
      return sig.toBytes('der');
    },
  };
}

/** SubjectPublicKeyInfo of an EC key: id-ecPublicKey with the named curve, the point in a BIT STRING. */
export function ecSpki(point: Uint8Array, curveOidDer: Uint8Array): Uint8Array {
  const algorithm = derElement(0x30, concat(ID_EC_PUBLIC_KEY_DER, curveOidDer));
  return derElement(0x30, concat(algorithm, derElement(0x03, concat(Uint8Array.of(0), point))));
}

// --- Symmetric keys (SYMMETRIC_DEFAULT) ----------------------------------------------------------

/**
 * A symmetric key (key spec `SYMMETRIC_DEFAULT`, usage `ENCRYPT_DECRYPT`): AES-256-GCM like KMS,
 * with the canonical EncryptionContext as additional authenticated data.
 */
export function symmetricTestKey(keyId: string, key: Uint8Array = randomBytes(32)): KmsTestKey {
  if (key.length !== 32) throw new RangeError('a SYMMETRIC_DEFAULT test key has 32 bytes');
  return {
    keyId,
    keySpec: 'SYMMETRIC_DEFAULT',
    keyUsage: 'ENCRYPT_DECRYPT',
    signingAlgorithms: [],
    encrypt(plaintext, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(context);
      const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
      return { iv, ciphertext };
    },
    decrypt(iv, ciphertext, context) {
      if (ciphertext.length < 16) throw new KmsTestError('InvalidCiphertextException', 'ciphertext too short');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv);
        decipher.setAAD(context);
        decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
        return Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
      } catch {
        throw new KmsTestError('InvalidCiphertextException', 'the ciphertext or its encryption context is not valid');
      }
    },
  };
}

/** The EncryptionContext as sorted `key=value` lines (the AAD): any change makes Decrypt fail. */
function encryptionContextBytes(context: unknown): Uint8Array {
  if (context === undefined) return new Uint8Array(0);
  if (typeof context !== 'object' || context === null) throw new KmsTestError('ValidationException', 'EncryptionContext must be a map');
  const entries = Object.entries(context as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Buffer.from(entries.map(([k, v]) => `${k}=${String(v)}`).join('\n'), 'utf8');
}

/** Test ciphertext blob: magic "TKMS", key id length, key id, 12-byte IV, AES-GCM ciphertext + tag. */
const BLOB_MAGIC = Buffer.from('TKMS');

function encodeCiphertextBlob(keyId: string, iv: Uint8Array, ciphertext: Uint8Array): Uint8Array {
  const id = Buffer.from(keyId, 'utf8');
  return Buffer.concat([BLOB_MAGIC, Buffer.of(id.length), id, iv, ciphertext]);
}

function decodeCiphertextBlob(blob: Buffer): { keyId: string; iv: Uint8Array; ciphertext: Uint8Array } {
  const idLength = blob[4];
  if (blob.length < 5 || !blob.subarray(0, 4).equals(BLOB_MAGIC) || idLength === undefined || blob.length < 5 + idLength + 12 + 16) {
    throw new KmsTestError('InvalidCiphertextException', 'the ciphertext is not a KMS ciphertext blob');
  }
  const keyId = blob.subarray(5, 5 + idLength).toString('utf8');
  return { keyId, iv: blob.subarray(5 + idLength, 17 + idLength), ciphertext: blob.subarray(17 + idLength) };
}

// --- Ed25519 keys (ECC_NIST_EDWARDS25519) ----------------------------------------------------

/**
 * An Ed25519 key (key spec `ECC_NIST_EDWARDS25519`) from a 32-byte seed. KMS signs with
 * `ED25519_SHA_512` (pure Ed25519, RFC 8032 §5.1, `MessageType: RAW`) or `ED25519_PH_SHA_512`
 * (Ed25519ph over a SHA-512 digest, `MessageType: DIGEST`); GetPublicKey answers the RFC 8410 SPKI.
 */
export function ed25519TestKey(keyId: string, seed: Uint8Array): KmsTestKey & { readonly publicKey: Uint8Array } {
  const privateKey = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  const publicKey = Uint8Array.from(spki.subarray(12));
  return {
    keyId,
    keySpec: 'ECC_NIST_EDWARDS25519',
    signingAlgorithms: ['ED25519_SHA_512', 'ED25519_PH_SHA_512'],
    publicKey,
    publicKeyDer: () => Uint8Array.from(spki),
    sign(message, messageType, algorithm) {
      if (algorithm === 'ED25519_SHA_512') {
        if (messageType !== 'RAW') throw new KmsTestError('ValidationException', 'ED25519_SHA_512 signs RAW messages only');
        return Uint8Array.from(nodeSign(null, message, privateKey));
      }
      throw new KmsTestError('ValidationException', `${algorithm} is not implemented by the test server`);
    },
  };
}
