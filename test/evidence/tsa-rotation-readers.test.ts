/**
 * TSA rotation as a relying party meets it (issue 27 parts 1 and 2): records anchored before a
 * leaf rotation, between it and a root rotation, and after both (classic and post-quantum TSA
 * rotated together, with the admin CLI's rotation) are verified side by side by every reader:
 * v2 verify, v1 chain verify, the verify page, the offline CLI with a trust file made from the
 * trust-anchor document, and `openssl ts -verify` on the classic tokens with the root of their
 * time. Then, with an injected clock eleven years on, when every TSA leaf has expired, v2's
 * verdict still holds and says so.
 *
 * The rotation runs on a private copy of the test stack's DATA_DIR (other test files share the
 * stack's TSA), with the same tables and chain; the apps are rebuilt after each rotation, as a
 * restart of npm start would.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { rotateTsaLeaf, rotateTsaRoot } from '../../lib/crypto/tsa/rotation.js';
import { addTrustedService, pinnedAnchors, readTrustFile } from '../../lib/cli/trust.js';
import { verifyReceipt } from '../../lib/cli/verify-receipt.js';
import { getConfig, resetCoreDeps } from '../../lib/deps/core.js';
import { getVerifyDeps } from '../../lib/deps/verification.js';
import { RpcReader } from '../../lib/ledger/rpc-reader.js';
import { forgetFinalRecords, verifyEvidence } from '../../lib/evidence/verify.js';
import { Device, createAccount, json, randomHash } from '../support/client.js';
import { useStack } from '../support/stack.js';

type App = { request(path: string, init?: RequestInit): Response | Promise<Response> };
const apps = async () => ({
  anchor: (await import('../../functions/v2/evidence-anchor.js')).app as App,
  v2: (await import('../../functions/v2/evidence-verify.js')).app as App,
  receipt: (await import('../../functions/v2/evidence-receipt.js')).app as App,
  chainVerify: (await import('../../functions/v1/chain-verify.js')).app as App,
  page: (await import('../../functions/web/verify-page.js')).app as App,
  trust: (await import('../../functions/web/trust-anchors.js')).app as App,
});

interface Anchored {
  name: string;
  hash: string;
  photo: string;
}
const anchored: Anchored[] = [];
let apiKey: string;
let rpcUrl: string;

async function anchorPhoto(name: string): Promise<void> {
  const photo = `a photo ${name} ${randomHash()}`;
  const hash = sha256Hex(photo);
  const res = await (await apps()).anchor.request('/api/v2/evidence/anchor', json(new Device().next(hash), { 'x-api-key': apiKey }));
  assert.equal(res.status, 200, await res.clone().text());
  anchored.push({ name, hash, photo });
}

/** What a restart of the service does: every dependency built again from the files. */
function restart(): void {
  resetCoreDeps();
  forgetFinalRecords();
}

before(async () => {
  const env = await useStack();
  rpcUrl = env.LEDGER_RPC_URL ?? '';
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tsa-rotation-readers-'));
  cpSync(env.DATA_DIR ?? '', dataDir, { recursive: true });
  process.env.DATA_DIR = dataDir;
  restart();
  apiKey = (await createAccount('pro')).apiKey;
  const { tsa } = getConfig();
  await anchorPhoto('before the leaf rotation');
  for (const kind of ['classic', 'pq'] as const) await rotateTsaLeaf({ dir: tsa.dir, historyFile: tsa.historyFile, kind });
  restart();
  await anchorPhoto('between the leaf and the root rotation');
  for (const kind of ['classic', 'pq'] as const) await rotateTsaRoot({ dir: tsa.dir, historyFile: tsa.historyFile, kind });
  restart();
  await anchorPhoto('after both rotations');
});

describe('TSA rotation: every reader, old and new records side by side', () => {
  it('v2 verify, v1 chain verify and the verify page verify every record, both tokens holding', async () => {
    const a = await apps();
    for (const r of anchored) {
      const v2 = (await (await a.v2.request(`/api/v2/evidence/verify/${r.hash}`)).json()) as { status: string; proofs: Record<string, { state: string; reason: string }> };
      assert.equal(v2.status, 'verified', `${r.name}: ${JSON.stringify(v2.proofs)}`);
      assert.equal(v2.proofs.timestamp?.state, 'holds');
      assert.equal(v2.proofs.timestamp_pq?.state, 'holds');
      const v1 = (await (await a.chainVerify.request(`/api/v1/chain/verify/${r.hash}`)).json()) as { status: string };
      assert.equal(v1.status, 'verified', r.name);
      const html = await (await a.page.request(`/verify/${r.hash}`)).text();
      assert.match(html, /data-status="verified"/, r.name);
    }
  });

  it('the trust-anchor document lists current and retired TSA certificates, and the offline CLI verifies every receipt with the trust file', async () => {
    const a = await apps();
    const doc = (await (await a.trust.request('/.well-known/evidence-trust-anchors.json')).json()) as { tsa: { certificates: { kind: string; role: string; status: string }[] } };
    const count = (status: string) => doc.tsa.certificates.filter((c) => c.status === status).map((c) => `${c.kind} ${c.role}`).sort();
    assert.deepEqual(count('active'), ['classic leaf', 'classic root', 'pq leaf', 'pq root']);
    assert.deepEqual(count('retired'), ['classic leaf', 'classic leaf', 'classic root', 'pq leaf', 'pq leaf', 'pq root']);

    const trustFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'trust-')), 'trust.json');
    const base = 'http://service.test';
    const fetchImpl = async (url: string) => {
      const { pathname } = new URL(url);
      if (pathname === '/.well-known/evidence-trust-anchors.json') return a.trust.request(pathname);
      return (await import('../../functions/web/jwks.js')).app.request(pathname);
    };
    await addTrustedService(trustFile, base, fetchImpl);
    const pins = pinnedAnchors(await readTrustFile(trustFile), trustFile);
    assert.ok(pins);
    assert.equal(pins.roots.length, 2, 'the current classic root and the retired one');
    assert.equal(pins.pqRoots.length, 2);
    for (const r of anchored) {
      const receipt = (await (await a.receipt.request(`/api/v2/evidence/receipt/${r.hash}`)).json()) as unknown;
      const report = await verifyReceipt({
        receipt,
        subject: { kind: 'hash', hash: r.hash },
        rootsPem: pins.roots,
        pqRootsPem: pins.pqRoots,
        tsaRetirements: pins.tsaRetirements,
        pqKeyFingerprints: pins.pqFingerprints,
        wallets: pins.wallets,
        ledger: new RpcReader(rpcUrl),
      });
      assert.equal(report.status, 'verified', `${r.name}: ${report.summary}`);
    }
  });

  it('openssl ts -verify accepts every classic token with the root of its time', async () => {
    const a = await apps();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'openssl-rotation-'));
    for (const r of anchored) {
      const receipt = (await (await a.receipt.request(`/api/v2/evidence/receipt/${r.hash}`)).json()) as { timestamp: { token: string; tsa_certificates: string[] } };
      const file = (name: string, content: string | Buffer) => {
        const p = path.join(dir, name);
        writeFileSync(p, content);
        return p;
      };
      const certs = receipt.timestamp.tsa_certificates;
      const out = spawnSync('openssl', ['ts', '-verify', '-data', file('photo', r.photo), '-in', file('token.tsr', Buffer.from(receipt.timestamp.token, 'base64')), '-CAfile', file('root.pem', certs.at(-1) ?? ''), '-untrusted', file('tsa.pem', certs[0] ?? '')], { encoding: 'utf8' });
      assert.equal(out.status, 0, `${r.name}: ${out.stdout}${out.stderr}`);
      assert.match(out.stdout, /Verification: OK/);
    }
  });

  it('eleven years on, with every TSA leaf expired, the verdict still holds as of each genTime and says the certificate has since expired', async () => {
    const elevenYearsOn = new Date(Date.now() + 11 * 366 * 86_400_000);
    for (const r of anchored) {
      const v = await verifyEvidence({ ...getVerifyDeps(), clock: () => elevenYearsOn }, r.hash, { recheck: true });
      assert.equal(v.verdict?.proofs.timestamp.state, 'holds', r.name);
      assert.match(v.verdict?.proofs.timestamp.reason ?? '', /as of its genTime .*has since expired/, r.name);
      assert.match(v.verdict?.proofs.timestamp_pq.reason ?? '', /as of its genTime .*has since expired/, r.name);
    }
  });
});
