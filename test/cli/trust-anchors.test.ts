/**
 * The offline verifier with pinned trust anchors (issue 14): `evidence trust add` stores a
 * service's anchors once; `evidence verify` then pins the TSA root, the ML-DSA-65 key and the
 * ledger wallet with no flags, and checks stand-alone timestamps and signatures too. A receipt
 * whose `ledger.from` was deleted, or a wrong pinned wallet, fails.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { main } from '../../lib/cli/evidence.js';
import { addTrustedService } from '../../lib/cli/trust.js';
import { pemToDer } from '../../lib/crypto/tsa/pem.js';
import { createAccount, Device, json, randomHash } from '../support/client.js';
import { startHttpService, type HttpService } from '../support/http-server.js';
import { useStack } from '../support/stack.js';

let service: HttpService;
let dir: string;
let env: NodeJS.ProcessEnv;
let rpcUrl: string;
let photoPath: string;
let receipt: Record<string, unknown> & { ledger: Record<string, unknown> };

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l) }, env);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

async function post(pathName: string, body: unknown, apiKey: string): Promise<unknown> {
  const res = await fetch(`${service.url}${pathName}`, json(body, { 'x-api-key': apiKey }));
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

before(async () => {
  const stackEnv = await useStack();
  rpcUrl = stackEnv.LEDGER_RPC_URL ?? '';
  service = await startHttpService();
  dir = await mkdtemp(path.join(os.tmpdir(), 'trust-'));
  env = { ...process.env, EVIDENCE_TRUST_FILE: path.join(dir, 'trust.json') };
  const pro = await createAccount('pro');
  const photo = Buffer.from(`a photo ${randomHash()}`);
  photoPath = path.join(dir, 'photo.jpg');
  await writeFile(photoPath, photo);
  const hash = sha256Hex(photo);
  await post('/api/v2/evidence/anchor', new Device().next(hash), pro.apiKey);
  receipt = (await (await fetch(`${service.url}/api/v2/evidence/receipt/${hash}`)).json()) as typeof receipt;
  await writeFile(`${photoPath}.receipt.json`, JSON.stringify(receipt));
  await writeFile(path.join(dir, 't.json'), JSON.stringify(await post('/api/v2/evidence/timestamp', { sha256_hash: hash }, pro.apiKey)));
  await writeFile(path.join(dir, 's.json'), JSON.stringify(await post('/api/v2/evidence/sign', { sha256_hash: hash }, pro.apiKey)));
});
after(() => service.close());

describe('evidence verify without a trust file', () => {
  it('leaves what it checked against unpinned anchors unchecked: not established (exit 3), never verified', async () => {
    const r = await run('verify', photoPath, '--rpc', rpcUrl);
    assert.equal(r.code, 3, r.out);
    assert.match(r.out, /root: from receipt \(not pinned\)/);
    assert.match(r.out, /ML-DSA-65 key: not pinned/);
    assert.match(r.out, /wallet: not pinned/);
    assert.match(r.out, /unchecked\s+RFC 3161 timestamp\s+.*against the receipt's own root/);
    assert.match(r.out, /unchecked\s+ML-DSA-65 key published by the service/);
    assert.match(r.out, /unchecked\s+ledger transaction\s+.*not held to a pinned service wallet/);
    assert.match(r.out, /^NOT ESTABLISHED: /m);
    assert.doesNotMatch(r.out, /\bfails\b/);
  });

  it('leaves the ledger unchecked for a receipt whose ledger.from was deleted, when no wallet is pinned', async () => {
    const file = path.join(dir, 'no-from.receipt.json');
    const copy = structuredClone(receipt);
    delete copy.ledger.from;
    await writeFile(file, JSON.stringify(copy));
    const r = await run('verify', photoPath, '--receipt', file, '--rpc', rpcUrl);
    assert.equal(r.code, 3, r.out);
    assert.match(r.out, /unchecked\s+ledger transaction\s+.*not held to a pinned service wallet/);
  });

  it('holds a receipt without ledger.from to the right --wallet, and fails a wrong --wallet', async () => {
    const file = path.join(dir, 'no-from-2.receipt.json');
    const copy = structuredClone(receipt);
    delete copy.ledger.from;
    await writeFile(file, JSON.stringify(copy));
    const right = await run('verify', photoPath, '--receipt', file, '--rpc', rpcUrl, '--wallet', String(receipt.ledger.from));
    assert.match(right.out, /holds\s+ledger transaction\s+mined in block/);
    assert.equal(right.code, 3, 'the root and the ML-DSA-65 key are still not pinned');
    const wrong = await run('verify', photoPath, '--rpc', rpcUrl, '--wallet', `0x${'12'.repeat(20)}`);
    assert.equal(wrong.code, 1, wrong.out);
    assert.match(wrong.out, /fails\s+ledger transaction\s+.*expected 0x1212/);
  });

  it('leaves a signature unchecked when no JWK set is pinned', async () => {
    const r = await run('verify', photoPath, '--signature', path.join(dir, 's.json'));
    assert.equal(r.code, 3, r.out);
    assert.match(r.out, /signing key: none pinned/);
    assert.match(r.out, /unchecked\s+Ed25519 signature over JCS\(statement\)/);
  });
});

describe('evidence trust add, then evidence verify with no flags', () => {
  before(async () => {
    const r = await run('trust', 'add', service.url);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /TSA root SHA-256\s+[0-9a-f]{64}/);
    assert.match(r.out, /wallet 0x[0-9a-fA-F]{40}/);
  });

  it('stores the root, the JWK set, the chain id and the wallet in the trust file', async () => {
    const trust = JSON.parse(await readFile(env.EVIDENCE_TRUST_FILE ?? '', 'utf8')) as { services: { base_url: string; ledger: { wallet_address: string; chain_id: number } }[] };
    assert.equal(trust.services.length, 1);
    assert.equal(trust.services[0]?.base_url, service.url);
    assert.equal(trust.services[0]?.ledger.wallet_address.toLowerCase(), String(receipt.ledger.from).toLowerCase());
    assert.equal(trust.services[0]?.ledger.chain_id, 31337);
  });

  it('stores the PDF signing certificates with their windows, each checked against the SHA-256 the document states', async () => {
    const trust = JSON.parse(await readFile(env.EVIDENCE_TRUST_FILE ?? '', 'utf8')) as {
      services: { pdf_signing?: { status: string; sha256: string; certificate_pem: string; not_before: string | null; not_after: string | null; retired_at: string | null }[] }[];
    };
    const [pdf] = trust.services[0]?.pdf_signing ?? [];
    assert.ok(pdf, 'the trust file holds the PDF signing certificate');
    assert.equal(sha256Hex(pemToDer(pdf.certificate_pem, 'CERTIFICATE')), pdf.sha256);
    assert.deepEqual([pdf.status, pdf.retired_at], ['active', null]);
    assert.ok(pdf.not_before && pdf.not_after && Date.parse(pdf.not_before) < Date.parse(pdf.not_after));
    // A document that states another SHA-256 for it is refused: the verifier pins the certificate by that hash.
    const tampering = async (url: string) => {
      const res = await fetch(url);
      if (!url.endsWith('/.well-known/evidence-trust-anchors.json')) return res;
      const doc = (await res.json()) as { pdf_signing: { sha256: string }[] };
      (doc.pdf_signing[0] as { sha256: string }).sha256 = '00'.repeat(32);
      return Response.json(doc);
    };
    await assert.rejects(addTrustedService(path.join(dir, 'tampered-trust.json'), service.url, tampering), /a PDF signing certificate's SHA-256 is not the one the document states/);
  });

  it('pins the root, the ML-DSA-65 key and the wallet: a receipt verifies with no warnings', async () => {
    const r = await run('verify', photoPath, '--rpc', rpcUrl);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /root: pinned \(trust file/);
    assert.match(r.out, /holds\s+ML-DSA-65 key published by the service/);
    assert.match(r.out, /wallet: pinned 0x[0-9a-fA-F]{40} \(trust file/);
    assert.match(r.out, /^VERIFIED: /m);
    assert.doesNotMatch(r.out, /not pinned/);
  });

  it('fails a pinned wallet that is not the sender, even when the receipt agrees with the chain', async () => {
    const r = await run('verify', photoPath, '--rpc', rpcUrl, '--wallet', `0x${'ab'.repeat(20)}`);
    assert.equal(r.code, 1);
  });

  it('verifies the stand-alone timestamp and the signature against the file with the pinned anchors', async () => {
    const r = await run('verify', photoPath, '--timestamp', path.join(dir, 't.json'), '--signature', path.join(dir, 's.json'));
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /timestamp .*t\.json/);
    assert.match(r.out, /holds\s+RFC 3161 timestamp\s+the RFC 3161 token verifies/);
    assert.match(r.out, /holds\s+Ed25519 signature over JCS\(statement\)\s+Ed25519 over JCS\(statement\) verifies/);
    assert.match(r.out, /holds\s+Ed25519 key pinned/);
  });

  it('fails the timestamp and the signature for another file', async () => {
    const other = path.join(dir, 'other.jpg');
    await writeFile(other, 'another photo');
    const r = await run('verify', other, '--timestamp', path.join(dir, 't.json'), '--signature', path.join(dir, 's.json'));
    assert.equal(r.code, 1);
    assert.match(r.out, /fails\s+RFC 3161 timestamp/);
    assert.match(r.out, /timestamp imprint: fail/);
    assert.match(r.out, /fails\s+signed statement names this hash/);
  });

  it('fails a signature whose statement was changed', async () => {
    const s = JSON.parse(await readFile(path.join(dir, 's.json'), 'utf8')) as { statement: { signed_at: string } };
    s.statement.signed_at = '2020-01-01T00:00:00.000Z';
    const file = path.join(dir, 's-changed.json');
    await writeFile(file, JSON.stringify(s));
    const r = await run('verify', photoPath, '--signature', file);
    assert.equal(r.code, 1);
    assert.match(r.out, /fails\s+Ed25519 signature over JCS\(statement\)/);
  });
});
