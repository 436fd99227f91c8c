import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { getAccountDeps } from '../../lib/deps/accounts.js';
import { useServiceAndBrowser } from '../support/browser.js';

const parts = useServiceAndBrowser();
const PASSWORD = 'correct horse battery staple';

/** A fresh page at /dashboard that records console errors and uncaught exceptions. */
async function openDashboard(width = 390): Promise<{ page: Page; problems: string[] }> {
  const context = await parts.browser.newContext({ viewport: { width, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    // The browser logs every 4xx the page asks for; the page's own handling of them is what is tested.
    if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) problems.push(m.text());
  });
  await page.goto(`${parts.service.url}/dashboard`);
  return { page, problems };
}

async function signUp(page: Page, email: string): Promise<string> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.locator('#new-key-box').waitFor({ timeout: 30_000 });
  const key = (await page.locator('#new-key').textContent()) ?? '';
  await page.locator('#usage-used').filter({ hasText: '/' }).waitFor();
  return key;
}

async function logIn(page: Page, email: string, password = PASSWORD): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

/** The signed-in account's id, as the page's own session sees it (the upgrade is the admin's, not the page's). */
const accountIdOf = (page: Page) =>
  page.evaluate(async () => {
    const res = await fetch('/api/v2/account/info', { headers: { Authorization: `Bearer ${sessionStorage.getItem('eas.dashboard.token')}` } });
    return ((await res.json()) as { account_id: string }).account_id;
  });

const usage = (page: Page) => page.locator('#usage-used').textContent();
const email = () => `dash-${randomBytes(6).toString('hex')}@example.com`;

/** The text of a PDF (poppler's pdftotext, which .ci/run installs). */
async function pdfText(file: string): Promise<string> {
  assert.equal((await readFile(file)).subarray(0, 5).toString('latin1'), '%PDF-');
  return (await promisify(execFile)('pdftotext', [file, '-'])).stdout;
}

async function photo(): Promise<{ file: string; sha256: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'dashboard-'));
  const file = path.join(dir, `photo-${randomBytes(4).toString('hex')}.jpg`);
  const bytes = randomBytes(50_000);
  await writeFile(file, bytes);
  return { file, sha256: createHash('sha256').update(bytes).digest('hex') };
}

describe('/dashboard', () => {
  it('serves one fixed page under a CSP that admits its own script by hash and connections to this origin only', async () => {
    const res = await fetch(`${parts.service.url}/dashboard`);
    assert.equal(res.status, 200);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
    assert.match(csp, /connect-src 'self'/);
    assert.doesNotMatch(csp, /unsafe/);
    const html = await res.text();
    const inline = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1] ?? '');
    assert.equal(inline.length, 1);
    const digest = createHash('sha256').update(inline[0] ?? '', 'utf8').digest('base64');
    assert.ok(csp.includes(`'sha256-${digest}'`), 'the CSP names the hash of the very script the page carries');
    assert.equal(res.headers.get('set-cookie'), null, 'no cookie: the session lives in the tab');
  });

  it('signs up (clear messages for a short password and a taken e-mail), shows the key once, and counts its use', async () => {
    const { page, problems } = await openDashboard();
    const address = email();
    await page.getByLabel('Email').fill(address);
    await page.getByLabel('Password').fill('too short');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByText('The password must have at least 12 characters.').waitFor();

    const key = await signUp(page, address);
    assert.match(key, /^eas_[A-Za-z0-9]+$/);
    assert.equal(await usage(page), '0 / 50');
    assert.equal(await page.locator('#tier').textContent(), 'Free');
    assert.match((await page.locator('#usage-rate').textContent()) ?? '', /^10 requests per minute$/);
    assert.match((await page.locator('#usage-reset').textContent()) ?? '', /^\d{4}-\d{2}-01 00:00:00 UTC$/);
    // The JWT is in sessionStorage, not in a cookie.
    assert.deepEqual(await page.context().cookies(), []);
    assert.match((await page.evaluate(() => sessionStorage.getItem('eas.dashboard.token'))) ?? '', /^[\w-]+\.[\w-]+\.[\w-]+$/);

    // The key works over the API, and the usage moves after a reload.
    const hash = createHash('sha256').update(randomBytes(8)).digest('hex');
    const res = await fetch(`${parts.service.url}/api/v2/evidence/hash`, { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ sha256_hash: hash }) });
    assert.equal(res.status, 200);
    await page.reload();
    await page.locator('#usage-used').filter({ hasText: '1 / 50' }).waitFor();
    // Shown once: after the reload the clear key is nowhere on the page.
    assert.equal(await page.locator('#new-key-box').isVisible(), false);
    assert.equal((await page.content()).includes(key.slice(12)), false);
    // The registered hash is in the recent evidence, with its verify link.
    await page.locator(`#evidence-list a[href="/verify/${hash}"]`).waitFor();

    // The same e-mail again: a clear message.
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByText('You are logged out.').waitFor();
    await page.getByLabel('Email').fill(address);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByText('An account with this e-mail address already exists. Log in instead.').waitFor();
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  it('creates and deactivates keys (with a confirmation; the key stops working at once), logs out and back in, refuses a wrong password', async () => {
    const { page, problems } = await openDashboard(1280);
    const address = email();
    await signUp(page, address);
    await page.getByLabel('Key name (optional)').fill('ci runner');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'Your new key "ci runner"' }).waitFor();
    const second = (await page.locator('#new-key').textContent()) ?? '';
    assert.match(second, /^eas_/);
    await page.getByText('2 of 5 keys active').waitFor();
    const hashWith = (key: string) =>
      fetch(`${parts.service.url}/api/v2/evidence/hash`, {
        method: 'POST',
        headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
        body: JSON.stringify({ sha256_hash: createHash('sha256').update(randomBytes(8)).digest('hex') }),
      });
    assert.equal((await hashWith(second)).status, 200);

    // Cancel first: nothing changes.
    await page.getByRole('button', { name: 'Deactivate key ci runner' }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await hashWith(second)).status, 200);
    await page.getByRole('button', { name: 'Deactivate key ci runner' }).click();
    await page.getByRole('button', { name: 'Yes, deactivate' }).click();
    await page.getByText('Key "ci runner" is deactivated').waitFor();
    assert.equal((await hashWith(second)).status, 401, 'a deactivated key stops working at once');
    await page.getByText('1 of 5 keys active').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Deactivate key ci runner' }).count(), 0);

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByText('You are logged out.').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('eas.dashboard.token')), null);
    await logIn(page, address, 'not the password at all');
    await page.getByText('The e-mail address or the password is wrong.').waitFor();
    await logIn(page, address);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    await page.getByText('1 of 5 keys active').waitFor();
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  it('works from the keyboard alone: Tab between fields, Enter logs in, the confirmation takes the focus', async () => {
    const { page, problems } = await openDashboard();
    const address = email();
    await signUp(page, address);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByText('You are logged out.').waitFor();
    // After logging out the focus is on the e-mail field; Tab reaches the password; Enter submits the default button, "Log in".
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'auth-email');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'auth-password');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    // Logged in: the focus goes to the account's heading once it is loaded.
    await page.waitForFunction(() => document.activeElement?.id === 'account-heading');
    await page.getByLabel('Key name (optional)').focus();
    await page.keyboard.type('keyboard');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Your new key "keyboard"' }).waitFor();
    await page.getByRole('button', { name: 'Deactivate key keyboard' }).focus();
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Yes, deactivate', 'the focus moves to the confirmation');
    await page.keyboard.press('Enter');
    await page.getByText('Key "keyboard" is deactivated').waitFor();
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  it('an expired session asks for the password in place, then finishes what the user was doing', async () => {
    const { page, problems } = await openDashboard();
    const address = email();
    await signUp(page, address);
    await page.getByLabel('Key name (optional)').fill('made after expiry');
    // The session ends under the user's feet (as after an hour): the server refuses the token.
    // (A well-formed JWT whose signature the server does not accept: its exp is still ahead, so only the server's 401 tells.)
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const refused = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ exp: Math.floor(Date.now() / 1000) + 3600 })}.${randomBytes(32).toString('base64url')}`;
    await page.evaluate((token) => sessionStorage.setItem('eas.dashboard.token', token), refused);
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByText('Your session has expired. Log in again to continue where you were.').waitFor();
    assert.equal(await page.getByLabel('Email').inputValue(), address, 'the e-mail address is kept');
    assert.equal(await page.getByLabel('Key name (optional)').inputValue(), 'made after expiry', 'what was typed is kept');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    // The interrupted action runs again after the login.
    await page.getByRole('heading', { name: 'Your new key "made after expiry"' }).waitFor();
    await page.getByText('2 of 5 keys active').waitFor();
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  it('Starter: time-stamps and signs a file in the browser (only the hash is sent), with the PDF certificate', async () => {
    const { page, problems } = await openDashboard();
    const address = email();
    await signUp(page, address);
    assert.equal(await page.getByRole('button', { name: 'Timestamp a file' }).isVisible(), false, 'Free has no file actions');
    await getAccountDeps().accounts.setTier(await accountIdOf(page), 'starter');
    await page.reload();
    const { file, sha256 } = await photo();
    const sent: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST') sent.push(r.postData() ?? '');
    });
    await page.getByLabel('File', { exact: true }).setInputFiles(file);
    await page.getByRole('button', { name: 'Timestamp a file' }).click();
    await page.getByRole('heading', { name: 'Time-stamped' }).waitFor({ timeout: 30_000 });
    await page.getByText(sha256).first().waitFor();
    await page.getByRole('button', { name: 'Sign a file' }).click();
    await page.getByRole('heading', { name: 'Signed' }).waitFor({ timeout: 30_000 });
    // Only the hash went over the wire: each body is a small JSON object naming it.
    assert.ok(sent.length >= 2);
    for (const body of sent) assert.deepEqual(JSON.parse(body), { sha256_hash: sha256 });
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download the PDF certificate' }).click()]);
    assert.match(await pdfText((await download.path()) ?? ''), new RegExp(`SHA-256 fingerprint of the file\\s+${sha256}`), 'the certificate of this file');
    await page.locator('#usage-used').filter({ hasText: '2 / 500' }).waitFor();
    await page.locator(`#evidence-list li`).filter({ hasText: 'timestamped, signed' }).waitFor();
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  it('Pro: anchors files as a phone app would (device key, chain), and the verify page confirms them', async () => {
    const { page, problems } = await openDashboard(1280);
    const address = email();
    await signUp(page, address);
    await getAccountDeps().accounts.setTier(await accountIdOf(page), 'pro');
    await page.reload();
    await page.getByRole('button', { name: 'Anchor a file' }).waitFor();
    const first = await photo();
    await page.getByLabel('File', { exact: true }).setInputFiles(first.file);
    await page.getByRole('button', { name: 'Anchor a file' }).click();
    await page.getByRole('heading', { name: 'Anchored' }).waitFor({ timeout: 60_000 });
    const deviceKey = (await page.locator('#device-key').textContent()) ?? '';
    assert.match(deviceKey, /^[0-9a-f]{64}$/);
    assert.equal(await page.locator('#device-next').textContent(), '1');

    // The second photo continues the chain of the same device key.
    const second = await photo();
    await page.getByLabel('File', { exact: true }).setInputFiles(second.file);
    await page.getByRole('button', { name: 'Anchor a file' }).click();
    await page.locator('#result').getByText(second.sha256).waitFor({ timeout: 60_000 });
    assert.equal(await page.locator('#device-next').textContent(), '2');
    const chain = (await (await fetch(`${parts.service.url}/api/v1/chain/all/${deviceKey}`)).json()) as { entries: { image_hash: string; chain_index: number }[]; integrity: { complete?: boolean; intact?: boolean } };
    assert.deepEqual(
      chain.entries.map((e) => [e.chain_index, e.image_hash]),
      [
        [0, first.sha256],
        [1, second.sha256],
      ],
    );

    // The same photo again: anchored once; the page says so and links to it.
    await page.getByLabel('File', { exact: true }).setInputFiles(second.file);
    await page.getByRole('button', { name: 'Anchor a file' }).click();
    await page.getByText('This file was anchored before').waitFor({ timeout: 30_000 });
    assert.equal(await page.locator('#device-next').textContent(), '2', 'a refused anchor does not move the chain');

    // Another device used the chain meanwhile? Here: the local position is lost (a reinstalled app).
    await page.evaluate(
      () =>
        new Promise<void>((resolve, reject) => {
          const open = indexedDB.open('evidence-dashboard', 1);
          open.onsuccess = () => {
            const tx = open.result.transaction('device', 'readwrite');
            const store = tx.objectStore('device');
            const get = store.get('device');
            get.onsuccess = () => store.put({ ...get.result, next: 0, last: null }, 'device');
            tx.oncomplete = () => resolve();
            tx.onerror = () => reject(tx.error);
          };
        }),
    );
    const third = await photo();
    await page.getByLabel('File', { exact: true }).setInputFiles(third.file);
    await page.getByRole('button', { name: 'Anchor a file' }).click();
    await page.locator('#result').getByText(third.sha256).waitFor({ timeout: 60_000 });
    assert.equal(await page.locator('#device-next').textContent(), '3', 'the 409 chain_index_conflict re-read the chain from the service');

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download the PDF certificate' }).click()]);
    assert.match(await pdfText((await download.path()) ?? ''), new RegExp(`SHA-256 fingerprint of the file\\s+${third.sha256}`));
    await page.locator('#evidence-list li').filter({ hasText: 'anchored' }).nth(2).waitFor();

    await page.getByRole('link', { name: 'Open the verification page' }).click();
    await page.waitForURL(`${parts.service.url}/verify/${third.sha256}`);
    await page.getByRole('heading', { name: /Verified/ }).first().waitFor();
    assert.deepEqual(problems, []);
    await page.context().close();
  });
});
