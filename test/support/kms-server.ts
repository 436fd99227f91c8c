/**
 * A tiny AWS KMS stand-in for tests: speaks the AWS JSON 1.1 protocol the SDK uses
 * (POST / with `X-Amz-Target: TrentService.<Operation>`, JSON bodies, blobs as base64) and answers
 * GetPublicKey and Sign with real signatures. Request signatures (SigV4) are not checked.
 *
 * Keys are pluggable ({@link KmsTestKey}) so that ECDSA keys (ECC_NIST_P256, ECC_SECG_P256K1) can
 * be added next to {@link mlDsa65TestKey} later.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KMSClient } from '@aws-sdk/client-kms';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';

/** One asymmetric signing key held by the test server. */
export interface KmsTestKey {
  /** Bare key id (the last part of the ARN). */
  readonly keyId: string;
  /** KMS key spec, e.g. `ML_DSA_65`, `ECC_NIST_P256`, `ECC_SECG_P256K1`. */
  readonly keySpec: string;
  /** Signing algorithms KMS lists for the key, e.g. `ML_DSA_SHAKE_256`, `ECDSA_SHA_256`. */
  readonly signingAlgorithms: readonly string[];
  /** DER SubjectPublicKeyInfo, as GetPublicKey returns it. */
  publicKeyDer(): Uint8Array;
  /**
   * Signs like KMS would. Throw a {@link KmsTestError} to answer with a KMS error
   * (e.g. a `ValidationException` for an unsupported message type).
   */
  sign(message: Uint8Array, messageType: string, signingAlgorithm: string): Uint8Array;
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
