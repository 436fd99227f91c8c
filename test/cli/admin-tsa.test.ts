/**
 * The admin CLI's TSA commands (docs/runbook.md "Rotating the TSA keys"): `rotate-tsa-leaf` and
 * `rotate-tsa-root` (classic and `--pq`) on a private copy of the stack's DATA_DIR, refused while
 * the API answers on PORT; `record-tsa-retirement` and `issue-pq-tsa-cert`, the production steps.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { X509Certificate } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { runAdmin, type CliIo } from '../../lib/cli/admin.js';
import { mlDsa65Spki, NodeMlDsaSigner } from '../../lib/crypto/ml-dsa.js';
import { pqTsaFiles, tsaFiles } from '../../lib/crypto/tsa/files.js';
import { readTsaHistory } from '../../lib/crypto/tsa/history.js';
import { verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';
import { EmbeddedTsa } from '../../lib/crypto/tsa/embedded.js';
import { getConfig, resetCoreDeps } from '../../lib/deps/core.js';
import { pdfSignerFiles } from '../../lib/crypto/pdf-sign/files.js';
import { freePort } from '../../lib/local/net.js';
import { useStack } from '../support/stack.js';

await useStack();

function capture(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (l) => stdout.push(l), err: (l) => stderr.push(l) };
}

let dataDir: string;

before(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'admin-tsa-'));
  cpSync(process.env.DATA_DIR ?? '', dataDir, { recursive: true });
  process.env.DATA_DIR = dataDir;
  process.env.PORT = String(await freePort());
  resetCoreDeps();
});

describe('admin CLI: TSA rotation', () => {
  it('refuses to rotate while the API answers on PORT, and names the reason', async () => {
    const server = createServer((_req, res) => res.end('{}'));
    await new Promise<void>((resolve) => server.listen(Number(process.env.PORT), '127.0.0.1', resolve));
    try {
      const io = capture();
      const before = readFileSync(tsaFiles(path.join(dataDir, 'tsa')).tsaCert, 'utf8');
      assert.equal(await runAdmin(['rotate-tsa-leaf'], io), 1);
      assert.match(io.stderr.join('\n'), /stop npm start first/);
      assert.equal(readFileSync(tsaFiles(path.join(dataDir, 'tsa')).tsaCert, 'utf8'), before, 'nothing rotated');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('rotates the leaf and the root of each TSA with one command each, and the new keys sign tokens that verify', async () => {
    const dir = path.join(dataDir, 'tsa');
    for (const [argv, kind] of [
      [['rotate-tsa-leaf'], 'classic'],
      [['rotate-tsa-leaf', '--pq'], 'pq'],
      [['rotate-tsa-root'], 'classic'],
      [['rotate-tsa-root', '--pq'], 'pq'],
    ] as const) {
      const pdfCertBefore = readFileSync(pdfSignerFiles(getConfig().pdfSigner.dir).cert, 'utf8');
      const io = capture();
      assert.equal(await runAdmin([...argv], io), 0, io.stderr.join('\n'));
      const result = JSON.parse(io.stdout.join('\n')) as { kind: string; rotated: string; retired: { role: string }[]; pdf_signing?: unknown };
      assert.equal(result.kind, kind);
      assert.deepEqual(result.retired.map((r) => r.role).sort(), argv[0] === 'rotate-tsa-root' ? ['leaf', 'root'] : ['leaf']);
      const files = kind === 'pq' ? pqTsaFiles(dir) : tsaFiles(dir);
      const [rootCertPem, tsaCertPem, tsaKeyPkcs8Pem] = [files.rootCert, files.tsaCert, files.tsaKey].map((f) => readFileSync(f, 'utf8')) as [string, string, string];
      // A new classic root reissues the PDF signing certificate under itself; nothing else touches it.
      const pdfCert = readFileSync(pdfSignerFiles(getConfig().pdfSigner.dir).cert, 'utf8');
      if (argv[0] === 'rotate-tsa-root' && kind === 'classic') {
        assert.ok(result.pdf_signing, 'the PDF signing rotation is reported');
        assert.notEqual(pdfCert, pdfCertBefore);
        assert.ok(new X509Certificate(pdfCert).verify(new X509Certificate(rootCertPem).publicKey), 'the new root issued the PDF signing certificate');
      } else {
        assert.equal(result.pdf_signing, undefined);
        assert.equal(pdfCert, pdfCertBefore);
      }
      const tsa = await EmbeddedTsa.create({ rootCertPem, tsaCertPem, tsaKeyPkcs8Pem, policyOid: '2.25.9' });
      const imprint = new Uint8Array(32).fill(7);
      const v = await verifyTimestampResponse((await tsa.issue({ imprint, certReq: true })).response, { imprint, roots: [rootCertPem] });
      assert.equal(v.ok, true, `${argv.join(' ')}: ${JSON.stringify(v.checks)}`);
    }
    const history = await readTsaHistory(path.join(dir, 'history.json'));
    assert.equal(history.retired.length, 6);
  });

  it('exits 2 for a rotation with an unknown flag', async () => {
    assert.equal(await runAdmin(['rotate-tsa-root', '--ecdsa'], capture()), 2);
  });
});

describe('admin CLI: the production steps', () => {
  it('issues the post-quantum leaf for a public key held elsewhere, and records a retirement at a given time', async () => {
    const dir = path.join(dataDir, 'tsa');
    const pq = pqTsaFiles(dir);
    const kmsLike = NodeMlDsaSigner.fromSeed(new Uint8Array(32).fill(3));
    const pub = path.join(dataDir, 'pq-pub.der');
    writeFileSync(pub, mlDsa65Spki(await kmsLike.publicKey()));
    const out = path.join(dataDir, 'pq-tsa-kms.pem');
    const io = capture();
    assert.equal(await runAdmin(['issue-pq-tsa-cert', '--root-cert', pq.rootCert, '--root-key', pq.rootKey, '--public-key', pub, '--out', out], io), 0, io.stderr.join('\n'));
    // The KMS-held key (here a node:crypto key standing in for it) signs tokens under that leaf.
    const { MlDsaTsaKeySigner } = await import('../../lib/crypto/tsa/key-signer.js');
    const rootCertPem = readFileSync(pq.rootCert, 'utf8');
    const tsa = await EmbeddedTsa.create({ rootCertPem, tsaCertPem: readFileSync(out, 'utf8'), keySigner: new MlDsaTsaKeySigner(kmsLike), policyOid: '2.25.9' });
    const imprint = new Uint8Array(32).fill(9);
    assert.equal((await verifyTimestampResponse((await tsa.issue({ imprint, certReq: true })).response, { imprint, roots: [rootCertPem] })).ok, true);

    const historyFile = path.join(dataDir, 'stage-history.json');
    const rec = capture();
    assert.equal(await runAdmin(['record-tsa-retirement', out, '--kind', 'pq', '--role', 'leaf', '--history', historyFile, '--at', '2027-02-01T00:00:00Z'], rec), 0, rec.stderr.join('\n'));
    const history = await readTsaHistory(historyFile);
    assert.deepEqual(history.retired.map((e) => [e.kind, e.role, e.retired_at]), [['pq', 'leaf', '2027-02-01T00:00:00.000Z']]);
    assert.equal(await runAdmin(['record-tsa-retirement', out, '--kind', 'ecdsa', '--role', 'leaf'], capture()), 2);
  });
});
