/**
 * Adversarial inputs for lib/crypto/tsa/verify.ts, x509-verify.ts and path.ts: tokens built to make the
 * verifier do unbounded work. A verification must end quickly with `ok: false`, whatever the token
 * carries (RFC 5652 §5.1: the certificate set is unsigned, so anyone can fill it).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type DerElement, children, decodeDer, derElementsRead } from '../../lib/crypto/tsa/der.js';
import { verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';
import { validatePath } from '../../lib/crypto/tsa/path.js';
import { certificatesFromPem } from '../../lib/crypto/tsa/x509-verify.js';
import { CA_EXTENSIONS, type CertAndKey, TSA_EXTENSIONS, buildResponse, makeCertificate } from './tsa-token-builder.js';

const OPENSSL = '/usr/bin/openssl';
let dir: string;

/** Every element of `der`, however deep (primitive contents that happen to be DER are not entered). */
function elementCount(der: Uint8Array): number {
  const walk = (el: DerElement): number => 1 + (el.constructed ? children(el).reduce((n, c) => n + walk(c), 0) : 0);
  return walk(decodeDer(der));
}

/** The DER elements `work` reads, and its result. */
async function counted<T>(work: () => T | Promise<T>): Promise<{ result: T; elements: number }> {
  const before = derElementsRead();
  const result = await work();
  return { result, elements: derElementsRead() - before };
}

function openssl(args: string[]): void {
  const r = spawnSync(OPENSSL, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
}

before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tsa-adversarial-'));
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

/**
 * `n` self-signed CA certificates that all have the subject "CN=Loop CA" and the same key: each
 * one's signature verifies with the key of every other one, so every ordering of them is a
 * chain of valid links (none of which reaches a trust anchor).
 */
function loopCas(n: number): { cas: string[]; issuer: CertAndKey } {
  const keyPath = path.join(dir, 'loop.key');
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyPath]);
  const cas: string[] = [];
  for (let i = 0; i < n; i++) {
    const out = path.join(dir, `loop-${i}.pem`);
    openssl([
      'req', '-x509', '-new', '-key', keyPath, '-subj', '/CN=Loop CA', '-set_serial', String(1000 + i), '-days', '30',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign', '-out', out,
    ]);
    cas.push(readFileSync(out, 'utf8'));
  }
  return { cas, issuer: { certPem: cas[0] as string, keyPem: readFileSync(keyPath, 'utf8') } };
}

describe('path building on certificates an attacker put in the token', () => {
  let root: CertAndKey;
  let loop: { cas: string[]; issuer: CertAndKey };
  let leaf: CertAndKey;
  const imprint = new Uint8Array(createHash('sha256').update('adversarial').digest());

  before(() => {
    root = makeCertificate({ subject: '/O=Adversarial/CN=Trusted Root', key: 'p256', extensions: CA_EXTENSIONS });
    loop = loopCas(12);
    leaf = makeCertificate({
      subject: '/CN=Loop TSA',
      key: 'p256',
      issuer: loop.issuer,
      extensions: TSA_EXTENSIONS.filter((e) => !e.startsWith('authorityKeyIdentifier')),
    });
  });

  it('gives up quickly on a token whose certificates all sign each other (no exponential search)', async () => {
    // Every permutation of up to 7 of the 12 certificates is a valid chain of links: about 4
    // million paths for a depth-first search that only stops at a trust anchor (~6 s for this
    // 5.5 KB token, and ×16 per extra certificate).
    const response = buildResponse({ signer: leaf, certificates: [leaf.certPem, ...loop.cas], imprint });
    const { result: v, elements } = await counted(() => verifyTimestampResponse(response, { imprint, roots: [root.certPem] }));
    assert.equal(v.ok, false);
    assert.equal(v.checks.chain.result, 'fail');
    assert.equal(v.checks.signature.result, 'pass', 'the token itself is well signed');
    assert.match(v.checks.chain.reason, /among the first 100 candidate issuers/);
    // The work, counted rather than timed: the search stops after 100 candidates, each read a
    // bounded number of times: measured 3.6 elements read per element of the token; a search that
    // tried each of the million orderings would read the extensions of each link again, millions.
    const input = elementCount(response);
    assert.ok(elements < 10 * input, `read ${elements} DER elements for a token of ${input}`);
  });

  it('still finds the path when the looping certificates share the trust anchor’s name', async () => {
    // The loop certificates are named like the real issuer of the leaf: the search must try the
    // anchor and succeed rather than exhaust itself on the decoys, whichever order they come in.
    const caKey = path.join(dir, 'decoy.key');
    openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', caKey]);
    const decoys: string[] = [];
    for (let i = 0; i < 12; i++) {
      const out = path.join(dir, `decoy-${i}.pem`);
      openssl([
        'req', '-x509', '-new', '-key', caKey, '-subj', '/O=Adversarial/CN=Trusted Root', '-set_serial', String(2000 + i), '-days', '30',
        '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign', '-out', out,
      ]);
      decoys.push(readFileSync(out, 'utf8'));
    }
    const good = makeCertificate({ subject: '/CN=Good TSA', key: 'p256', issuer: root, extensions: TSA_EXTENSIONS });
    const [goodCert] = certificatesFromPem(good.certPem);
    assert.ok(goodCert);
    const anchors = certificatesFromPem(root.certPem);
    const intermediates = decoys.flatMap((pem) => certificatesFromPem(pem));
    const { result: v, elements } = await counted(() => validatePath(goodCert, { anchors, intermediates, checkDate: new Date() }));
    assert.equal(v.ok, true, v.reason);
    assert.equal(v.path.length, 2);
    // The certificates are decoded before the count; building the path reads only the extensions
    // of the links it tries (measured 39 elements, against 725 in the certificates).
    const input = [root.certPem, ...decoys, good.certPem].reduce((n, pem) => n + elementCount(new Uint8Array(Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64'))), 0);
    assert.ok(elements < input, `read ${elements} DER elements for certificates of ${input}`);
  });
});

// ---------------------------------------------------------------------------------------------
// Hand-made DER around the Sigstore staging response (nothing here needs a valid signature).

function derLength(n: number): number[] {
  if (n < 0x80) return [n];
  const out: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) out.unshift(v & 0xff);
  return [0x80 | out.length, ...out];
}

function tlv(tag: number, ...parts: (number[] | Uint8Array)[]): number[] {
  const body = parts.flatMap((p) => Array.from(p));
  return [tag, ...derLength(body.length), ...body];
}

describe('names the token supplies', () => {
  it('matches the SignerInfo issuer against many embedded certificates in linear time', async () => {
    // issuerAndSerialNumber (RFC 5652 §5.3) names the signer by issuer and serial, both from the
    // token. 300 copies of the TSA certificate with the serial it names, and an issuer Name whose
    // first RDN holds 25,000 attributes: the name was decoded again for every candidate (~10 s).
    const sample = new Uint8Array(readFileSync(new URL('../vectors/rfc3161-sample/sigstage/response-sha256.tsr', import.meta.url)));
    const [status, token] = children(decodeDer(sample)) as [DerElement, DerElement];
    const [contentType, content] = children(token) as [DerElement, DerElement];
    const [version, digestAlgorithms, encap, certs, signerInfos] = children(children(content)[0] as DerElement) as DerElement[];
    assert.ok(version && digestAlgorithms && encap && certs && signerInfos);
    const cert = children(certs)[0] as DerElement;
    const tbs = children(children(cert)[0] as DerElement);
    const serial = (tbs[0]?.tag === 0xa0 ? tbs[1] : tbs[0]) as DerElement;
    const signerInfo = children(children(signerInfos)[0] as DerElement);
    const cn = (text: string) => tlv(0x30, tlv(0x06, [0x55, 0x04, 0x03]), tlv(0x0c, Buffer.from(text)));
    const bigRdn = tlv(0x31, Array.from({ length: 25_000 }, (_, i) => cn(`n${i}`)).flat());
    const sid = tlv(0x30, tlv(0x30, bigRdn, tlv(0x31, cn('x'))), serial.der);
    const newSignerInfo = tlv(0x30, (signerInfo[0] as DerElement).der, sid, ...signerInfo.slice(2).map((e) => e.der));
    const signedData = tlv(
      0x30,
      version.der,
      digestAlgorithms.der,
      encap.der,
      tlv(0xa0, Array.from({ length: 300 }, () => Array.from(cert.der)).flat()),
      tlv(0x31, newSignerInfo),
    );
    const response = Uint8Array.from(tlv(0x30, status.der, tlv(0x30, contentType.der, tlv(0xa0, signedData))));
    const { result: v, elements } = await counted(() => verifyTimestampResponse(response, { imprint: new Uint8Array(32), roots: [] }));
    assert.equal(v.ok, false);
    assert.match(v.checks.signature.reason, /signer certificate is neither in the token nor among the given certificates/);
    // Linear: measured 2.8 elements read per element of the token. Decoding the issuer name again
    // for each of the 300 candidates reads 300 × 100,000 elements of its 25,000 attributes.
    const input = elementCount(response);
    assert.ok(elements < 5 * input, `read ${elements} DER elements for a token of ${input}`);
  });
});
