/**
 * Path validation (lib/crypto/tsa/path.ts) as of a check date, in one process: the path found
 * depends on the date only through validity (RFC 5280 §6.1.3 (a)(2)), and a path found at one date
 * is never answered for another at which the search ends otherwise (it also guards a cache of
 * validated paths, if one is brought back: path.ts says why there is none). The fixtures are a
 * leaf and two roots with one name and one key, the first expiring before the second.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { validatePath } from '../../lib/crypto/tsa/path.js';
import { type Certificate, certificatesFromPem } from '../../lib/crypto/tsa/x509-verify.js';
import { CA_EXTENSIONS, TSA_EXTENSIONS, makeCertificate } from './tsa-token-builder.js';

let dir: string;
let leaf: Certificate;
/** Valid 2020-01-01 to 2022-12-31. */
let oldRoot: Certificate;
/** The same name and key, valid 2021-01-01 to 2030-12-31. */
let newRoot: Certificate;

function openssl(args: string[]): void {
  const r = spawnSync('/usr/bin/openssl', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
}

function only(pem: string): Certificate {
  const [cert] = certificatesFromPem(pem);
  assert.ok(cert);
  return cert;
}

before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tsa-path-cache-'));
  const keyPath = path.join(dir, 'root.key');
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyPath]);
  const rootPem = (name: string, serial: string, notBefore: string, notAfter: string): string => {
    // A CSR signed by its own key through `openssl ca -selfsign`, for the explicit dates.
    const csr = path.join(dir, `${name}.csr`);
    openssl(['req', '-new', '-key', keyPath, '-subj', '/O=Path Cache/CN=Root', '-out', csr]);
    const cnf = path.join(dir, `${name}.cnf`);
    const index = path.join(dir, `${name}.index`);
    spawnSync('sh', ['-c', `: > ${index}; echo ${serial} > ${dir}/${name}.serial`]);
    const lines = [
      '[ca]', 'default_ca = dflt',
      '[dflt]', `database = ${index}`, `new_certs_dir = ${dir}`, `serial = ${dir}/${name}.serial`,
      'policy = any', 'unique_subject = no', 'default_md = sha256',
      '[any]', 'organizationName = optional', 'commonName = supplied',
      '[ext]', ...CA_EXTENSIONS, '',
    ];
    spawnSync('sh', ['-c', `cat > ${cnf}`], { input: lines.join('\n') });
    const out = path.join(dir, `${name}.pem`);
    openssl(['ca', '-batch', '-notext', '-config', cnf, '-in', csr, '-out', out, '-keyfile', keyPath, '-selfsign', '-startdate', notBefore, '-enddate', notAfter, '-extensions', 'ext']);
    return readFileSync(out, 'utf8');
  };
  const oldPem = rootPem('old', '01', '20200101000000Z', '20221231235959Z');
  const newPem = rootPem('new', '02', '20210101000000Z', '20301231235959Z');
  const leafPem = makeCertificate({
    subject: '/CN=Path Cache TSA',
    key: 'p256',
    issuer: { certPem: oldPem, keyPem: readFileSync(keyPath, 'utf8') },
    extensions: TSA_EXTENSIONS.filter((e) => !e.startsWith('authorityKeyIdentifier')),
    notBefore: '20200601000000Z',
    notAfter: '20291231235959Z',
  }).certPem;
  leaf = only(leafPem);
  oldRoot = only(oldPem);
  newRoot = only(newPem);
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

const anchorOf = (v: { path: Certificate[] }) => v.path[v.path.length - 1];

describe('path validation as of a date', () => {
  it('finds, in one process, the path each date gives: the expired root passed over, the earlier one taken while valid, none after the leaf', () => {
    const anchors = () => ({ anchors: [oldRoot, newRoot] });
    // 2025: the old root has expired, the search moves on to the new one.
    const late = validatePath(leaf, { ...anchors(), checkDate: new Date('2025-06-01T00:00:00Z') });
    assert.equal(late.ok, true, late.reason);
    assert.equal(anchorOf(late), newRoot);
    // 2021: both roots are valid and the old one comes first: the search ends on it. A cache that
    // kept only the window of the path it found (2021 to 2029) would answer with the new root.
    const early = validatePath(leaf, { ...anchors(), checkDate: new Date('2021-06-01T00:00:00Z') });
    assert.equal(early.ok, true, early.reason);
    assert.equal(anchorOf(early), oldRoot);
    assert.match(early.reason, /at 2021-06-01T00:00:00\.000Z$/);
    // 2031: the leaf has expired; nothing cached may say otherwise.
    const expired = validatePath(leaf, { ...anchors(), checkDate: new Date('2031-01-01T00:00:00Z') });
    assert.equal(expired.ok, false);
    assert.match(expired.reason, /is not valid at 2031-01-01/);
    // Before the leaf: likewise.
    const before = validatePath(leaf, { ...anchors(), checkDate: new Date('2020-03-01T00:00:00Z') });
    assert.equal(before.ok, false);
  });

});
