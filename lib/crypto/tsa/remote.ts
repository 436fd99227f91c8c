/**
 * Client of a remote RFC 3161 time-stamping authority over HTTP (RFC 3161 §3.4).
 */
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import type { IssuedTimestamp, TimestampAuthority } from '../ports.js';
import { OID, integerFromBigInt, randomPositiveBigInt, toArrayBuffer, toHex } from './asn1.js';
import { parseCertificates } from './certificates.js';
import { TsaUnavailableError } from './errors.js';
import { derToPem, pemBlocks, pemToDer } from './pem.js';
import { verifyTimestampResponse } from './verify.js';

/** Configuration of a {@link RemoteTsa}; nothing is read from the environment. */
export interface RemoteTsaOptions {
  /** The TSA's URL (http or https). User-info in it is sent as HTTP Basic authentication. */
  url: string;
  /** PEM roots the TSA certificate must chain to (each text may hold several certificates). */
  rootsPem: string[];
  /** Policy OID to request (TimeStampReq.reqPolicy); the reply must carry it. */
  policyOid?: string;
  /** Time allowed for the whole exchange, in milliseconds. */
  timeoutMs: number;
  /** fetch implementation (default: the global fetch). */
  fetch?: typeof globalThis.fetch;
  /** Largest reply accepted, in bytes (default 1 MiB). */
  maxResponseBytes?: number;
}

const OID_PATTERN = /^[0-2](\.(0|[1-9][0-9]*))+$/;

/**
 * RFC 3161 TSA reached over HTTP (scheme `remote`). Every reply is verified in full
 * (status, imprint, nonce, policy, CMS signature, ESSCertID, EKU, chain to the configured roots)
 * before it is returned; anything else raises {@link TsaUnavailableError}.
 */
export class RemoteTsa implements TimestampAuthority {
  readonly scheme = 'remote' as const;
  private readonly url: string;
  private readonly displayUrl: string;
  private readonly authorization: string | undefined;
  private readonly rootsPem: string[];
  private readonly policyOid: string | undefined;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof globalThis.fetch;
  private readonly maxResponseBytes: number;
  private lastChain: string[] = [];

  /** @throws Error when the configuration is unusable (bad URL, no roots, bad timeout or OID). */
  constructor(options: RemoteTsaOptions) {
    let url: URL;
    try {
      url = new URL(options.url);
    } catch {
      throw new Error('RemoteTsa: the TSA URL is not a valid URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('RemoteTsa: the TSA URL must be http or https');
    // fetch refuses URLs with credentials; send them as Basic authentication (RFC 7617).
    if (url.username || url.password) {
      const user = decodeURIComponent(url.username);
      const password = decodeURIComponent(url.password);
      this.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
      url.username = '';
      url.password = '';
    }
    this.url = url.toString();
    // Shown in errors: no user-info, no query (it may hold an API key).
    this.displayUrl = `${url.origin}${url.pathname}`;
    if (!Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0) throw new Error('RemoteTsa: timeoutMs must be a positive number');
    if (options.policyOid !== undefined && !OID_PATTERN.test(options.policyOid)) throw new Error('RemoteTsa: policyOid is not an OID');
    if (options.rootsPem.length === 0 || options.rootsPem.every((pem) => parseCertificates(pem).length === 0)) {
      throw new Error('RemoteTsa: at least one root certificate (PEM) is required');
    }
    this.rootsPem = [...options.rootsPem];
    this.policyOid = options.policyOid;
    this.timeoutMs = options.timeoutMs;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    this.maxResponseBytes = options.maxResponseBytes ?? 1024 * 1024;
  }

  /**
   * Asks the TSA to stamp a SHA-256 imprint, with a random 64-bit nonce and certReq, and returns
   * the reply once it has passed every check.
   * @throws TypeError when the imprint is not 32 bytes.
   * @throws TsaUnavailableError when the TSA does not answer in time, answers with an error, or its
   *   reply fails verification.
   */
  async timestamp(sha256Imprint: Uint8Array): Promise<IssuedTimestamp> {
    if (!(sha256Imprint instanceof Uint8Array) || sha256Imprint.byteLength !== 32) {
      throw new TypeError('the imprint must be a 32-byte SHA-256 digest');
    }
    const nonce = randomPositiveBigInt(64);
    const request = buildTimeStampReq(sha256Imprint, nonce, this.policyOid);
    const response = await this.post(request);

    const verification = await verifyTimestampResponse(response, {
      imprint: sha256Imprint,
      roots: this.rootsPem,
      hashAlgorithm: 'SHA-256',
      nonce,
      ...(this.policyOid !== undefined ? { policy: this.policyOid } : {}),
    });
    if (!verification.ok || !verification.genTime || verification.serial === undefined || verification.policy === undefined) {
      const failed = Object.entries(verification.checks)
        .filter(([, c]) => c.result === 'fail')
        .map(([name, c]) => `${name}: ${c.reason}`);
      throw new TsaUnavailableError(`the reply of the time-stamping authority at ${this.displayUrl} failed verification (${failed.join('; ') || 'incomplete token'})`);
    }
    this.lastChain = verification.chainPem ?? [];
    return { response, genTime: verification.genTime, serial: verification.serial, policy: verification.policy };
  }

  /**
   * The chain of the last verified reply (leaf first, trust anchor last), followed by the configured
   * roots not already in it. Before the first reply, only the configured roots.
   */
  async certificates(): Promise<string[]> {
    const out = [...this.lastChain];
    const seen = new Set(out.map((pem) => toHex(pemToDer(pem))));
    for (const { der } of this.rootsPem.flatMap((pem) => pemBlocks(pem, 'CERTIFICATE'))) {
      if (seen.has(toHex(der))) continue;
      seen.add(toHex(der));
      out.push(derToPem(der));
    }
    return out;
  }

  private async post(body: Uint8Array): Promise<Uint8Array> {
    const where = `the time-stamping authority at ${this.displayUrl}`;
    const signal = AbortSignal.timeout(this.timeoutMs);
    let res: Response;
    try {
      res = await this.fetchImpl(this.url, {
        method: 'POST',
        // RFC 3161 §3.4: the request and reply MIME types.
        headers: {
          'Content-Type': 'application/timestamp-query',
          Accept: 'application/timestamp-reply',
          ...(this.authorization ? { Authorization: this.authorization } : {}),
        },
        body: toArrayBuffer(body),
        signal,
      });
    } catch (err) {
      throw new TsaUnavailableError(signal.aborted ? `${where} did not answer within ${this.timeoutMs} ms` : `${where} cannot be reached`, { cause: err });
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new TsaUnavailableError(`${where} answered HTTP ${res.status}`, { httpStatus: res.status });
    }
    try {
      return await readLimited(res, this.maxResponseBytes);
    } catch (err) {
      if (err instanceof TsaUnavailableError) throw err;
      throw new TsaUnavailableError(signal.aborted ? `${where} did not finish its reply within ${this.timeoutMs} ms` : `${where} broke off its reply`, { cause: err });
    }
  }
}

/**
 * TimeStampReq (RFC 3161 §2.4.1): version 1, SHA-256 imprint with NULL parameters, the nonce,
 * certReq TRUE so that the reply carries the TSA certificate, and the policy when configured.
 */
function buildTimeStampReq(imprint: Uint8Array, nonce: bigint, policyOid: string | undefined): Uint8Array {
  const req = new pkijs.TimeStampReq({
    version: 1,
    messageImprint: new pkijs.MessageImprint({
      hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: OID.sha256, algorithmParams: new asn1js.Null() }),
      hashedMessage: new asn1js.OctetString({ valueHex: toArrayBuffer(imprint) }),
    }),
    nonce: integerFromBigInt(nonce),
    certReq: true,
    ...(policyOid !== undefined ? { reqPolicy: policyOid } : {}),
  });
  return new Uint8Array(req.toSchema().toBER());
}

async function readLimited(res: Response, limit: number): Promise<Uint8Array> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limit) {
    await res.body?.cancel().catch(() => undefined);
    throw new TsaUnavailableError(`the time-stamping authority's reply is larger than ${limit} bytes`);
  }
  if (!res.body) return new Uint8Array(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw new TsaUnavailableError(`the time-stamping authority's reply is larger than ${limit} bytes`);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}
