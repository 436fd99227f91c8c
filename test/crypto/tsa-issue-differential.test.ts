/**
 * Byte-equality of the embedded TSA's DER writer (lib/crypto/tsa/embedded.ts) with the pkijs/asn1js
 * builder it replaced (kept in test/support/pkijs-tsa-issue.ts): for the same inputs, a fixed clock,
 * fixed serials and deterministic signatures (RFC 6979 ECDSA with noble, PKCS#1 v1.5 RSA), both
 * write exactly the same TimeStampResp and token bytes, rejections included.
 */
import assert from 'node:assert/strict';
import { createHash, createPrivateKey } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { p256 } from '@noble/curves/nist.js';
import { type TsaCertificateBundle, generateTsaCertificates } from '../../lib/crypto/tsa/certificates.js';
import { EmbeddedTsa, type EmbeddedTsaOptions } from '../../lib/crypto/tsa/embedded.js';
import { SIGNATURE_OID, type TsaKeySigner, ecdsaP1363ToDer } from '../../lib/crypto/tsa/key-signer.js';
import { type PkiStatusSummary, parseTimestampResponse, verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';
import { PkijsEmbeddedTsa } from '../support/pkijs-tsa-issue.js';
import { CA_EXTENSIONS, TSA_EXTENSIONS, makeCertificate } from './tsa-token-builder.js';

const POLICY = '1.3.6.1.4.1.99999.1.1';
const SHA256 = '2.16.840.1.101.3.4.2.1';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const fromHex = (h: string): Uint8Array => new Uint8Array(Buffer.from(h.replace(/\s+/g, ''), 'hex'));
const sha256 = (data: string | Uint8Array): Uint8Array => new Uint8Array(createHash('sha256').update(data).digest());

/** RFC 6979 deterministic ECDSA P-256 (noble), DER as CMS carries it: same input, same signature. */
class DeterministicP256Signer implements TsaKeySigner {
  readonly signatureAlgorithm = { oid: SIGNATURE_OID.ecdsaWithSha256, nullParameters: false };
  calls = 0;
  readonly #secret: Uint8Array;
  constructor(pkcs8Pem: string) {
    const jwk = createPrivateKey(pkcs8Pem).export({ format: 'jwk' });
    this.#secret = new Uint8Array(Buffer.from(jwk.d ?? '', 'base64url'));
  }
  async sign(data: Uint8Array): Promise<Uint8Array> {
    this.calls++;
    // prehash (default): SHA-256 of the data, as ecdsa-with-SHA256 signs.
    return ecdsaP1363ToDer(p256.sign(data, this.#secret));
  }
}

/** The clock and serial both TSAs read: set before each pair of calls. */
let now = new Date(Date.UTC(2027, 4, 6, 7, 8, 9));
let nextSerial = 1n;
const fixed: Pick<EmbeddedTsaOptions, 'clock' | 'serial'> = { clock: () => now, serial: () => nextSerial };

interface Pair {
  label: string;
  current: EmbeddedTsa;
  reference: PkijsEmbeddedTsa;
}

async function pair(label: string, options: EmbeddedTsaOptions): Promise<Pair> {
  return { label, current: await EmbeddedTsa.create(options), reference: await PkijsEmbeddedTsa.create(options) };
}

/** Valid times: in the certificates' validity, with every millisecond pattern of the fraction. */
const MILLIS = [0, 5, 10, 50, 100, 123, 500, 999, 1, 120, 305];
const TIMES = [
  ...MILLIS.map((ms) => new Date(Date.UTC(2027, 4, 6, 7, 8, 9, ms))),
  new Date(Date.UTC(2029, 11, 31, 23, 59, 59, 999)),
  new Date(Date.UTC(2030, 0, 1, 0, 0, 0, 0)),
  new Date(Date.UTC(2028, 1, 29, 12, 0, 0, 7)),
];
/** Serials: one to several octets, top bit of the first octet set or not, 128 and 160 bits. */
const SERIALS = [1n, 0x7fn, 0x80n, 0xffn, 0x100n, 0x7fffn, 0x8000n, 0xdeadbeefn, 2n ** 63n, 2n ** 64n - 1n, 2n ** 127n, 2n ** 128n - 1n, 2n ** 159n + 12345n, 0x00ff00ff00ff00ff00ff00ff00ff00ffn];
const NONCES: (bigint | undefined)[] = [undefined, 1n, 0x7fn, 0x80n, 0x1234567890abcdefn, 2n ** 63n, 2n ** 64n - 1n];

async function assertSameIssue(p: Pair, imprint: Uint8Array, nonce: bigint | undefined, certReq: boolean, what: string): Promise<void> {
  const request = { imprint, certReq, ...(nonce !== undefined ? { nonce } : {}) };
  const a = await p.current.issue(request);
  const b = await p.reference.issue(request);
  assert.equal(hex(a.response), hex(b.response), `${p.label}: response differs for ${what}`);
  assert.equal(hex(a.token), hex(b.token), `${p.label}: token differs for ${what}`);
  assert.equal(a.serial, b.serial);
  assert.equal(a.genTime.getTime(), b.genTime.getTime());
  assert.equal(a.nonce, b.nonce);
  assert.equal(a.policy, b.policy);
}

/** The PKIStatusInfo of a response, read by the production verifier. */
async function statusOf(response: Uint8Array): Promise<PkiStatusSummary> {
  const v = await verifyTimestampResponse(response, { imprint: new Uint8Array(32), roots: [bundle.rootCertPem] });
  assert.ok(v.pkiStatus, 'the response has a PKIStatusInfo');
  return v.pkiStatus;
}

async function assertSameRespond(p: Pair, tsq: Uint8Array, what: string): Promise<Uint8Array> {
  const a = await p.current.respond(tsq);
  const b = await p.reference.respond(tsq);
  assert.equal(hex(a), hex(b), `${p.label}: respond() differs for ${what}`);
  return a;
}

let bundle: TsaCertificateBundle;
let p256Signer: DeterministicP256Signer;
let ecdsa: Pair;
let rsa: Pair;
let rsaRootPem: string;

before(async () => {
  bundle = await generateTsaCertificates({ now: new Date(Date.UTC(2025, 0, 1)) });
  p256Signer = new DeterministicP256Signer(bundle.tsaKeyPkcs8Pem);
  ecdsa = await pair('P-256', { rootCertPem: bundle.rootCertPem, tsaCertPem: bundle.tsaCertPem, keySigner: p256Signer, policyOid: POLICY, ...fixed });
  // An RSA chain made by openssl: other names (C, O, CN), a certificate serial whose first octet
  // has its top bit set (so its INTEGER starts with 0x00), and NULL signature parameters (RFC 4055).
  const dates = { notBefore: '20250101000000Z', notAfter: '20351231000000Z' };
  const root = makeCertificate({ subject: '/C=DE/O=Differential Test/CN=RSA Root', key: 'rsa', extensions: CA_EXTENSIONS, serialHex: '8f0e0d0c0b0a09080706050403020100', ...dates });
  const leaf = makeCertificate({ subject: '/C=DE/O=Differential Test/CN=RSA TSA', key: 'rsa', issuer: root, extensions: TSA_EXTENSIONS, serialHex: 'c1d2e3f4a5b6978899aabbccddeeff00', ...dates });
  rsaRootPem = root.certPem;
  rsa = await pair('RSA', { rootCertPem: root.certPem, tsaCertPem: leaf.certPem, tsaKeyPkcs8Pem: leaf.keyPem, policyOid: '1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.16', ...fixed });
});

describe('EmbeddedTsa writes the same bytes as the pkijs builder it replaced', () => {
  it('issue(): genTime with 0, 5, 10, 50, 100, 123, 500, 999 … ms, serials with and without the top bit set, nonce present or absent, certReq true and false (P-256, RFC 6979 signer)', async () => {
    let n = 0;
    for (const time of TIMES) {
      for (const serial of SERIALS) {
        now = time;
        nextSerial = serial;
        const nonce = NONCES[n % NONCES.length];
        const certReq = n % 3 !== 0;
        await assertSameIssue(ecdsa, sha256(`token ${n}`), nonce, certReq, `${time.toISOString()} serial ${serial} nonce ${nonce} certReq ${certReq}`);
        n++;
      }
    }
    // Every nonce with both certReq values, at one time and serial.
    now = TIMES[0] as Date;
    nextSerial = 2n ** 127n;
    for (const nonce of NONCES) {
      for (const certReq of [true, false]) await assertSameIssue(ecdsa, sha256(`nonce ${nonce}`), nonce, certReq, `nonce ${nonce} certReq ${certReq}`);
    }
  });

  it('issue(): includeTsaName and includeRootCertificate true, false and unset, and verifyIssued', async () => {
    now = new Date(Date.UTC(2027, 4, 6, 7, 8, 9, 50));
    for (const includeTsaName of [true, false, undefined]) {
      for (const includeRootCertificate of [true, false, undefined]) {
        const options: EmbeddedTsaOptions = {
          rootCertPem: bundle.rootCertPem,
          tsaCertPem: bundle.tsaCertPem,
          keySigner: p256Signer,
          policyOid: POLICY,
          ...fixed,
          ...(includeTsaName !== undefined ? { includeTsaName } : {}),
          ...(includeRootCertificate !== undefined ? { includeRootCertificate } : {}),
          verifyIssued: includeTsaName === false,
        };
        const p = await pair(`P-256 includeTsaName=${includeTsaName} includeRootCertificate=${includeRootCertificate}`, options);
        for (const certReq of [true, false]) {
          nextSerial = 0xabcdefn;
          await assertSameIssue(p, sha256('options'), 42n, certReq, `certReq ${certReq}`);
        }
      }
    }
  });

  it('issue(): an RSA TSA from openssl (certificate serials with the top bit set, NULL signature parameters, long policy OID)', async () => {
    for (const [i, time] of TIMES.slice(0, 6).entries()) {
      now = time;
      nextSerial = SERIALS[i * 2] as bigint;
      await assertSameIssue(rsa, sha256(`rsa ${i}`), i % 2 === 0 ? undefined : 2n ** 64n - 1n, i % 3 !== 0, `RSA ${time.toISOString()}`);
    }
    // The token verifies with our verifier too (the RSA root is not the P-256 one).
    now = TIMES[3] as Date;
    const issued = await rsa.current.issue({ imprint: sha256('rsa verify'), nonce: 5n, certReq: true });
    const v = await verifyTimestampResponse(issued.response, { imprint: sha256('rsa verify'), roots: [rsaRootPem], nonce: 5n, now });
    assert.equal(v.ok, true, JSON.stringify(v.checks));
  });

  it('timestamp(): the same token as issue() with its 64-bit nonce and certReq', async () => {
    now = TIMES[5] as Date;
    nextSerial = 77n;
    const imprint = sha256('timestamp');
    const issued = await ecdsa.current.timestamp(imprint);
    const nonce = parseTimestampResponse(issued.response).nonce;
    assert.equal(typeof nonce, 'bigint');
    const reference = await ecdsa.reference.issue({ imprint, nonce: nonce as bigint, certReq: true });
    assert.equal(hex(issued.response), hex(reference.response));
  });

  it('respond(): granted requests with NULL or absent SHA-256 parameters, nonces (zero and negative too), certReq, the own policy', async () => {
    now = TIMES[4] as Date;
    nextSerial = 2n ** 128n - 1n;
    const imprint = sha256('request');
    let granted = 0;
    for (const params of [true, false]) {
      for (const nonce of [undefined, 0n, 1n, -1n, -129n, 0x80n, 2n ** 64n - 1n]) {
        for (const certReq of [undefined, true, false]) {
          for (const policy of [undefined, POLICY]) {
            const tsq = timeStampReq({ params, nonce, certReq, policy, imprint });
            const response = await assertSameRespond(ecdsa, tsq, `params ${params} nonce ${nonce} certReq ${certReq} policy ${policy}`);
            assert.equal((await statusOf(response)).name, 'granted');
            granted++;
          }
        }
      }
    }
    assert.equal(granted, 2 * 7 * 3 * 2);
  });

  it('respond(): rejections badDataFormat, badRequest, badAlg, unacceptedPolicy, unacceptedExtension and systemFailure', async () => {
    now = TIMES[4] as Date;
    nextSerial = 9n;
    const imprint = sha256('rejected');
    const cases: [string, Uint8Array, string][] = [
      ['random bytes', sha256('not a request'), 'badDataFormat'],
      ['empty input', new Uint8Array(0), 'badDataFormat'],
      ['trailing byte', concat(timeStampReq({ imprint }), Uint8Array.of(0)), 'badDataFormat'],
      ['truncated', timeStampReq({ imprint }).subarray(0, 20), 'badDataFormat'],
      ['a 20-byte SHA-256 imprint', timeStampReq({ imprint: new Uint8Array(20) }), 'badDataFormat'],
      ['missing messageImprint', seq(int(1n)), 'badDataFormat'],
      ['version 2', timeStampReq({ imprint, version: 2n }), 'badRequest'],
      ['version 0', timeStampReq({ imprint, version: 0n }), 'badRequest'],
      ['SHA-224', timeStampReq({ imprint: new Uint8Array(28), hashOid: '2.16.840.1.101.3.4.2.4' }), 'badAlg'],
      ['a 32-byte SHA-512 imprint', timeStampReq({ imprint, hashOid: '2.16.840.1.101.3.4.2.3' }), 'badDataFormat'],
      ['SHA-1', timeStampReq({ imprint: new Uint8Array(20), hashOid: '1.3.14.3.2.26' }), 'badAlg'],
      ['SHA-256 with OID parameters', timeStampReq({ imprint, paramsDer: fromHex('0603550403') }), 'badAlg'],
      ['another policy', timeStampReq({ imprint, policy: '1.2.3.4.5' }), 'unacceptedPolicy'],
      ['a critical extension', timeStampReq({ imprint, extensions: [seq(oidDer('1.2.3.4'), fromHex('0101ff'), fromHex('0400'))] }), 'unacceptedExtension'],
      ['a non-critical extension', timeStampReq({ imprint, extensions: [seq(oidDer('1.2.3.4'), fromHex('04020500'))] }), 'unacceptedExtension'],
      ['extensions that are not Extensions', timeStampReq({ imprint, extensions: [int(5n)] }), 'badDataFormat'],
      ['nonce before reqPolicy', seq(int(1n), seq(seq(oidDer(SHA256), fromHex('0500')), tlv(0x04, imprint)), int(5n), oidDer(POLICY)), 'badDataFormat'],
      ['an unknown trailing component', seq(int(1n), seq(seq(oidDer(SHA256), fromHex('0500')), tlv(0x04, imprint)), int(5n), tlv(0x01, fromHex('ff')), tlv(0x0c, fromHex('78'))), 'badDataFormat'],
      ['a constructed OCTET STRING imprint', seq(int(1n), seq(seq(oidDer(SHA256), fromHex('0500')), tlv(0x24, tlv(0x04, imprint)))), 'badDataFormat'],
      ['a SET instead of a SEQUENCE', tlv(0x31, int(1n), seq(seq(oidDer(SHA256), fromHex('0500')), tlv(0x04, imprint))), 'badDataFormat'],
      ['version 2^70', timeStampReq({ imprint, version: 2n ** 70n }), 'badRequest'],
    ];
    for (const [what, tsq, failInfo] of cases) {
      const response = await assertSameRespond(ecdsa, tsq, what);
      const status = await statusOf(response);
      assert.equal(status.name, 'rejection', what);
      assert.deepEqual(status.failInfo, [failInfo], what);
    }
    // systemFailure: genTime outside the certificates' validity makes signing fail.
    now = new Date(Date.UTC(2040, 0, 1));
    const response = await assertSameRespond(ecdsa, timeStampReq({ imprint }), 'a clock outside the validity');
    assert.deepEqual((await statusOf(response)).failInfo, ['systemFailure']);
    await assert.rejects(ecdsa.current.issue({ imprint }), /not valid at 2040-01-01T00:00:00.000Z/);
    now = TIMES[0] as Date;
  });

  it('respond(): an empty extensions field and an explicit certReq FALSE are granted, as before', async () => {
    now = TIMES[2] as Date;
    nextSerial = 11n;
    const imprint = sha256('edge');
    await assertSameRespond(ecdsa, timeStampReq({ imprint, extensions: [] }), 'empty [0] extensions');
    await assertSameRespond(ecdsa, timeStampReq({ imprint, certReq: false, nonce: 3n }), 'certReq FALSE written out');
  });

  it('respond(): what is not DER, or not the ASN.1 of a TimeStampReq, is refused where pkijs was lenient', async () => {
    now = TIMES[4] as Date;
    nextSerial = 10n;
    const imprint = sha256('ber');
    const der = timeStampReq({ imprint, certReq: true });
    const nonMinimalLength = concat(Uint8Array.of(0x30, 0x81, der[1] as number), der.subarray(2));
    const indefinite = concat(Uint8Array.of(0x30, 0x80), der.subarray(2), Uint8Array.of(0, 0));
    const berTrue = Uint8Array.from(der);
    berTrue[der.byteLength - 1] = 0x01; // certReq TRUE as 0x01 (X.690 §8.2.2; DER wants 0xFF, §11.1)
    const alg = seq(oidDer(SHA256), fromHex('0500'));
    for (const [what, tsq, failInfo] of [
      ['a non-minimal length', nonMinimalLength, 'badDataFormat'],
      ['an indefinite length', indefinite, 'badDataFormat'],
      ['BOOLEAN TRUE as 0x01', berTrue, 'badDataFormat'],
      ['a non-minimal version INTEGER', seq(fromHex('02020001'), seq(alg, tlv(0x04, imprint))), 'badDataFormat'],
      ['a third component in MessageImprint', seq(int(1n), seq(alg, tlv(0x04, imprint), fromHex('0500'))), 'badDataFormat'],
      ['a third component in AlgorithmIdentifier', seq(int(1n), seq(seq(oidDer(SHA256), fromHex('0500'), fromHex('0500')), tlv(0x04, imprint))), 'badDataFormat'],
      // X.690 §8.8.2: NULL has no contents octets, so these parameters are not NULL (RFC 5754 §2).
      ['NULL parameters with contents', seq(int(1n), seq(seq(oidDer(SHA256), fromHex('050100')), tlv(0x04, imprint))), 'badAlg'],
    ] as const) {
      const response = await ecdsa.current.respond(tsq);
      assert.deepEqual((await statusOf(response)).failInfo, [failInfo], what);
      const old = await statusOf(await ecdsa.reference.respond(tsq));
      assert.equal(old.name, 'granted', `pkijs granted ${what}`);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// TimeStampReq inputs, written by hand (X.690) so that malformed variants are easy to make.

function tlv(tag: number, ...parts: Uint8Array[]): Uint8Array {
  const body = concat(...parts);
  const n = body.byteLength;
  const len = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
  return concat(Uint8Array.of(tag, ...len), body);
}
function concat(...parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}
const seq = (...parts: Uint8Array[]): Uint8Array => tlv(0x30, ...parts);
function int(v: bigint): Uint8Array {
  // Minimal two's complement by search: the shortest big-endian form that reads back as v.
  for (let len = 1; ; len++) {
    const mod = 1n << BigInt(len * 8);
    const u = ((v % mod) + mod) % mod;
    const back = u >= mod / 2n ? u - mod : u;
    if (back === v) return tlv(0x02, fromHex(u.toString(16).padStart(len * 2, '0')));
  }
}
function oidDer(dotted: string): Uint8Array {
  const arcs = dotted.split('.').map(BigInt);
  const out: number[] = [];
  for (const sub of [(arcs[0] as bigint) * 40n + (arcs[1] as bigint), ...arcs.slice(2)]) {
    const b: number[] = [Number(sub & 0x7fn)];
    for (let v = sub >> 7n; v > 0n; v >>= 7n) b.unshift(Number(v & 0x7fn) | 0x80);
    out.push(...b);
  }
  return tlv(0x06, Uint8Array.from(out));
}

function timeStampReq(r: {
  imprint: Uint8Array;
  version?: bigint;
  hashOid?: string;
  params?: boolean;
  paramsDer?: Uint8Array;
  policy?: string | undefined;
  nonce?: bigint | undefined;
  certReq?: boolean | undefined;
  extensions?: Uint8Array[];
}): Uint8Array {
  const params = r.paramsDer ?? (r.params === false ? undefined : fromHex('0500'));
  const alg = params ? seq(oidDer(r.hashOid ?? SHA256), params) : seq(oidDer(r.hashOid ?? SHA256));
  return seq(
    int(r.version ?? 1n),
    seq(alg, tlv(0x04, r.imprint)),
    ...(r.policy !== undefined ? [oidDer(r.policy)] : []),
    ...(r.nonce !== undefined ? [int(r.nonce)] : []),
    ...(r.certReq !== undefined ? [tlv(0x01, Uint8Array.of(r.certReq ? 0xff : 0))] : []),
    ...(r.extensions ? [tlv(0xa0, ...r.extensions)] : []),
  );
}
