import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../support/browser.js';
import { useStack } from '../support/stack.js';
import { createAccount, Device, randomHash } from '../support/client.js';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { getConfig, getDb, resetCoreDeps } from '../../lib/deps/core.js';
import { type HttpService, startHttpService } from '../support/http-server.js';

const SCREENSHOT = path.resolve(import.meta.dirname, '..', '..', 'test-results', 'verify-page.png');

let service: HttpService;
let browser: Browser;
let photo: Buffer;
let imageHash: string;
let anchored: { tx_hash: string; ledgerscan_url: string };
let publicKeyHex: string;
let apiKey: string;

before(async () => {
  await useStack();
  service = await startHttpService();
  const account = await createAccount('pro');
  apiKey = account.apiKey;
  photo = Buffer.from(`JPEG bytes of a photo ${randomHash()}`);
  imageHash = sha256Hex(photo);
  const device = new Device();
  publicKeyHex = device.publicKeyHex;
  const res = await fetch(`${service.url}/api/v2/evidence/anchor`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey },
    body: JSON.stringify(device.next(imageHash)),
  });
  assert.equal(res.status, 200, await res.clone().text());
  anchored = (await res.json()) as typeof anchored;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await service?.close();
});

/** A page that records console errors and CSP violations, which every test asserts are absent. */
async function openPage(options: Parameters<Browser['newContext']>[0] = {}): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    // The favicon request of a 404 page is not ours to judge; everything else is.
    if (m.type() === 'error' && !/status of 404|status of 400/.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  return { page, problems };
}

const text = async (page: Page, selector: string) => (await page.innerText(selector)).replace(/\s+/g, ' ').trim();

describe('GET /verify/{image_hash} in headless Chromium', () => {
  it('shows the verdict and each proof of an anchored hash, under a strict CSP', async () => {
    const { page, problems } = await openPage();
    const res = await page.goto(`${service.url}/verify/${imageHash}`);
    assert.equal(res?.status(), 200);
    const csp = (await res?.allHeaders())?.['content-security-policy'] ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);

    assert.match(await text(page, 'h1'), /^✓ Verified$/);
    assert.equal(await text(page, '#image-hash'), imageHash);
    const pq = await text(page, '#proof-pq');
    assert.match(pq, /ML-DSA-65 valid/);
    const ts = await text(page, '#proof-timestamp');
    assert.match(ts, /RFC 3161 valid/);
    assert.match(ts, /Time \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC/);
    assert.match(ts, /Authority Evidence Anchoring TSA/);
    const ledger = await text(page, '#proof-ledger');
    assert.match(ledger, /Confirmed, \d+ confirmations?/);
    assert.ok(ledger.includes(anchored.tx_hash));
    assert.equal(await page.getAttribute('#explorer-link', 'href'), anchored.ledgerscan_url);
    const device = await text(page, '#proof-device');
    assert.match(device, /Ed25519 valid/);
    assert.ok(device.includes(publicKeyHex));
    assert.match(device, /Chain position link 0/);
    assert.deepEqual(problems, []);
  });

  it('links the explorer to the ledger transaction page, which shows the transaction and links back', async () => {
    const { page, problems } = await openPage();
    await page.goto(`${service.url}/verify/${imageHash}`);
    await Promise.all([page.waitForURL(`${service.url}/ledger/tx/${anchored.tx_hash}`), page.click('#explorer-link')]);
    assert.equal(await text(page, '#tx-hash'), anchored.tx_hash);
    assert.equal(await text(page, '#decoded-image-hash'), imageHash);
    assert.match(await text(page, 'body'), /Confirmed/);
    assert.match(await text(page, 'body'), /Confirmations \d+/);
    await Promise.all([page.waitForURL(`${service.url}/verify/${imageHash}`), page.click('#verify-link')]);
    assert.match(await text(page, 'h1'), /Verified/);
    const receipt = await page.request.get(new URL((await page.getAttribute('#receipt-link', 'href')) ?? '', page.url()).href);
    assert.equal(receipt.status(), 200);
    assert.equal(((await receipt.json()) as { image_hash: string }).image_hash, imageHash);
    assert.deepEqual(problems, []);
  });

  it('hashes a chosen file in the browser, never uploads it, and opens its verify page', async () => {
    const { page, problems } = await openPage();
    const sent: string[] = [];
    page.on('request', (r) => {
      if (r.method() !== 'GET' || r.postData()) sent.push(`${r.method()} ${r.url()}`);
    });
    await page.goto(`${service.url}/verify/${randomHash()}`);
    await Promise.all([
      page.waitForURL(`${service.url}/verify/${imageHash}`),
      page.setInputFiles('#check-file-input', { name: 'photo.jpg', mimeType: 'image/jpeg', buffer: photo }),
    ]);
    assert.match(await text(page, 'h1'), /Verified/);
    assert.deepEqual(sent, []);
    assert.deepEqual(problems, []);
  });

  it('hashes a dropped file and lands on its page, which says nothing is anchored for it', async () => {
    const { page, problems } = await openPage();
    await page.goto(`${service.url}/verify/${imageHash}`);
    const other = `never anchored ${randomHash()}`;
    const dataTransfer = await page.evaluateHandle((content) => {
      const dt = new DataTransfer();
      dt.items.add(new File([content], 'other.jpg', { type: 'image/jpeg' }));
      return dt;
    }, other);
    const landed = page.waitForURL(`${service.url}/verify/${sha256Hex(other)}`);
    await page.dispatchEvent('#check-file', 'dragenter', { dataTransfer });
    await page.dispatchEvent('#check-file', 'drop', { dataTransfer });
    await landed;
    assert.match(await text(page, 'h1'), /Nothing is anchored for this hash/);
    assert.equal(await text(page, '#image-hash'), sha256Hex(other));
    assert.deepEqual(problems, []);
  });

  it('answers an unknown hash with a 404 page and a malformed one with a 400 page', async () => {
    const { page } = await openPage();
    const unknown = await page.goto(`${service.url}/verify/${randomHash()}`);
    assert.equal(unknown?.status(), 404);
    assert.match((await unknown?.headerValue('content-type')) ?? '', /^text\/html/);
    assert.match(await text(page, 'h1'), /Nothing is anchored for this hash/);
    const bad = await page.goto(`${service.url}/verify/not-a-hash`);
    assert.equal(bad?.status(), 400);
    assert.match((await bad?.headerValue('content-type')) ?? '', /^text\/html/);
    assert.match(await text(page, 'h1'), /That is not a SHA-256 hash/);
  });

  it('is readable without JavaScript', async () => {
    const { page } = await openPage({ javaScriptEnabled: false });
    await page.goto(`${service.url}/verify/${imageHash}`);
    assert.match(await text(page, 'h1'), /Verified/);
    assert.match(await text(page, '#proof-ledger'), /Confirmed/);
  });

  it('fits a phone screen without sideways scrolling and is usable from the keyboard (screenshot saved)', async () => {
    const { page, problems } = await openPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    await page.goto(`${service.url}/verify/${imageHash}`);
    const widths = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
    assert.ok(widths.scroll <= widths.client, `page is ${widths.scroll}px wide on a ${widths.client}px screen`);

    const reached: string[] = [];
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      const focus = await page.evaluate(() => {
        const el = document.activeElement as HTMLElement | null;
        return el ? { id: el.id, outline: getComputedStyle(el).outlineStyle } : null;
      });
      if (focus?.id) {
        reached.push(focus.id);
        assert.notEqual(focus.outline, 'none', `#${focus.id} shows no focus outline`);
      }
    }
    assert.ok(reached.includes('explorer-link'), `focus order: ${reached.join(', ')}`);
    assert.ok(reached.includes('check-file-input'), `focus order: ${reached.join(', ')}`);
    assert.equal(await page.getAttribute('label[for="check-file-input"]', 'for'), 'check-file-input');

    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    assert.ok(existsSync(SCREENSHOT));
    assert.deepEqual(problems, []);
  });
});

describe('GET /ledger/tx/{tx_hash}', () => {
  it('answers JSON with the decoded input data when asked for JSON', async () => {
    const res = await fetch(`${service.url}/ledger/tx/${anchored.tx_hash.toUpperCase().replace('0X', '0x')}`, { headers: { accept: 'application/json' } });
    assert.equal(res.status, 200);
    const tx = (await res.json()) as Record<string, unknown> & { decoded: Record<string, unknown> };
    assert.equal(tx.tx_hash, anchored.tx_hash);
    assert.equal(tx.status, 'confirmed');
    assert.ok((tx.confirmations as number) >= 1);
    assert.equal(tx.decoded.kind, 'anchor');
    assert.equal(tx.decoded.image_hash, imageHash);
    assert.match(String(tx.from), /^0x[0-9a-f]{40}$/);
  });

  it('answers 404 for a transaction the chain does not have and 400 for a malformed hash, as JSON or HTML', async () => {
    const missing = await fetch(`${service.url}/ledger/tx/0x${randomHash()}`, { headers: { accept: 'application/json' } });
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { code: string }).code, 'tx_not_found');
    const bad = await fetch(`${service.url}/ledger/tx/0x1234`, { headers: { accept: 'text/html' } });
    assert.equal(bad.status, 400);
    assert.match(bad.headers.get('content-type') ?? '', /^text\/html/);
    assert.ok(bad.headers.get('content-security-policy'));
  });

  it('gives no verdict when the chain node cannot be read: a 503 page with Retry-After on both pages', async () => {
    // A record confirmed but not final yet (under the `finalized` rule, Polygon, for a while after
    // its receipt): its page asks the chain. The local chain's rule made it final in its anchor's
    // write, which is taken back here.
    const body = new Device().next();
    const res = await fetch(`${service.url}/api/v2/evidence/anchor`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });
    assert.equal(res.status, 200, await res.clone().text());
    await getDb().send(new UpdateCommand({ TableName: getConfig().tables.evidence, Key: { image_hash: body.sha256_hash }, UpdateExpression: 'REMOVE ledger_final' }));
    const rpcUrl = process.env.LEDGER_RPC_URL;
    process.env.LEDGER_RPC_URL = 'http://127.0.0.1:9';
    resetCoreDeps();
    try {
      // A final record is served from its stored receipt: no chain read, a verdict.
      const final = await fetch(`${service.url}/verify/${imageHash}`);
      assert.equal(final.status, 200);
      assert.match(await final.text(), /data-status="verified"/);
      const page = await fetch(`${service.url}/verify/${body.sha256_hash}`);
      assert.equal(page.status, 503);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(page.headers.get('retry-after'), '5');
      assert.match(await page.text(), /The ledger cannot be read right now/);
      const tx = await fetch(`${service.url}/ledger/tx/${anchored.tx_hash}`, { headers: { accept: 'application/json' } });
      assert.equal(tx.status, 503);
      assert.equal(((await tx.json()) as { code: string }).code, 'ledger_unavailable');
    } finally {
      process.env.LEDGER_RPC_URL = rpcUrl;
      resetCoreDeps();
    }
  });
});
