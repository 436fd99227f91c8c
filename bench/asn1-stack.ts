/**
 * Issue 35, "one ASN.1/X.509 stack": whether the kept library (pkijs, with asn1js) can serve the
 * verification side that lib/crypto/tsa/verify.ts and x509-verify.ts hold, measured in one run:
 *
 * 1. the cost per token: our verifier (first call for a chain, then with its signature links
 *    verified once per process) against the pkijs verifier kept as the differential tests' oracle
 *    (test/support/pkijs-tsa-verify.ts), on tokens of the embedded TSA;
 * 2. path validation alone: lib/crypto/tsa/path.ts against pkijs's CertificateChainValidationEngine
 *    (test/support/pkijs-chain.ts) on the TSA's leaf and root;
 * 3. the looping certificate set of test/crypto/tsa-verify-adversarial.test.ts (12 CA certificates
 *    with one name and one key that sign each other) given to each path validator, with a deadline;
 * 4. what the token-verifying functions would carry: the bundle of functions/v2/evidence-verify.ts
 *    as it is, with pkijs's chain engine in it, and with asn1js's decoder in it, each imported cold
 *    in fresh Node processes.
 *
 * `npx tsx bench/asn1-stack.ts` (prints the rows and a JSON line; BENCH_ASN1_N=300 tokens).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { EmbeddedTsa } from '../lib/crypto/tsa/embedded.js';
import { generateTsaCertificates, parseCertificate } from '../lib/crypto/tsa/certificates.js';
import { verifyTimestampResponse } from '../lib/crypto/tsa/verify.js';
import { certificatesFromPem } from '../lib/crypto/tsa/x509-verify.js';
import { validatePath } from '../lib/crypto/tsa/path.js';
import { CA_EXTENSIONS, TSA_EXTENSIONS, buildResponse, makeCertificate } from '../test/crypto/tsa-token-builder.js';
import { validateCertificateChain } from '../test/support/pkijs-chain.js';
import { verifyTimestampResponse as pkijsVerifyTimestampResponse } from '../test/support/pkijs-tsa-verify.js';
import { SERVERLESS_ESBUILD } from '../test/support/serverless-esbuild.js';
import { REPO_ROOT } from './lib/proc.js';

const N = Number(process.env.BENCH_ASN1_N ?? 300) || 300;
const rows: { stage: string; value: string }[] = [];
const row = (stage: string, value: string) => {
  rows.push({ stage, value });
  process.stderr.write(`  ${stage}: ${value}\n`);
};

async function perCall(n: number, fn: (i: number) => unknown): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await fn(i);
  return (performance.now() - t0) / n;
}

// ------------------------------------------------------------------------------ 1. per token
const bundle = await generateTsaCertificates();
const tsa = await EmbeddedTsa.create({ ...bundle, policyOid: '1.3.6.1.4.1.99999.1' });
const tokens: { response: Uint8Array; imprint: Uint8Array }[] = [];
for (let i = 0; i < Math.min(N, 100); i++) {
  const imprint = new Uint8Array(randomBytes(32));
  tokens.push({ response: (await tsa.timestamp(imprint)).response, imprint });
}
const roots = [bundle.rootCertPem];
const at = (i: number) => tokens[i % tokens.length] as { response: Uint8Array; imprint: Uint8Array };
// The first verification of a chain in this process: nothing of it is cached yet.
let t0 = performance.now();
const first = await verifyTimestampResponse(at(0).response, { imprint: at(0).imprint, roots });
row('our verifier, first token of a chain (ms)', (performance.now() - t0).toFixed(2));
if (!first.ok) throw new Error('our verifier refused a token of the embedded TSA');
const own = await perCall(N, async (i) => {
  const r = await verifyTimestampResponse(at(i).response, { imprint: at(i).imprint, roots });
  if (!r.ok) throw new Error('own');
});
row('our verifier per token, signature links verified once per process (ms)', own.toFixed(3));
const lib = await perCall(N, async (i) => {
  const r = await pkijsVerifyTimestampResponse(at(i).response, { imprint: at(i).imprint, roots });
  if (!r.ok) throw new Error('pkijs');
});
row('pkijs verifier per token (test/support/pkijs-tsa-verify.ts) (ms)', lib.toFixed(3));

// ------------------------------------------------------------------------------ 2. path validation alone
const [leafOwn] = certificatesFromPem(bundle.tsaCertPem);
const [rootOwn] = certificatesFromPem(bundle.rootCertPem);
if (!leafOwn || !rootOwn) throw new Error('certificates');
const now = new Date();
const ownPath = await perCall(N, () => {
  if (!validatePath(leafOwn, { anchors: [rootOwn], checkDate: now }).ok) throw new Error('own path');
});
row('path validation, lib/crypto/tsa/path.ts, per call (ms)', ownPath.toFixed(4));
const leafLib = parseCertificate(bundle.tsaCertPem);
const rootLib = parseCertificate(bundle.rootCertPem);
const libPath = await perCall(N, async () => {
  if (!(await validateCertificateChain(leafLib, { anchors: [rootLib], checkDate: now })).ok) throw new Error('pkijs path');
});
row('path validation, pkijs CertificateChainValidationEngine, per call (ms)', libPath.toFixed(3));

// ------------------------------------------------------------------------------ 3. the looping certificate set
const dir = mkdtempSync(path.join(os.tmpdir(), 'asn1-stack-'));
try {
  const openssl = (args: string[]) => {
    const r = spawnSync('/usr/bin/openssl', args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
  };
  const keyPath = path.join(dir, 'loop.key');
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyPath]);
  const cas: string[] = [];
  for (let i = 0; i < 12; i++) {
    const out = path.join(dir, `loop-${i}.pem`);
    openssl([
      'req', '-x509', '-new', '-key', keyPath, '-subj', '/CN=Loop CA', '-set_serial', String(1000 + i), '-days', '30',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign', '-out', out,
    ]);
    cas.push(readFileSync(out, 'utf8'));
  }
  const trusted = makeCertificate({ subject: '/O=Adversarial/CN=Trusted Root', key: 'p256', extensions: CA_EXTENSIONS });
  const leaf = makeCertificate({
    subject: '/CN=Loop TSA',
    key: 'p256',
    issuer: { certPem: cas[0] as string, keyPem: readFileSync(keyPath, 'utf8') },
    extensions: TSA_EXTENSIONS.filter((e) => !e.startsWith('authorityKeyIdentifier')),
  });
  const imprint = new Uint8Array(createHash('sha256').update('adversarial').digest());
  const response = buildResponse({ signer: leaf, certificates: [leaf.certPem, ...cas], imprint });
  t0 = performance.now();
  const v = await verifyTimestampResponse(response, { imprint, roots: [trusted.certPem] });
  row('looping set (12 CAs), our verifier (ms)', `${(performance.now() - t0).toFixed(1)}: ${v.checks.chain.reason.slice(0, 120)}`);
  // pkijs: the same leaf, the loop CAs as intermediates, the trusted root as anchor; 20 s at most.
  const DEADLINE_MS = 20_000;
  t0 = performance.now();
  const outcome = await Promise.race([
    validateCertificateChain(parseCertificate(leaf.certPem), { anchors: [parseCertificate(trusted.certPem)], intermediates: cas.map((c) => parseCertificate(c)), checkDate: new Date() }).then(
      (r) => `${(performance.now() - t0).toFixed(1)}: ${r.ok ? 'ok' : r.reason.slice(0, 120)}`,
    ),
    new Promise<string>((resolve) => setTimeout(() => resolve(`did not finish within ${DEADLINE_MS} ms`), DEADLINE_MS).unref()),
  ]);
  row('looping set (12 CAs), pkijs CertificateChainValidationEngine (ms)', outcome);
  for (const n of [4, 6, 8]) {
    t0 = performance.now();
    const r = await validateCertificateChain(parseCertificate(leaf.certPem), {
      anchors: [parseCertificate(trusted.certPem)],
      intermediates: cas.slice(0, n).map((c) => parseCertificate(c)),
      checkDate: new Date(),
    });
    row(`looping set (${n} CAs), pkijs CertificateChainValidationEngine (ms)`, `${(performance.now() - t0).toFixed(1)}: ${r.ok ? 'ok' : 'refused'}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// ------------------------------------------------------------------------------ 4. the verify function's bundle
const require = createRequire(import.meta.url);
const plugins = require(path.join(REPO_ROOT, 'infra', 'esbuild-plugins.cjs')) as Plugin[];
const outDir = mkdtempSync(path.join(os.tmpdir(), 'asn1-bundle-'));
try {
  symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(outDir, 'node_modules'), 'dir');
  const entry = path.join(REPO_ROOT, 'functions/v2/evidence-verify.ts');
  const variants = {
    'as it is': `export * from ${JSON.stringify(entry)};`,
    'with pkijs path validation': `export * from ${JSON.stringify(entry)}; import { CertificateChainValidationEngine } from 'pkijs'; export const engine = CertificateChainValidationEngine;`,
    'with asn1js decoding': `export * from ${JSON.stringify(entry)}; import { fromBER } from 'asn1js'; export const decode = fromBER;`,
  };
  for (const [name, contents] of Object.entries(variants)) {
    const outfile = path.join(outDir, `${name.replace(/\W+/g, '-')}.mjs`);
    await build({ ...SERVERLESS_ESBUILD, stdin: { contents, resolveDir: REPO_ROOT, loader: 'ts' }, plugins, outfile, absWorkingDir: REPO_ROOT, logLevel: 'silent' });
    const times: number[] = [];
    for (let i = 0; i < 7; i++) {
      const script = `const t = performance.now(); await import(${JSON.stringify(pathToFileURL(outfile).href)}); process.stdout.write(String(performance.now() - t));`;
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: outDir,
        env: { PATH: process.env.PATH ?? '', AWS_REGION: 'eu-central-1', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', DEPLOYMENT: 'aws' },
      });
      times.push(Number(out.toString()));
    }
    times.sort((a, b) => a - b);
    row(`v2EvidenceVerify bundle ${name}`, `${(statSync(outfile).size / 1024).toFixed(1)} KiB, import median ${times[3]?.toFixed(0)} ms (7 runs)`);
  }
} finally {
  rmSync(outDir, { recursive: true, force: true });
}

process.stdout.write(`${JSON.stringify({ when: new Date().toISOString(), node: process.version, n: N, rows })}\n`);
