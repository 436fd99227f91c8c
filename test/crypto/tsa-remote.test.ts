import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, afterEach, before, describe, it } from 'node:test';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { type TsaCertificateBundle, generateTsaCertificates } from '../../lib/crypto/tsa/certificates.js';
import { EmbeddedTsa } from '../../lib/crypto/tsa/embedded.js';
import { TsaUnavailableError } from '../../lib/crypto/tsa/errors.js';
import { pemToDer } from '../../lib/crypto/tsa/pem.js';
import { RemoteTsa } from '../../lib/crypto/tsa/remote.js';
import { parseTimestampResponse, verifyTimestampResponse } from '../../lib/crypto/tsa/verify.js';

const OPENSSL = '/usr/bin/openssl';
const POLICY = '1.2.3.4.1';
const OTHER_POLICY = '1.2.3.4.5';
const run = promisify(execFile);

let dir: string;
let trusted: TsaCertificateBundle;
let foreign: TsaCertificateBundle;
let testCounter = 0;

/** How the test TSA treats a request before handing it to `openssl ts -reply`. */
type Mode = 'honest' | 'http500' | 'garbage' | 'other-imprint' | 'wrong-nonce' | 'foreign-root' | 'rejection' | 'silent';

interface TestTsa {
  url: string;
  /** Requests the server received, with the Authorization header. */
  seen: { contentType: string | undefined; authorization: string | undefined }[];
  close(): Promise<void>;
}

const servers: TestTsa[] = [];

function sha256(data: string | Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(data).digest());
}

function writePki(into: string, bundle: TsaCertificateBundle): void {
  mkdirSync(into, { recursive: true });
  writeFileSync(path.join(into, 'root.pem'), bundle.rootCertPem);
  writeFileSync(path.join(into, 'tsa.pem'), bundle.tsaCertPem);
  writeFileSync(path.join(into, 'tsa.key'), bundle.tsaKeyPkcs8Pem);
}

/**
 * A minimal OpenSSL TSA configuration (openssl-ts(1) "CONFIGURATION FILE OPTIONS") with its own
 * serial file, so that tests never share state.
 */
function writeTsaConfig(workDir: string, pkiDir: string): string {
  const serial = path.join(workDir, 'serial');
  writeFileSync(serial, '01\n');
  const cnf = path.join(workDir, 'tsa.cnf');
  writeFileSync(
    cnf,
    [
      '[ tsa ]',
      'default_tsa = tsa_config',
      '',
      '[ tsa_config ]',
      `serial = ${serial}`,
      'crypto_device = builtin',
      `signer_cert = ${path.join(pkiDir, 'tsa.pem')}`,
      `certs = ${path.join(pkiDir, 'root.pem')}`,
      `signer_key = ${path.join(pkiDir, 'tsa.key')}`,
      'signer_digest = sha256',
      `default_policy = ${POLICY}`,
      `other_policies = ${OTHER_POLICY}`,
      'digests = sha256, sha384, sha512',
      'accuracy = secs:1',
      'ordering = no',
      'tsa_name = yes',
      'ess_cert_id_chain = no',
      'ess_cert_id_alg = sha256',
      '',
    ].join('\n'),
  );
  return cnf;
}

/** Signs a DER TimeStampReq with `openssl ts -reply`. */
async function opensslReply(cnf: string, workDir: string, tsq: Uint8Array): Promise<Uint8Array> {
  const id = randomBytes(6).toString('hex');
  const reqPath = path.join(workDir, `${id}.tsq`);
  const respPath = path.join(workDir, `${id}.tsr`);
  await writeFile(reqPath, tsq);
  await run(OPENSSL, ['ts', '-reply', '-config', cnf, '-queryfile', reqPath, '-out', respPath]);
  return new Uint8Array(await readFile(respPath));
}

/** Re-encodes a TimeStampReq after `change`, e.g. to make an honest TSA answer the wrong question. */
function rewriteRequest(tsq: Uint8Array, change: (req: pkijs.TimeStampReq) => void): Uint8Array {
  const req = pkijs.TimeStampReq.fromBER(Uint8Array.from(tsq).buffer);
  change(req);
  return new Uint8Array(req.toSchema().toBER());
}

async function readBody(req: IncomingMessage): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new Uint8Array(Buffer.concat(chunks));
}

/** Starts an HTTP TSA on 127.0.0.1 that answers with `openssl ts -reply`, altered per `mode`. */
async function startTsa(mode: Mode): Promise<TestTsa> {
  const workDir = path.join(dir, `tsa-${testCounter++}`);
  mkdirSync(workDir);
  const pki = path.join(dir, mode === 'foreign-root' ? 'foreign' : 'trusted');
  const cnf = writeTsaConfig(workDir, pki);
  const seen: TestTsa['seen'] = [];

  const server: Server = createServer((req, res) => {
    seen.push({ contentType: req.headers['content-type'], authorization: req.headers.authorization });
    void (async () => {
      const tsq = await readBody(req);
      let reply: Uint8Array;
      switch (mode) {
        case 'silent':
          return; // never answers
        case 'http500':
          res.writeHead(500, { 'Content-Type': 'text/plain' }).end('internal error');
          return;
        case 'garbage':
          reply = randomBytes(300);
          break;
        case 'rejection':
          reply = await rejectionReply();
          break;
        case 'other-imprint':
          reply = await opensslReply(
            cnf,
            workDir,
            rewriteRequest(tsq, (r) => {
              r.messageImprint.hashedMessage = new asn1js.OctetString({ valueHex: Uint8Array.from(sha256('other data')).buffer });
            }),
          );
          break;
        case 'wrong-nonce':
          reply = await opensslReply(
            cnf,
            workDir,
            rewriteRequest(tsq, (r) => {
              r.nonce = asn1js.Integer.fromBigInt((r.nonce?.toBigInt() ?? 0n) + 1n);
            }),
          );
          break;
        default:
          reply = await opensslReply(cnf, workDir, tsq);
      }
      res.writeHead(200, { 'Content-Type': 'application/timestamp-reply' }).end(Buffer.from(reply));
    })().catch((err: unknown) => {
      res.writeHead(502).end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const tsa: TestTsa = {
    url: `http://127.0.0.1:${port}/tsa`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(tsa);
  return tsa;
}

/** A real rejection TimeStampResp, as our embedded TSA gives for a malformed request. */
async function rejectionReply(): Promise<Uint8Array> {
  const embedded = new EmbeddedTsa({ ...trusted, policyOid: POLICY });
  return embedded.respond(new Uint8Array([1, 2, 3]));
}

function remoteFor(tsa: TestTsa, extra: Partial<ConstructorParameters<typeof RemoteTsa>[0]> = {}): RemoteTsa {
  return new RemoteTsa({ url: tsa.url, rootsPem: [trusted.rootCertPem], timeoutMs: 5000, ...extra });
}

async function assertUnavailable(promise: Promise<unknown>, message: RegExp): Promise<TsaUnavailableError> {
  let caught: unknown;
  try {
    await promise;
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof TsaUnavailableError, `expected a TsaUnavailableError, got ${String(caught)}`);
  assert.equal(caught.code, 'tsa_unavailable');
  assert.match(caught.message, message);
  return caught;
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'tsa-remote-'));
  [trusted, foreign] = await Promise.all([generateTsaCertificates(), generateTsaCertificates()]);
  writePki(path.join(dir, 'trusted'), trusted);
  writePki(path.join(dir, 'foreign'), foreign);
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('RemoteTsa against an OpenSSL TSA over HTTP', () => {
  it('returns a reply that it verified, and that openssl verifies too', async () => {
    const server = await startTsa('honest');
    const remote = remoteFor(server);
    const imprint = sha256(randomBytes(32));
    const before = Date.now();
    const issued = await remote.timestamp(imprint);

    assert.equal(issued.policy, POLICY);
    assert.equal(issued.serial, '2', 'OpenSSL serial files hold the last serial used: 01 → 2');
    assert.ok(Math.abs(issued.genTime.getTime() - before) < 60_000);
    assert.equal(server.seen[0]?.contentType, 'application/timestamp-query');

    const respPath = path.join(dir, 'honest.tsr');
    writeFileSync(respPath, issued.response);
    const r = spawnSync(
      OPENSSL,
      ['ts', '-verify', '-digest', Buffer.from(imprint).toString('hex'), '-in', respPath, '-CAfile', path.join(dir, 'trusted/root.pem')],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /Verification: OK/);
  });

  it('lists the chain of the last verified reply, leaf first, then the roots', async () => {
    const remote = remoteFor(await startTsa('honest'));
    const rootOnly = await remote.certificates();
    assert.equal(rootOnly.length, 1, 'before any reply, only the configured root');
    await remote.timestamp(sha256('chain'));
    const chain = await remote.certificates();
    assert.deepEqual(
      chain.map((pem) => Buffer.from(pemToDer(pem)).toString('hex')),
      [trusted.tsaCertPem, trusted.rootCertPem].map((pem) => Buffer.from(pemToDer(pem)).toString('hex')),
    );
  });

  it('asks for a configured policy and checks that the reply carries it', async () => {
    const remote = remoteFor(await startTsa('honest'), { policyOid: OTHER_POLICY });
    const issued = await remote.timestamp(sha256('policy'));
    assert.equal(issued.policy, OTHER_POLICY);
  });

  it('sends URL credentials as Basic authentication and never shows them in errors', async () => {
    const server = await startTsa('http500');
    const url = new URL(server.url);
    url.username = 'alice';
    url.password = 's3cret-password';
    url.searchParams.set('apikey', 'top-secret-key');
    const remote = remoteFor(server, { url: url.toString() });
    const err = await assertUnavailable(remote.timestamp(sha256('auth')), /HTTP 500/);
    assert.doesNotMatch(err.message, /s3cret|top-secret|alice/);
    assert.equal(server.seen[0]?.authorization, `Basic ${Buffer.from('alice:s3cret-password').toString('base64')}`);
  });
});

describe('RemoteTsa refuses with TsaUnavailableError', () => {
  it('an HTTP 500', async () => {
    await assertUnavailable(remoteFor(await startTsa('http500')).timestamp(sha256('a')), /answered HTTP 500/);
  });

  it('a reply that is not DER', async () => {
    await assertUnavailable(remoteFor(await startTsa('garbage')).timestamp(sha256('b')), /failed verification.*malformed/);
  });

  it('a rejection', async () => {
    await assertUnavailable(remoteFor(await startTsa('rejection')).timestamp(sha256('c')), /status rejection/);
  });

  it('a reply for another imprint', async () => {
    await assertUnavailable(remoteFor(await startTsa('other-imprint')).timestamp(sha256('d')), /imprint: /);
  });

  it('a reply with another nonce', async () => {
    const err = await assertUnavailable(remoteFor(await startTsa('wrong-nonce')).timestamp(sha256('e')), /nonce: /);
    assert.doesNotMatch(err.message, /imprint: |chain: /);
  });

  it('a reply signed by a certificate that chains to an unconfigured root', async () => {
    const err = await assertUnavailable(remoteFor(await startTsa('foreign-root')).timestamp(sha256('f')), /chain: /);
    assert.doesNotMatch(err.message, /signature: |imprint: /);
  });

  it('a TSA that does not answer within the timeout', async () => {
    await assertUnavailable(remoteFor(await startTsa('silent'), { timeoutMs: 300 }).timestamp(sha256('g')), /did not answer within 300 ms/);
  });

  it('a TSA that cannot be reached', async () => {
    const server = await startTsa('honest');
    await server.close();
    await assertUnavailable(remoteFor(server).timestamp(sha256('h')), /cannot be reached/);
  });
});

describe('RemoteTsa configuration', () => {
  it('refuses an imprint that is not 32 bytes with a TypeError', async () => {
    const remote = new RemoteTsa({ url: 'http://127.0.0.1:9/', rootsPem: [trusted.rootCertPem], timeoutMs: 100 });
    await assert.rejects(remote.timestamp(new Uint8Array(31)), TypeError);
  });

  it('refuses a missing root, a bad URL and a bad timeout at construction', () => {
    assert.throws(() => new RemoteTsa({ url: 'http://127.0.0.1:9/', rootsPem: [], timeoutMs: 100 }), /root/);
    assert.throws(() => new RemoteTsa({ url: 'ftp://example.test/', rootsPem: [trusted.rootCertPem], timeoutMs: 100 }), /http or https/);
    assert.throws(() => new RemoteTsa({ url: 'http://127.0.0.1:9/', rootsPem: [trusted.rootCertPem], timeoutMs: 0 }), /timeoutMs/);
  });
});

describe('verifyTimestampResponse on an OpenSSL-signed token', () => {
  it('passes every check, nonce and policy included', async () => {
    const workDir = path.join(dir, 'direct');
    mkdirSync(workDir);
    const cnf = writeTsaConfig(workDir, path.join(dir, 'trusted'));
    const data = randomBytes(64);
    const dataPath = path.join(workDir, 'data.bin');
    const tsqPath = path.join(workDir, 'req.tsq');
    writeFileSync(dataPath, data);
    assert.equal(spawnSync(OPENSSL, ['ts', '-query', '-sha256', '-cert', '-data', dataPath, '-out', tsqPath]).status, 0);
    const tsq = new Uint8Array(readFileSync(tsqPath));
    const nonce = pkijs.TimeStampReq.fromBER(Uint8Array.from(tsq).buffer).nonce?.toBigInt();
    assert.ok(nonce !== undefined);

    const response = await opensslReply(cnf, workDir, tsq);
    const v = await verifyTimestampResponse(response, { imprint: sha256(data), roots: [trusted.rootCertPem], nonce, policy: POLICY });
    assert.equal(v.ok, true, JSON.stringify(v.checks));
    assert.deepEqual(
      Object.entries(v.checks)
        .filter(([, c]) => c.result !== 'pass')
        .map(([name]) => name),
      [],
    );
    assert.equal(parseTimestampResponse(response).tsaName, 'DirName:O=Evidence Anchoring Service, CN=Evidence Anchoring TSA');
  });
});
