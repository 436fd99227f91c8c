/**
 * The post-quantum RFC 3161 token (ML-DSA-65, CMS per RFC 9882) checked by the OpenSSL command line
 * exactly as docs/verify-without-us.md "Post-quantum time" tells a relying party to: `openssl ts -reply -token_out`
 * for the CMS, `openssl cms -verify` (OpenSSL 3.5 or later) for the signature and the chain, and
 * the TSTInfo's message imprint compared with the data's hash. OpenSSL 3.5 is Debian 13's, taken
 * by `.ci/openssl35` (which .ci/run runs); the system one is used when it is 3.5 or later already.
 * The implementation nobody here wrote: it must accept our genuine token and refuse a changed
 * signature byte, another root and a changed TSTInfo.
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { EmbeddedTsa } from '../../lib/crypto/tsa/embedded.js';
import { generatePqTsaCertificates } from '../../lib/crypto/tsa/pq-certificates.js';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '..', '..');
const POLICY = '2.25.240188381855450738062415899808185980756';

/** The OpenSSL ≥ 3.5 command: OPENSSL35, .ci/openssl35's copy, or the system one when it is recent enough. */
function openssl35(): string {
  const candidates = [process.env.OPENSSL35, path.join(root, '.cache', 'openssl35', 'openssl'), 'openssl'].filter((c): c is string => Boolean(c));
  for (const c of candidates) {
    if (c !== 'openssl' && !existsSync(c)) continue;
    const v = /OpenSSL (\d+)\.(\d+)/.exec(spawnSync(c, ['version'], { encoding: 'utf8' }).stdout ?? '');
    if (v && (Number(v[1]) > 3 || (Number(v[1]) === 3 && Number(v[2]) >= 5))) return c;
  }
  return assert.fail('no OpenSSL 3.5 command line: run `bash .ci/openssl35` (it takes Debian 13\'s packages into .cache/openssl35; .ci/run does)');
}

let dir: string;
let cli: string;
const data = Buffer.from('the photo of the damage, as the device hashed it');
const imprint = createHash('sha256').update(data).digest();

async function openssl(...args: string[]): Promise<{ ok: boolean; out: string }> {
  try {
    const { stdout, stderr } = await run(cli, args, { cwd: dir });
    return { ok: true, out: `${stdout}${stderr}` };
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    return { ok: false, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** `openssl cms -verify` of token.der (written from `token`) against `rootFile`; the TSTInfo's imprint when it holds. */
async function cmsVerify(token: Uint8Array, rootFile = 'root.pem'): Promise<{ ok: boolean; imprint?: string; policy?: string; out: string }> {
  await writeFile(path.join(dir, 'token.der'), token);
  const v = await openssl('cms', '-verify', '-inform', 'DER', '-in', 'token.der', '-binary', '-CAfile', rootFile, '-certfile', 'tsa.pem', '-purpose', 'timestampsign', '-out', 'tstinfo.der');
  if (!v.ok) return v;
  const parsed = (await openssl('asn1parse', '-inform', 'DER', '-in', 'tstinfo.der')).out;
  return {
    ok: true,
    out: v.out,
    imprint: /OCTET STRING\s+\[HEX DUMP\]:([0-9A-F]+)/.exec(parsed)?.[1]?.toLowerCase(),
    policy: /OBJECT\s+:(\d[\d.]+)/.exec(parsed)?.[1],
  };
}

let token: Uint8Array;

before(async () => {
  cli = openssl35();
  dir = await mkdtemp(path.join(os.tmpdir(), 'pq-openssl-'));
  const bundle = await generatePqTsaCertificates();
  const other = await generatePqTsaCertificates();
  const tsa = await EmbeddedTsa.create({ tsaCertPem: bundle.tsaCertPem, tsaKeyPkcs8Pem: bundle.tsaKeyPkcs8Pem, rootCertPem: bundle.rootCertPem, policyOid: POLICY });
  await Promise.all([
    writeFile(path.join(dir, 'root.pem'), bundle.rootCertPem),
    writeFile(path.join(dir, 'tsa.pem'), bundle.tsaCertPem),
    writeFile(path.join(dir, 'other-root.pem'), other.rootCertPem),
    writeFile(path.join(dir, 'pq.tsr'), (await tsa.issue({ imprint, certReq: false })).response),
  ]);
  // README's first step: the token (the CMS ContentInfo) out of the TimeStampResp; any OpenSSL does it.
  const extracted = await openssl('ts', '-reply', '-in', 'pq.tsr', '-token_out', '-out', 'pq-token.der');
  assert.ok(extracted.ok, extracted.out);
  token = new Uint8Array(await readFile(path.join(dir, 'pq-token.der')));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the post-quantum token through the OpenSSL 3.5 command line (docs/verify-without-us.md "Post-quantum time")', () => {
  it('cms -verify accepts the genuine token; its TSTInfo names the data\'s SHA-256 and the post-quantum policy', async () => {
    const v = await cmsVerify(token);
    console.log(`# ${(await openssl('version')).out.trim()}: ${v.out.trim().split('\n').pop()}`);
    assert.ok(v.ok, v.out);
    assert.equal(v.imprint, imprint.toString('hex'));
    assert.equal(v.policy, POLICY);
  });

  it('refuses the token with one byte of its ML-DSA-65 signature changed', async () => {
    const bad = Uint8Array.from(token);
    bad[bad.length - 40] = (bad[bad.length - 40] ?? 0) ^ 0x01;
    const v = await cmsVerify(bad);
    assert.equal(v.ok, false, v.out);
    assert.match(v.out, /verification failure|signature/i);
  });

  it('refuses it against another ML-DSA-65 root', async () => {
    const v = await cmsVerify(token, 'other-root.pem');
    assert.equal(v.ok, false, v.out);
  });

  it('refuses a token whose TSTInfo was changed (the imprint it names)', async () => {
    const bad = Uint8Array.from(token);
    const at = Buffer.from(bad).indexOf(imprint);
    assert.ok(at > 0, 'the imprint is in the token');
    bad[at] = (bad[at] ?? 0) ^ 0x01;
    const v = await cmsVerify(bad);
    assert.equal(v.ok, false, v.out);
  });
});
