import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { derToPem, pemBlocks } from '../../lib/crypto/tsa/pem.js';
import {
  type CheckOutcome,
  type TimestampChecks,
  type VerifyTimestampOptions,
  extractTimestampToken,
  parseTimestampResponse,
  parseTimestampToken,
  verifyTimestampResponse,
  verifyTimestampToken,
} from '../../lib/crypto/tsa/verify.js';

/**
 * Real responses of public TSAs (see the README in the directory): IdenTrust (RSA, ESSCertID with
 * SHA-1, leaf not first, SHA-512 imprint) and Sigstore staging (ECDSA P-384, ESSCertIDv2,
 * SHA-256/384/512 imprints, one token without embedded certificates), all over "hello".
 */
const SAMPLES = fileURLToPath(new URL('../vectors/rfc3161-sample', import.meta.url));
const hello = readFileSync(path.join(SAMPLES, 'hello.txt'));
const rootsOf: Record<string, string[]> = {
  identrust: [readFileSync(path.join(SAMPLES, 'identrust/root.pem'), 'utf8')],
  sigstage: [readFileSync(path.join(SAMPLES, 'sigstage/ts_chain.pem'), 'utf8')],
};

interface Sample {
  name: string;
  vendor: string;
  der: Uint8Array;
}

const samples: Sample[] = Object.keys(rootsOf).flatMap((vendor) =>
  readdirSync(path.join(SAMPLES, vendor))
    .filter((f) => f.endsWith('.tsr'))
    .sort()
    .map((f) => ({ name: `${vendor}/${f}`, vendor, der: new Uint8Array(readFileSync(path.join(SAMPLES, vendor, f))) })),
);
// No vacuous pass: the directory must hold the responses the README describes.
if (samples.length === 0) throw new Error(`no .tsr responses found under ${SAMPLES}`);

const WITH_CERTS = samples.filter((s) => !s.name.includes('no-embedded-cert'));

/** The hash of hello.txt with the algorithm the token says it used. */
function expectedImprint(der: Uint8Array): Uint8Array {
  const alg = parseTimestampResponse(der).hashAlgorithm;
  const node = { 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512' }[alg];
  assert.ok(node, `unexpected imprint algorithm ${alg}`);
  return new Uint8Array(createHash(node).update(hello).digest());
}

function optionsFor(sample: Sample, overrides: Partial<VerifyTimestampOptions> = {}): VerifyTimestampOptions {
  return { imprint: expectedImprint(sample.der), roots: rootsOf[sample.vendor] ?? [], ...overrides };
}

/** Names of the checks that did not pass (skipped ones included). */
function notPassed(checks: TimestampChecks): string[] {
  return Object.entries(checks)
    .filter(([, c]) => (c as CheckOutcome).result !== 'pass')
    .map(([name, c]) => `${name}:${(c as CheckOutcome).result}`)
    .sort();
}

/** Checks that a sample cannot pass by design: no nonce or policy expected; no tsa name (IdenTrust). */
function expectedSkips(sample: Sample): string[] {
  const skips = ['nonce:skipped', 'policy:skipped'];
  if (sample.vendor === 'identrust') skips.push('tsaName:skipped');
  return skips.sort();
}

let dir: string;
before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tsa-verify-'));
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('verifyTimestampResponse on real public TSA responses', () => {
  it('finds the five responses the README lists', () => {
    assert.deepEqual(
      samples.map((s) => s.name),
      [
        'identrust/response-sha512.tsr',
        'sigstage/response-no-embedded-cert.tsr',
        'sigstage/response-sha256.tsr',
        'sigstage/response-sha384.tsr',
        'sigstage/response-sha512.tsr',
      ],
    );
  });

  for (const sample of samples) {
    it(`accepts ${sample.name} over hello.txt against its own roots`, async () => {
      const v = await verifyTimestampResponse(sample.der, optionsFor(sample));
      assert.equal(v.ok, true, JSON.stringify(v.checks, null, 2));
      assert.deepEqual(notPassed(v.checks), expectedSkips(sample));
      assert.ok(v.tsaCertificatePem?.includes('BEGIN CERTIFICATE'));
      assert.ok((v.chainPem?.length ?? 0) >= 2, 'the validated path goes from the TSA to a root');
      assert.equal(v.pkiStatus?.name, 'granted');
    });
  }

  it('reads genTime, serial, policy and nonce of the IdenTrust response as the README gives them', async () => {
    const sample = samples.find((s) => s.vendor === 'identrust');
    assert.ok(sample);
    const v = await verifyTimestampResponse(sample.der, optionsFor(sample, { nonce: 0x75c3b3214ac39fbbn, policy: '2.16.840.1.113839.0.6.13.3' }));
    assert.equal(v.ok, true);
    assert.equal(v.checks.nonce.result, 'pass');
    assert.equal(v.checks.policy.result, 'pass');
    assert.equal(v.genTime?.toISOString(), '2025-03-11T08:52:08.000Z');
    assert.equal(v.serialHex, '400195846778d8ebd3e0d31354082a24');
    assert.equal(v.hashAlgorithm, 'SHA-512');
    assert.match(v.checks.essCertIdV2.reason, /ESSCertID \(SHA-1\)/);
    assert.match(v.checks.chain.reason, /IdenTrust Commercial Root CA 1/);
    assert.equal(v.chainPem?.length, 3, 'leaf, TrustID Timestamping CA 3, root');
  });

  it('validates the IdenTrust chain at genTime by default, and fails it after the leaf expired', async () => {
    const sample = samples.find((s) => s.vendor === 'identrust');
    assert.ok(sample);
    const later = await verifyTimestampResponse(sample.der, optionsFor(sample, { now: new Date('2026-02-01T00:00:00Z') }));
    assert.equal(later.ok, false);
    assert.deepEqual(notPassed(later.checks), [...expectedSkips(sample), 'chain:fail'].sort());
  });

  it('takes the signer of the token without embedded certificates from the given chain', async () => {
    const sample = samples.find((s) => s.name.includes('no-embedded-cert'));
    assert.ok(sample);
    const [leafPem, rootPem] = pemBlocks(rootsOf.sigstage?.[0] ?? '', 'CERTIFICATE').map((b) => derToPem(b.der));
    assert.ok(leafPem && rootPem);

    const split = await verifyTimestampResponse(sample.der, optionsFor(sample, { roots: [rootPem], untrusted: [leafPem] }));
    assert.equal(split.ok, true, JSON.stringify(split.checks));

    const rootOnly = await verifyTimestampResponse(sample.der, optionsFor(sample, { roots: [rootPem] }));
    assert.equal(rootOnly.ok, false);
    assert.match(rootOnly.checks.signature.reason, /signer certificate is neither in the token nor among the given certificates/);
  });

  it('fails only the chain check with the other vendor’s root', async () => {
    for (const sample of WITH_CERTS) {
      const wrongRoots = sample.vendor === 'identrust' ? rootsOf.sigstage : rootsOf.identrust;
      const v = await verifyTimestampResponse(sample.der, optionsFor(sample, { roots: wrongRoots ?? [] }));
      assert.equal(v.ok, false, sample.name);
      assert.deepEqual(notPassed(v.checks), [...expectedSkips(sample), 'chain:fail'].sort(), sample.name);
    }
  });

  it('fails only the imprint check for other data', async () => {
    for (const sample of samples) {
      const imprint = expectedImprint(sample.der);
      imprint[0] = (imprint[0] ?? 0) ^ 0xff;
      const v = await verifyTimestampResponse(sample.der, optionsFor(sample, { imprint }));
      assert.equal(v.ok, false, sample.name);
      assert.deepEqual(notPassed(v.checks), [...expectedSkips(sample), 'imprint:fail'].sort(), sample.name);
    }
  });

  it('fails the imprint check when another hash algorithm is required', async () => {
    const sample = samples.find((s) => s.name.endsWith('sigstage/response-sha512.tsr'));
    assert.ok(sample);
    const v = await verifyTimestampResponse(sample.der, optionsFor(sample, { hashAlgorithm: 'SHA-256' }));
    assert.equal(v.checks.imprint.result, 'fail');
    assert.match(v.checks.imprint.reason, /expected SHA-256/);
  });

  it('fails only the nonce check for a nonce other than the one in the token', async () => {
    for (const sample of samples) {
      const tokenNonce = parseTimestampResponse(sample.der).nonce;
      assert.ok(tokenNonce !== undefined, `${sample.name} has a nonce`);
      const v = await verifyTimestampResponse(sample.der, optionsFor(sample, { nonce: tokenNonce + 1n }));
      assert.equal(v.ok, false, sample.name);
      assert.equal(v.checks.nonce.result, 'fail');
      assert.deepEqual(
        notPassed(v.checks),
        expectedSkips(sample)
          .map((c) => (c === 'nonce:skipped' ? 'nonce:fail' : c))
          .sort(),
        sample.name,
      );
    }
  });

  it('fails the policy check for another expected policy', async () => {
    const sample = samples.find((s) => s.vendor === 'sigstage');
    assert.ok(sample);
    const v = await verifyTimestampResponse(sample.der, optionsFor(sample, { policy: '1.2.3.4' }));
    assert.equal(v.ok, false);
    assert.equal(v.checks.policy.result, 'fail');
  });
});

describe('bare time-stamp tokens', () => {
  it('verifies the tokens openssl extracts with -token_out, status skipped', async () => {
    for (const sample of samples) {
      const tsr = path.join(SAMPLES, sample.name);
      const out = path.join(dir, `${sample.vendor}-${path.basename(sample.name)}.tok`);
      const r = spawnSync('/usr/bin/openssl', ['ts', '-reply', '-in', tsr, '-token_out', '-out', out], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      const token = new Uint8Array(readFileSync(out));
      assert.deepEqual(extractTimestampToken(sample.der), token, 'extractTimestampToken gives the same bytes as openssl');

      const v = await verifyTimestampToken(token, optionsFor(sample));
      assert.equal(v.ok, true, `${sample.name}: ${JSON.stringify(v.checks)}`);
      assert.equal(v.checks.status.result, 'skipped');
      assert.equal(parseTimestampToken(token).serial, parseTimestampResponse(sample.der).serial);
    }
  });

  it('does not take a TimeStampResp for a bare token, nor the reverse', async () => {
    const sample = samples[0];
    assert.ok(sample);
    const asToken = await verifyTimestampToken(sample.der, optionsFor(sample));
    assert.equal(asToken.ok, false);
    assert.match(asToken.malformed ?? '', /^malformed/);
    const asResponse = await verifyTimestampResponse(extractTimestampToken(sample.der), optionsFor(sample));
    assert.equal(asResponse.ok, false);
    assert.match(asResponse.malformed ?? '', /^malformed/);
  });
});

describe('malformed input', () => {
  it('gives ok false with a malformed reason, never an exception', async () => {
    const sample = samples.find((s) => s.vendor === 'sigstage');
    assert.ok(sample);
    const inputs: [string, Uint8Array][] = [
      ['empty', new Uint8Array(0)],
      ['garbage', new Uint8Array([1, 2, 3, 4, 5])],
      ['a truncated response', sample.der.subarray(0, sample.der.length - 10)],
      ['a response with a trailing byte', Uint8Array.from([...sample.der, 0])],
      ['a bare SEQUENCE', new Uint8Array([0x30, 0x00])],
    ];
    for (const [what, der] of inputs) {
      const v = await verifyTimestampResponse(der, optionsFor(sample));
      assert.equal(v.ok, false, what);
      assert.match(v.malformed ?? '', /^malformed/, what);
      assert.equal(v.checks.status.result, 'fail', what);
      const t = await verifyTimestampToken(der, optionsFor(sample));
      assert.equal(t.ok, false, what);
      assert.match(t.malformed ?? '', /^malformed/, what);
    }
  });

  it('makes parseTimestampResponse throw on garbage', () => {
    assert.throws(() => parseTimestampResponse(new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x00])), /malformed/);
  });
});

describe('parseTimestampResponse', () => {
  it('shows genTime, serial, policy, TSA name, accuracy and imprint of a Sigstore response', () => {
    const sample = samples.find((s) => s.name.endsWith('sigstage/response-sha256.tsr'));
    assert.ok(sample);
    const p = parseTimestampResponse(sample.der);
    assert.equal(p.genTime.toISOString(), '2025-05-09T11:58:55.000Z');
    assert.equal(p.serialHex, '784b4c5e57aaa63b570f15cba4df95251668ae9e');
    assert.equal(p.serial, BigInt('0x784b4c5e57aaa63b570f15cba4df95251668ae9e').toString(10));
    assert.equal(p.policy, '1.3.6.1.4.1.57264.2');
    assert.equal(p.tsaName, 'DirName:O=sigstore.dev, CN=sigstore-tsa');
    assert.deepEqual(p.accuracy, { seconds: 1 });
    assert.equal(p.ordering, false);
    assert.equal(p.hashAlgorithm, 'SHA-256');
    assert.equal(p.imprintHex, '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824');
    assert.equal(p.pkiStatus.name, 'granted');
  });
});
