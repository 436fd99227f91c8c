/**
 * Differential test of lib/crypto/tsa/verify.ts (strict DER reader + node:crypto) against the
 * pkijs verifier it replaced (test/support/pkijs-tsa-verify.ts, the previous file unchanged), with
 * `openssl ts -verify` as a third opinion where the two disagree.
 *
 * Unmodified inputs (real public TSA responses, EmbeddedTsa tokens, tokens built here with other
 * keys and certificate shapes) must give the same `ok`, the same malformed-or-not and the same
 * result for every check. Byte-flipped, truncated and extended inputs must give the same `ok`;
 * where they do not, the case must be one of the disagreements listed below, each settled by the
 * RFCs (and by openssl where it applies):
 *
 * - token-certificate: a certificate of the token that the path does not need (the copy of the
 *   root an EmbeddedTsa token carries, or a copy of the signer that no longer matches the signer
 *   identifier while the genuine one is among the given certificates) is damaged. The new verifier
 *   requires every certificate the token carries to verify up to a given root and fails the chain
 *   check; pkijs fails only when its path builder happens to meet the damaged certificate (and
 *   then for the same bytes), openssl never. RFC 5652 §5.1 leaves the certificate set unsigned,
 *   so this is the service's rule that any change to a stored token must be detected
 *   (test/evidence/verify-tamper.test.ts).
 * - strict-der: the damaged bytes are not DER (X.690 §10, §11: BIT STRING unused bits not zero,
 *   lengths that no longer fit, …) in a place asn1js tolerates; the new verifier calls the input
 *   malformed (RFC 5280 §4.1 certificates and RFC 3161 TSTInfo are DER).
 * - ecdsa-der: an ECDSA signature whose Ecdsa-Sig-Value is no longer DER (RFC 5480 §2.2 / X9.62):
 *   pkijs re-reads r and s leniently and accepts it, node/OpenSSL refuse it (malleability).
 * - sigalg-mismatch: a certificate's outer signatureAlgorithm no longer equals
 *   tbsCertificate.signature (RFC 5280 §4.1.1.2 MUST), which pkijs does not compare.
 * - unsigned-field: the SignedData version, its digestAlgorithms or the SignerInfo version changed.
 *   They are outside the signature, and neither pkijs nor openssl looks at them; RFC 5652 §5.1 and
 *   §5.3 fix their values, and the new verifier refuses others (the rule of token-certificate).
 */
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type TsaCertificateBundle, generateTsaCertificates } from '../../lib/crypto/tsa/certificates.js';
import { type DerElement, children, decodeDer, readInteger, sequence } from '../../lib/crypto/tsa/der.js';
import { EmbeddedTsa } from '../../lib/crypto/tsa/embedded.js';
import * as newVerifier from '../../lib/crypto/tsa/verify.js';
import * as oldVerifier from '../support/pkijs-tsa-verify.js';
import { CA_EXTENSIONS, type CertAndKey, type KeyKind, TSA_EXTENSIONS, buildResponse, makeCertificate } from './tsa-token-builder.js';

type Options = newVerifier.VerifyTimestampOptions;
type Verification = newVerifier.TimestampVerification;

const SAMPLES = fileURLToPath(new URL('../vectors/rfc3161-sample', import.meta.url));
const hello = readFileSync(path.join(SAMPLES, 'hello.txt'));
const OPENSSL = '/usr/bin/openssl';
// Set TSA_DIFF_FULL=1 to flip every byte of the IdenTrust certificates too (3.7 KB, ~1 min more).
const FULL = process.env.TSA_DIFF_FULL === '1';

let dir: string;
let fileCounter = 0;
function tempFile(name: string, content: string | Uint8Array): string {
  const p = path.join(dir, `${fileCounter++}-${name}`);
  writeFileSync(p, content);
  return p;
}

/** The comparable part of a result: ok, malformed or not, and each check's result. */
function shape(v: Verification): string {
  const checks = Object.entries(v.checks).map(([name, c]) => `${name}:${(c as newVerifier.CheckOutcome).result}`);
  return `ok=${v.ok}${v.malformed ? ' malformed' : ''} ${checks.join(',')}`;
}

function failures(v: Verification): string {
  return Object.entries(v.checks)
    .filter(([, c]) => (c as newVerifier.CheckOutcome).result === 'fail')
    .map(([name, c]) => `${name}: ${(c as newVerifier.CheckOutcome).reason}`)
    .join(' | ');
}

async function both(der: Uint8Array, options: Options, bare = false): Promise<{ old: Verification; now: Verification }> {
  if (bare) return { old: await oldVerifier.verifyTimestampToken(der, options), now: await newVerifier.verifyTimestampToken(der, options) };
  return { old: await oldVerifier.verifyTimestampResponse(der, options), now: await newVerifier.verifyTimestampResponse(der, options) };
}

/** Full agreement: ok, malformed or not, and every check's result. */
async function assertAgree(label: string, der: Uint8Array, options: Options, bare = false): Promise<Verification> {
  const { old, now } = await both(der, options, bare);
  assert.equal(shape(now), shape(old), `${label}\n  new: ${failures(now)}\n  old: ${failures(old)}`);
  return now;
}

/** `openssl ts -verify` of a response against an imprint, a CA file and a verification time. */
function opensslVerifies(response: Uint8Array, j: OpensslJudge): boolean {
  const args = ['ts', '-verify', '-digest', Buffer.from(j.imprint).toString('hex'), '-in', tempFile('r.tsr', response), '-CAfile', j.caFile];
  if (j.untrusted) args.push('-untrusted', j.untrusted);
  args.push('-attime', String(Math.floor(j.at.getTime() / 1000)));
  const r = spawnSync(OPENSSL, args, { encoding: 'utf8' });
  return r.status === 0 && r.stdout.includes('Verification: OK');
}

interface OpensslJudge {
  imprint: Uint8Array;
  caFile: string;
  untrusted?: string;
  at: Date;
}

// ---------------------------------------------------------------------------------------------
// Mutation sweeps

interface Region {
  name: string;
  start: number;
  end: number;
}

/** Byte ranges of a TimeStampResp: TSTInfo, certificates, signed attributes, signature. */
function regionsOf(response: Uint8Array): Region[] {
  const at = (el: DerElement) => el.der.byteOffset - response.byteOffset;
  const region = (name: string, el: DerElement): Region => ({ name, start: at(el), end: at(el) + el.der.byteLength });
  const [, token] = children(decodeDer(response));
  const signedData = children(sequence(token, 'token')[1] as DerElement)[0] as DerElement;
  const sd = children(signedData);
  const eContent = children(children(sd[2] as DerElement)[1] as DerElement)[0] as DerElement;
  const certs = sd[3]?.tag === 0xa0 ? children(sd[3]) : [];
  const signerInfo = children(children(sd[sd.length - 1] as DerElement)[0] as DerElement);
  const attrs = signerInfo.find((e) => e.tag === 0xa0) as DerElement;
  const signature = signerInfo[signerInfo.indexOf(attrs) + 2] as DerElement;
  return [
    // Outside the signature: RFC 5652 §5.1 and §5.3 fix their values (see unsigned-field).
    region('sd-version', sd[0] as DerElement),
    region('digestAlgorithms', sd[1] as DerElement),
    region('signerInfo-version', signerInfo[0] as DerElement),
    region('tstInfo', eContent),
    ...certs.map((c, i) => region(`cert${i}`, c)),
    region('signedAttrs', attrs),
    region('signature', signature),
  ];
}

/** The ECDSA-Sig-Value in a signature OCTET STRING is strict DER: SEQUENCE of two INTEGERs. */
function ecdsaSignatureIsDer(response: Uint8Array, region: Region): boolean {
  try {
    const octets = decodeDer(response.subarray(region.start, region.end)).value;
    const parts = sequence(decodeDer(octets), 'Ecdsa-Sig-Value');
    return parts.length === 2 && parts.every((p) => readInteger(p, 'r or s') > 0n);
  } catch {
    return false;
  }
}

const UNSIGNED_FIELDS = new Set(['sd-version', 'digestAlgorithms', 'signerInfo-version']);

const DER_PROBLEM = /truncated|length|unused bits|non-minimal|not a DER|indefinite|trailing|unexpected tag|missing|malformed|whole number of octets|invalid date|extra components|empty/;

interface SweepStats {
  mutations: number;
  /** Same ok, same malformed-or-not, same result for every check. */
  identical: number;
  /** Same ok, but one calls the input malformed and the other not, or a check differs. */
  sameOk: number;
  /** Different ok, by class (see the file comment). */
  disagreements: Record<string, number>;
}

interface Sample {
  name: string;
  response: Uint8Array;
  options: Options;
  judge: OpensslJudge;
  ecdsa: boolean;
}

async function sweep(sample: Sample, stride: (region: Region) => number): Promise<SweepStats> {
  const stats: SweepStats = { mutations: 0, identical: 0, sameOk: 0, disagreements: {} };
  const original = sample.response;
  const baseline = await newVerifier.verifyTimestampResponse(original, sample.options);
  assert.equal(baseline.ok, true, `${sample.name} verifies before any change: ${failures(baseline)}`);
  for (const region of regionsOf(original)) {
    for (let i = region.start; i < region.end; i += stride(region)) {
      const mutated = Uint8Array.from(original);
      mutated[i] = (mutated[i] ?? 0) ^ 0x01;
      stats.mutations++;
      const label = `${sample.name}: byte ${i} (${region.name} +${i - region.start}) flipped`;
      const { old, now } = await both(mutated, sample.options);
      assert.equal(now.ok, false, `${label} must not verify`);
      if (old.ok === now.ok) {
        if (shape(old) === shape(now)) stats.identical++;
        else stats.sameOk++;
        continue;
      }
      const cls = classify(sample, region, mutated, old, now);
      assert.ok(cls, `${label}: unexplained disagreement\n  new: ${shape(now)} ${failures(now)}\n  old: ${shape(old)} ${failures(old)}`);
      stats.disagreements[cls] = (stats.disagreements[cls] ?? 0) + 1;
    }
  }
  return stats;
}

/** Which listed disagreement this is, or undefined when none explains it. */
function classify(sample: Sample, region: Region, mutated: Uint8Array, old: Verification, now: Verification): string | undefined {
  if (now.malformed && old.ok && UNSIGNED_FIELDS.has(region.name) && /RFC 5652 §5\.[13]/.test(now.malformed)) return 'unsigned-field';
  if (now.malformed && old.ok) {
    return DER_PROBLEM.test(now.malformed) ? 'strict-der' : undefined;
  }
  if (!now.ok && old.ok && region.name.startsWith('cert') && /the token carries a certificate whose signature does not verify/.test(now.checks.chain.reason)) {
    // Only the chain check differs.
    const othersEqual = (Object.keys(now.checks) as (keyof typeof now.checks)[]).every((k) => k === 'chain' || now.checks[k].result === old.checks[k].result);
    return othersEqual ? 'token-certificate' : undefined;
  }
  // The remaining classes are settled by openssl, which must side with the new verifier.
  if (opensslVerifies(mutated, sample.judge) !== now.ok) return undefined;
  if (!now.ok && old.ok && region.name === 'signature' && sample.ecdsa && !ecdsaSignatureIsDer(mutated, region)) {
    return now.checks.signature.result === 'fail' ? 'ecdsa-der' : undefined;
  }
  if (!now.ok && old.ok && /signatureAlgorithm differs from tbsCertificate.signature/.test(now.checks.chain.reason)) return 'sigalg-mismatch';
  return undefined;
}

function report(name: string, stats: SweepStats): void {
  console.log(`${name}: ${stats.mutations} byte flips, ${stats.identical} identical, ${stats.sameOk} same ok (malformed or a check differs), disagreements ${JSON.stringify(stats.disagreements)}`);
}

// ---------------------------------------------------------------------------------------------
// Inputs

const POLICY = '1.3.6.1.4.1.99999.1.1';
let bundle: TsaCertificateBundle;
let tsa: EmbeddedTsa;
let rootFile: string;
let realSamples: Sample[];

function sha(alg: string, data: Uint8Array | string): Uint8Array {
  return new Uint8Array(createHash(alg).update(data).digest());
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'tsa-diff-'));
  bundle = await generateTsaCertificates();
  tsa = await EmbeddedTsa.create({ ...bundle, policyOid: POLICY });
  rootFile = tempFile('root.pem', bundle.rootCertPem);

  const sigstageChain = readFileSync(path.join(SAMPLES, 'sigstage/ts_chain.pem'), 'utf8');
  const sigstageRoot = tempFile('sigstage-root.pem', `-----BEGIN CERTIFICATE-----${sigstageChain.split('-----BEGIN CERTIFICATE-----')[2] ?? ''}`);
  const read = (f: string) => new Uint8Array(readFileSync(path.join(SAMPLES, f)));
  realSamples = [
    {
      name: 'sigstage/response-sha256.tsr',
      response: read('sigstage/response-sha256.tsr'),
      options: { imprint: sha('sha256', hello), roots: [sigstageChain] },
      judge: { imprint: sha('sha256', hello), caFile: sigstageRoot, at: new Date('2025-05-09T11:58:55Z') },
      ecdsa: true,
    },
    {
      name: 'identrust/response-sha512.tsr',
      response: read('identrust/response-sha512.tsr'),
      options: { imprint: sha('sha512', hello), roots: [readFileSync(path.join(SAMPLES, 'identrust/root.pem'), 'utf8')] },
      judge: { imprint: sha('sha512', hello), caFile: path.join(SAMPLES, 'identrust/root.pem'), at: new Date('2025-03-11T08:52:08Z') },
      ecdsa: false,
    },
  ];
});

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function embeddedSample(): Promise<Sample> {
  const imprint = randomBytes(32);
  const issued = await tsa.timestamp(imprint);
  return {
    name: 'EmbeddedTsa token',
    response: issued.response,
    options: { imprint, roots: [bundle.rootCertPem] },
    judge: { imprint, caFile: rootFile, at: issued.genTime },
    ecdsa: true,
  };
}

// ---------------------------------------------------------------------------------------------

describe('new and pkijs verifiers agree on unmodified inputs', () => {
  it('real responses with their roots, as responses and as bare tokens', async () => {
    for (const vendor of ['identrust', 'sigstage']) {
      const roots = vendor === 'identrust' ? [readFileSync(path.join(SAMPLES, 'identrust/root.pem'), 'utf8')] : [readFileSync(path.join(SAMPLES, 'sigstage/ts_chain.pem'), 'utf8')];
      const other = vendor === 'identrust' ? [readFileSync(path.join(SAMPLES, 'sigstage/ts_chain.pem'), 'utf8')] : [readFileSync(path.join(SAMPLES, 'identrust/root.pem'), 'utf8')];
      for (const file of ['response-sha256.tsr', 'response-sha384.tsr', 'response-sha512.tsr', 'response-no-embedded-cert.tsr']) {
        let der: Uint8Array;
        try {
          der = new Uint8Array(readFileSync(path.join(SAMPLES, vendor, file)));
        } catch {
          continue;
        }
        const alg = newVerifier.parseTimestampResponse(der).hashAlgorithm.replace('-', '').toLowerCase();
        const imprint = sha(alg, hello);
        const name = `${vendor}/${file}`;
        const untrusted = file.includes('no-embedded') ? roots : undefined;
        const base: Options = { imprint, roots, ...(untrusted ? { untrusted } : {}) };
        const ok = await assertAgree(`${name} own roots`, der, base);
        assert.equal(ok.ok, true, name);
        await assertAgree(`${name} bare token`, newVerifier.extractTimestampToken(der), base, true);
        await assertAgree(`${name} other vendor's roots`, der, { ...base, roots: other });
        await assertAgree(`${name} no roots`, der, { ...base, roots: [] });
        const wrong = Uint8Array.from(imprint);
        wrong[5] = (wrong[5] ?? 0) ^ 0x40;
        await assertAgree(`${name} wrong imprint`, der, { ...base, imprint: wrong });
        await assertAgree(`${name} SHA-256 required`, der, { ...base, hashAlgorithm: 'SHA-256' });
        const nonce = newVerifier.parseTimestampResponse(der).nonce ?? 1n;
        await assertAgree(`${name} right nonce`, der, { ...base, nonce });
        await assertAgree(`${name} wrong nonce`, der, { ...base, nonce: nonce + 1n });
        await assertAgree(`${name} wrong policy`, der, { ...base, policy: '1.2.3.4' });
        await assertAgree(`${name} checked in 2010`, der, { ...base, now: new Date('2010-01-01T00:00:00Z') });
        await assertAgree(`${name} checked in 2040`, der, { ...base, now: new Date('2040-01-01T00:00:00Z') });
        await assertAgree(`${name} checked after the IdenTrust leaf expired`, der, { ...base, now: new Date('2026-02-01T00:00:00Z') });
      }
    }
  });

  it('EmbeddedTsa tokens, with and without certificates, roots, nonce, policy and times', async () => {
    const other = await generateTsaCertificates();
    for (const certReq of [true, false]) {
      const imprint = randomBytes(32);
      const issued = await tsa.issue({ imprint, nonce: 0x5eed5n, certReq });
      const base: Options = { imprint, roots: [bundle.rootCertPem], ...(certReq ? {} : { untrusted: [bundle.tsaCertPem] }) };
      const v = await assertAgree(`certReq=${certReq}`, issued.response, base);
      assert.equal(v.ok, true);
      await assertAgree(`certReq=${certReq} bare`, issued.token, base, true);
      await assertAgree(`certReq=${certReq} without the leaf`, issued.response, { imprint, roots: [bundle.rootCertPem] });
      await assertAgree(`certReq=${certReq} other root`, issued.response, { ...base, roots: [other.rootCertPem] });
      await assertAgree(`certReq=${certReq} leaf as the only root`, issued.response, { ...base, roots: [bundle.tsaCertPem] });
      await assertAgree(`certReq=${certReq} nonce`, issued.response, { ...base, nonce: 0x5eed5n, policy: POLICY, hashAlgorithm: 'SHA-256' });
      await assertAgree(`certReq=${certReq} wrong nonce`, issued.response, { ...base, nonce: 0x5eed6n });
      await assertAgree(`certReq=${certReq} before the certificates`, issued.response, { ...base, now: new Date(Date.now() - 86_400_000) });
      await assertAgree(`certReq=${certReq} after the leaf expired`, issued.response, { ...base, now: new Date(Date.now() + 11 * 365 * 86_400_000) });
      await assertAgree(`certReq=${certReq} unparsable root`, issued.response, { ...base, roots: ['-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'] });
    }
  });

  it('openssl ts -verify agrees with ok on EmbeddedTsa tokens', async () => {
    const other = await generateTsaCertificates();
    const otherRoot = tempFile('other-root.pem', other.rootCertPem);
    for (let i = 0; i < 3; i++) {
      const s = await embeddedSample();
      const v = await newVerifier.verifyTimestampResponse(s.response, s.options);
      assert.equal(v.ok, true);
      assert.equal(opensslVerifies(s.response, s.judge), true);
      const wrongRoot = await newVerifier.verifyTimestampResponse(s.response, { ...s.options, roots: [other.rootCertPem] });
      assert.equal(wrongRoot.ok, false);
      assert.equal(opensslVerifies(s.response, { ...s.judge, caFile: otherRoot }), false);
      const imprint = Uint8Array.from(s.options.imprint);
      imprint[0] = (imprint[0] ?? 0) ^ 1;
      assert.equal((await newVerifier.verifyTimestampResponse(s.response, { ...s.options, imprint })).ok, false);
      assert.equal(opensslVerifies(s.response, { ...s.judge, imprint }), false);
      // A damaged signature, signed attribute, TSTInfo and TSA certificate byte: both refuse. (Not
      // the root's copy: openssl does not look at certificates off the path, see token-certificate.)
      for (const region of regionsOf(s.response).filter((r) => !r.name.startsWith('cert1'))) {
        const mutated = Uint8Array.from(s.response);
        const at = region.start + Math.floor((region.end - region.start) * 0.6);
        mutated[at] = (mutated[at] ?? 0) ^ 0x01;
        assert.equal((await newVerifier.verifyTimestampResponse(mutated, s.options)).ok, false, region.name);
        assert.equal(opensslVerifies(mutated, s.judge), false, region.name);
      }
    }
  });
});

describe('tokens with other keys and certificate shapes', () => {
  let root: CertAndKey;
  let intermediate: CertAndKey;
  let rootFilePath: string;
  const imprint = sha('sha256', 'differential');

  before(() => {
    root = makeCertificate({ subject: '/O=Differential/CN=Test Root', key: 'rsa', extensions: CA_EXTENSIONS });
    intermediate = makeCertificate({
      subject: '/O=Differential/CN=Test Intermediate',
      key: 'p384',
      issuer: root,
      extensions: ['basicConstraints=critical,CA:TRUE,pathlen:0', 'keyUsage=critical,keyCertSign,cRLSign', 'subjectKeyIdentifier=hash', 'authorityKeyIdentifier=keyid'],
    });
    rootFilePath = tempFile('diff-root.pem', root.certPem);
  });

  /** Both verifiers and openssl on a token signed by `leaf`, with the intermediate embedded. */
  async function check(label: string, leaf: CertAndKey, spec: Partial<Parameters<typeof buildResponse>[0]> = {}, chain: string[] = [intermediate.certPem]) {
    const genTime = spec.genTime ?? new Date();
    const response = buildResponse({ signer: leaf, certificates: [leaf.certPem, ...chain], imprint, genTime, ...spec });
    const options: Options = { imprint, roots: [root.certPem] };
    const { old, now } = await both(response, options);
    const openssl = opensslVerifies(response, { imprint, caFile: rootFilePath, at: genTime });
    return { old, now, openssl, label };
  }

  function leafWith(key: KeyKind, extensions: string[], issuer: CertAndKey = intermediate, dates: { notBefore?: string; notAfter?: string } = {}): CertAndKey {
    return makeCertificate({ subject: `/O=Differential/CN=TSA ${key}`, key, issuer, extensions, ...dates });
  }

  it('agree and match openssl for RSA PKCS#1 v1.5, RSA-PSS, P-256, P-384 signers and SHA-2 digests', async () => {
    for (const key of ['rsa', 'rsa-pss', 'p256', 'p384'] as KeyKind[]) {
      const leaf = leafWith(key, TSA_EXTENSIONS);
      for (const digest of ['sha256', 'sha384', 'sha512'] as const) {
        for (const ess of ['v2', 'v1', 'both'] as const) {
          const r = await check(`${key} ${digest} ESS ${ess}`, leaf, { digest, ess });
          assert.equal(shape(r.now), shape(r.old), `${r.label}\n  new: ${failures(r.now)}\n  old: ${failures(r.old)}`);
          assert.equal(r.now.ok, true, `${r.label}: ${failures(r.now)}`);
          assert.equal(r.openssl, true, r.label);
        }
      }
      const ski = await check(`${key} subjectKeyIdentifier sid`, leaf, { sid: 'ski' });
      assert.equal(shape(ski.now), shape(ski.old), ski.label);
      assert.equal(ski.now.ok, true, failures(ski.now));
    }
    const rsa = leafWith('rsa', TSA_EXTENSIONS);
    const r = await check('rsaEncryption as the signature algorithm (RFC 3370 §3.2)', rsa, { rsaEncryptionOid: true, digest: 'sha384' });
    assert.equal(shape(r.now), shape(r.old), r.label);
    assert.deepEqual([r.now.ok, r.openssl], [true, true], r.label);
  });

  it('agree and match openssl on refused TSA certificates: EKU not critical, missing, not alone; keyCertSign', async () => {
    const base = TSA_EXTENSIONS.filter((e) => !e.startsWith('extendedKeyUsage'));
    const cases: [string, string[]][] = [
      ['EKU not critical', [...base, 'extendedKeyUsage=timeStamping']],
      ['EKU missing', base],
      ['EKU with serverAuth', [...base, 'extendedKeyUsage=critical,timeStamping,serverAuth']],
      ['EKU serverAuth only', [...base, 'extendedKeyUsage=critical,serverAuth']],
      ['KeyUsage keyCertSign', [...TSA_EXTENSIONS.filter((e) => !e.startsWith('keyUsage')), 'keyUsage=critical,digitalSignature,keyCertSign']],
    ];
    for (const [label, extensions] of cases) {
      const r = await check(label, leafWith('p256', extensions));
      assert.equal(shape(r.now), shape(r.old), `${label}\n  new: ${failures(r.now)}\n  old: ${failures(r.old)}`);
      assert.equal(r.now.ok, false, label);
      assert.equal(r.now.checks.eku.result, 'fail', label);
      assert.equal(r.openssl, false, label);
    }
  });

  it('agree and match openssl on validity: leaf expired or not yet valid at genTime, and at another check time', async () => {
    const expired = leafWith('p256', TSA_EXTENSIONS, intermediate, { notBefore: '20200101000000Z', notAfter: '20210101000000Z' });
    const r1 = await check('leaf expired at genTime', expired);
    assert.equal(shape(r1.now), shape(r1.old), `${r1.label}\n  new: ${failures(r1.now)}\n  old: ${failures(r1.old)}`);
    assert.deepEqual([r1.now.ok, r1.now.checks.chain.result, r1.openssl], [false, 'fail', false]);
    const r2 = await check('the same token stamped while the leaf was valid', expired, { genTime: new Date('2020-06-01T00:00:00Z') });
    // The intermediate and root are only valid from yesterday: the path fails for all three.
    assert.equal(shape(r2.now), shape(r2.old), r2.label);
    assert.deepEqual([r2.now.ok, r2.openssl], [false, false]);
    const future = leafWith('p256', TSA_EXTENSIONS, intermediate, { notBefore: '20300101000000Z', notAfter: '20310101000000Z' });
    const r3 = await check('leaf not yet valid at genTime', future);
    assert.equal(shape(r3.now), shape(r3.old), r3.label);
    assert.deepEqual([r3.now.ok, r3.now.checks.chain.result, r3.openssl], [false, 'fail', false]);
    const valid = leafWith('p256', TSA_EXTENSIONS);
    const response = buildResponse({ signer: valid, certificates: [valid.certPem, intermediate.certPem], imprint });
    for (const now of [new Date(Date.now() - 3 * 86_400_000), new Date(Date.now() + 2 * 365 * 86_400_000)]) {
      const v = await assertAgree(`checked at ${now.toISOString()}`, response, { imprint, roots: [root.certPem], now });
      assert.equal(v.checks.chain.result, 'fail');
    }
  });

  it('agree and match openssl on paths: missing intermediate, intermediate that is not a CA or may not sign certificates', async () => {
    const leaf = leafWith('p256', TSA_EXTENSIONS);
    const r1 = await check('intermediate not embedded', leaf, {}, []);
    assert.equal(shape(r1.now), shape(r1.old), r1.label);
    assert.deepEqual([r1.now.ok, r1.openssl], [false, false]);
    for (const [label, extensions] of [
      ['intermediate without basicConstraints CA', ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,keyCertSign', 'subjectKeyIdentifier=hash']],
      ['intermediate without keyCertSign', ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,digitalSignature', 'subjectKeyIdentifier=hash']],
    ] as const) {
      const bad = makeCertificate({ subject: '/O=Differential/CN=Bad Intermediate', key: 'p256', issuer: root, extensions: [...extensions] });
      const badLeaf = leafWith('p256', TSA_EXTENSIONS, bad);
      const r = await check(label, badLeaf, {}, [bad.certPem]);
      assert.equal(shape(r.now), shape(r.old), `${label}\n  new: ${failures(r.now)}\n  old: ${failures(r.old)}`);
      assert.deepEqual([r.now.ok, r.now.checks.chain.result, r.openssl], [false, 'fail', false], label);
    }
  });

  it('requires every certificate the token carries to verify up to a given root (token-certificate)', async () => {
    const leaf = leafWith('p256', TSA_EXTENSIONS);
    const sibling = leafWith('p384', TSA_EXTENSIONS);
    const vouched = await check('extra certificates signed by the intermediate and the root itself', leaf, {}, [intermediate.certPem, sibling.certPem, root.certPem]);
    assert.equal(shape(vouched.now), shape(vouched.old), failures(vouched.now));
    assert.deepEqual([vouched.now.ok, vouched.openssl], [true, true]);
    const foreign = makeCertificate({ subject: '/O=Elsewhere/CN=Foreign Root', key: 'p256', extensions: CA_EXTENSIONS });
    const r = await check('an extra self-signed certificate no root vouches for', leaf, {}, [intermediate.certPem, foreign.certPem]);
    assert.equal(r.now.ok, false);
    assert.match(r.now.checks.chain.reason, /carries a certificate whose signature does not verify up to a given root: "O=Elsewhere, CN=Foreign Root"/);
    console.log(`extra foreign certificate in the token: pkijs ok=${r.old.ok}, new ok=${r.now.ok}, openssl ok=${r.openssl}`);
  });

  // Where pkijs is wrong or lacks support; the new verifier follows the RFC and, where it can
  // judge, openssl.
  it('differs from pkijs where pkijs does not follow RFC 5280: pathLenConstraint, unknown critical extension', async () => {
    // The intermediate has pathlen:0; a second intermediate under it exceeds it (RFC 5280 §6.1.4 (m)).
    const second = makeCertificate({
      subject: '/O=Differential/CN=Second Intermediate',
      key: 'p256',
      issuer: intermediate,
      extensions: ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign', 'subjectKeyIdentifier=hash', 'authorityKeyIdentifier=keyid'],
    });
    const deep = await check('pathLenConstraint exceeded', leafWith('p256', TSA_EXTENSIONS, second), {}, [second.certPem, intermediate.certPem]);
    assert.deepEqual([deep.now.ok, deep.now.checks.chain.result, deep.openssl], [false, 'fail', false], failures(deep.now));
    assert.match(deep.now.checks.chain.reason, /allows 0 intermediate certificates below it/);
    console.log(`pathLenConstraint exceeded: pkijs ok=${deep.old.ok}, new ok=${deep.now.ok}, openssl ok=${deep.openssl}`);

    // RFC 5280 §6.1.5 (f): an unrecognised critical extension in the leaf fails the path.
    const unknown = await check('unknown critical extension', leafWith('p256', [...TSA_EXTENSIONS, '1.3.6.1.4.1.99999.9=critical,ASN1:NULL']));
    assert.deepEqual([unknown.now.ok, unknown.now.checks.chain.result, unknown.openssl], [false, 'fail', false], failures(unknown.now));
    assert.match(unknown.now.checks.chain.reason, /unsupported critical extension 1\.3\.6\.1\.4\.1\.99999\.9/);
    console.log(`unknown critical extension in the leaf: pkijs ok=${unknown.old.ok}, new ok=${unknown.now.ok}, openssl ok=${unknown.openssl}`);
  });

  it('verifies Ed25519 tokens (RFC 8419), which pkijs and openssl ts cannot', async () => {
    const leaf = leafWith('ed25519', TSA_EXTENSIONS);
    const r = await check('Ed25519', leaf, { digest: 'sha512' });
    assert.equal(r.now.ok, true, failures(r.now));
    assert.match(r.now.checks.signature.reason, /Ed25519/);
    assert.equal(r.old.ok, false);
    assert.match(r.old.checks.signature.reason, /Unsupported algorithm/);
    // A flipped signature byte fails.
    const response = buildResponse({ signer: leaf, certificates: [leaf.certPem, intermediate.certPem], imprint, digest: 'sha512' });
    const sig = regionsOf(response).find((x) => x.name === 'signature') as Region;
    const mutated = Uint8Array.from(response);
    mutated[sig.end - 5] = (mutated[sig.end - 5] ?? 0) ^ 0x01;
    const bad = await newVerifier.verifyTimestampResponse(mutated, { imprint, roots: [root.certPem] });
    assert.equal(bad.checks.signature.result, 'fail');
  });
});

describe('truncated and extended inputs', () => {
  it('both call every truncation and every appended byte malformed', async () => {
    const s = await embeddedSample();
    const token = newVerifier.extractTimestampToken(s.response);
    let n = 0;
    for (const [der, bare] of [
      [s.response, false],
      [token, true],
    ] as const) {
      for (let len = 0; len < der.length; len += 1) {
        const { old, now } = await both(der.subarray(0, len), s.options, bare);
        assert.ok(now.malformed && old.malformed, `truncated to ${len}: new ${shape(now)}, old ${shape(old)}`);
        n++;
      }
      for (const tail of [[0x00], [0x30, 0x00], [0x05, 0x00], [0xff]]) {
        const { old, now } = await both(Uint8Array.from([...der, ...tail]), s.options, bare);
        assert.ok(now.malformed && old.malformed, `appended ${tail.join(',')}: new ${shape(now)}, old ${shape(old)}`);
        n++;
      }
    }
    console.log(`${n} truncated or extended inputs: all malformed for both`);
  });
});

describe('byte flips: the same ok, or a listed disagreement settled by the RFCs and openssl', () => {
  it('EmbeddedTsa token: every byte of TSTInfo, certificates, signed attributes and signature', async () => {
    report('EmbeddedTsa', await sweep(await embeddedSample(), () => 1));
  });

  it('Sigstore staging response: every byte', async () => {
    const sample = realSamples.find((s) => s.name.startsWith('sigstage'));
    assert.ok(sample);
    report(sample.name, await sweep(sample, () => 1));
  });

  it(`IdenTrust response: every byte of TSTInfo, signed attributes and signature; ${FULL ? 'every' : 'every third'} byte of the certificates`, async () => {
    const sample = realSamples.find((s) => s.name.startsWith('identrust'));
    assert.ok(sample);
    report(sample.name, await sweep(sample, (r) => (FULL || !r.name.startsWith('cert') ? 1 : 3)));
  });
});
