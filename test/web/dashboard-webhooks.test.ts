/**
 * The dashboard's Webhooks panel in headless Chromium, on the real service over HTTP and real
 * receivers that verify with the `standardwebhooks` package (test/webhooks/support.ts): add an
 * endpoint (the secret shown once), see its deliveries and their attempts, send one again, see a
 * 410 disable another endpoint, delete one. The delivery worker and the change feed are driven by
 * the test (as `npm start` drives them every second). Saves screenshots to test-results/.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import type { Config } from '../../lib/config.js';
import { getConfig } from '../../lib/deps/core.js';
import { createWebhookDispatcher } from '../../lib/deps/webhooks.js';
import { useServiceAndBrowser } from '../support/browser.js';
import { drainChangeFeed } from '../support/change-feed.js';
import { createAccount, Device } from '../support/client.js';
import { waitFor } from '../support/wait.js';
import { Receiver } from '../webhooks/support.js';

const parts = useServiceAndBrowser();
const RESULTS = path.resolve(import.meta.dirname, '..', '..', 'test-results');
const receivers: Receiver[] = [];
after(() => Promise.all(receivers.map((r) => r.stop())));

/** A page at /dashboard, signed in as `account` (its session as the page keeps it), recording page errors. */
async function openSignedIn(account: { token: string; email: string; apiKey: string }, width: number): Promise<{ page: Page; problems: string[] }> {
  const context = await parts.browser.newContext({ viewport: { width, height: 900 } });
  await context.addInitScript((a) => {
    sessionStorage.setItem('eas.dashboard.token', a.token);
    sessionStorage.setItem('eas.dashboard.email', a.email);
    sessionStorage.setItem('eas.dashboard.apiKey', a.apiKey);
  }, account);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) problems.push(m.text());
  });
  await page.goto(`${parts.service.url}/dashboard`);
  await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
  return { page, problems };
}

async function anchor(apiKey: string): Promise<string> {
  const body = new Device().next();
  const res = await fetch(`${parts.service.url}/api/v2/evidence/anchor`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });
  assert.equal(res.status, 200, await res.clone().text());
  return body.sha256_hash;
}

/** Adds an endpoint through the form; returns the secret the page shows once. */
async function addEndpoint(page: Page, url: string, events: ('anchored' | 'final' | 'record')[]): Promise<string> {
  await page.getByLabel('Endpoint URL').fill(url);
  for (const type of ['anchored', 'final', 'record'] as const) await page.locator(`#webhook-event-${type}`).setChecked(events.includes(type));
  await page.getByRole('button', { name: 'Add endpoint' }).click();
  await page.getByRole('heading', { name: `The signing secret of ${url}` }).waitFor();
  return (await page.locator('#new-webhook-secret').textContent()) ?? '';
}

describe('/dashboard webhooks', () => {
  it('adds endpoints (secret shown once), lists deliveries with their attempts, sends one again, shows a 410 disabling, deletes', async () => {
    const account = await createAccount('pro');
    const { page, problems } = await openSignedIn(account, 1280);
    await page.getByText('No endpoints yet.').waitFor();

    // Bad input: the service's problem is shown, nothing is made.
    await page.getByLabel('Endpoint URL').fill('http://169.254.169.254/latest/meta-data');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.locator('#webhooks-message').filter({ hasText: /link-local/ }).waitFor();

    // A receiver that fails the first attempt of evidence.anchored and accepts the rest (evidence.final
    // may come first: the local ledger confirms at once); another that answers 410 Gone.
    let anchoredSeen = 0;
    const flaky: Receiver = new Receiver((_n, r) => (r.payload?.type === 'evidence.anchored' && ++anchoredSeen === 1 ? 500 : 200));
    const gone = new Receiver(() => 410);
    receivers.push(flaky, gone);
    const flakyUrl = await flaky.start();
    const goneUrl = (await gone.start()).replace('/hook', '/gone');
    flaky.secret = await addEndpoint(page, flakyUrl, ['anchored', 'final', 'record']);
    assert.match(flaky.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    gone.secret = await addEndpoint(page, goneUrl, ['anchored']);
    const rowOf = (url: string) => page.locator('#webhooks-body tr').filter({ hasText: url });
    await rowOf(flakyUrl).locator('td[data-label="Events"]').filter({ hasText: 'evidence.anchoredevidence.finalevidence.record' }).waitFor();
    await rowOf(goneUrl).getByText('active').waitFor();

    // One anchor; the worker (a retry 10 minutes out, so only "Send again" sends it sooner) makes its first attempts.
    const config: Config = { ...getConfig(), webhooks: { ...getConfig().webhooks, retryScheduleSeconds: [600] } };
    const worker = createWebhookDispatcher({ config });
    const work = async () => {
      await drainChangeFeed();
      await worker.tick();
      await worker.idle();
    };
    const hash = await anchor(account.apiKey);
    const anchoredAt = (r: Receiver) => r.received.filter((x) => x.payload?.type === 'evidence.anchored');
    await waitFor('the first attempts', 60_000, async () => (await work(), anchoredAt(flaky).length >= 1 && gone.received.length >= 1) || undefined, 150);
    assert.equal(anchoredAt(flaky)[0]?.verified, true);
    assert.equal(anchoredAt(flaky)[0]?.payload?.data.image_hash, hash);

    // The 410 disabled its endpoint: the list says so, and why.
    await page.getByRole('button', { name: 'Refresh', exact: true }).click();
    await rowOf(goneUrl).getByText(/^disabled \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: it answered 410 Gone$/).waitFor();

    // The flaky endpoint's deliveries: the event, its attempt (time and 500), the next attempt.
    await page.getByRole('button', { name: `Deliveries to ${flakyUrl}` }).click();
    await page.getByRole('heading', { name: `Deliveries to ${flakyUrl}` }).waitFor();
    const delivery = page.locator('#deliveries-body tr').filter({ hasText: 'evidence.anchored' });
    await delivery.getByText(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC — 500$/).waitFor();
    await delivery.getByText('pending').waitFor();
    assert.match((await delivery.locator('td[data-label="Next attempt"]').textContent()) ?? '', /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'deliveries-heading', 'the focus moves to the deliveries');

    // Send it again now: the worker sends it at once, with the same webhook-id; the list shows the 200.
    await delivery.getByRole('button', { name: /^Send evidence\.anchored msg_[0-9a-f]{32} again$/ }).click();
    await page.getByText(/^Sent again: evidence\.anchored msg_[0-9a-f]{32} is due now/).waitFor();
    await waitFor('the second attempt', 60_000, async () => (await work(), anchoredAt(flaky).length >= 2) || undefined, 150);
    assert.equal(anchoredAt(flaky)[1]?.verified, true);
    assert.equal(anchoredAt(flaky)[1]?.headers['webhook-id'], anchoredAt(flaky)[0]?.headers['webhook-id']);
    await page.getByRole('button', { name: 'Refresh deliveries' }).click();
    await delivery.getByText('delivered').waitFor();
    await delivery.getByText(/ — 200$/).waitFor();
    assert.equal(await delivery.locator('td[data-label="Next attempt"]').textContent(), '—');

    // A disabled endpoint's deliveries can be read, not sent again.
    await page.getByRole('button', { name: `Deliveries to ${goneUrl}` }).click();
    await page.getByRole('heading', { name: `Deliveries to ${goneUrl}` }).waitFor();
    await page.locator('#deliveries-body tr').getByText(/^failed: the endpoint answered 410 Gone/).waitFor();
    assert.equal(await page.locator('#deliveries-body button').count(), 0);
    await page.getByRole('button', { name: `Deliveries to ${flakyUrl}` }).click();
    await delivery.getByText('delivered').waitFor();

    mkdirSync(RESULTS, { recursive: true });
    await page.screenshot({ path: path.join(RESULTS, 'dashboard-webhooks.png'), fullPage: true });

    // Delete, with a confirmation (Cancel first changes nothing).
    await page.getByRole('button', { name: `Delete endpoint ${goneUrl}` }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    await rowOf(goneUrl).waitFor();
    await page.getByRole('button', { name: `Delete endpoint ${goneUrl}` }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByText(`The endpoint ${goneUrl} is deleted.`).waitFor();
    await page.waitForFunction(() => document.querySelectorAll('#webhooks-body tr').length === 1);
    const listed = (await (await fetch(`${parts.service.url}/api/v2/account/webhooks`, { headers: { authorization: `Bearer ${account.token}` } })).json()) as { webhooks: { url: string }[] };
    assert.deepEqual(
      listed.webhooks.map((e) => e.url),
      [flakyUrl],
    );

    // Shown once: after a reload the secret is nowhere on the page.
    await page.reload();
    await rowOf(flakyUrl).waitFor();
    assert.equal(await page.locator('#new-webhook-box').isVisible(), false);
    assert.equal((await page.content()).includes(flaky.secret.slice(6)), false);
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  it('fits a phone screen: the endpoints and deliveries as cards, no sideways scrolling (screenshot saved)', async () => {
    const account = await createAccount('pro');
    const { page, problems } = await openSignedIn(account, 390);
    const r = new Receiver();
    receivers.push(r);
    const url = await r.start();
    r.secret = await addEndpoint(page, url, ['anchored']);
    const worker = createWebhookDispatcher({ config: getConfig() });
    await anchor(account.apiKey);
    await waitFor('the delivery', 60_000, async () => (await drainChangeFeed(), await worker.tick(), await worker.idle(), r.received.length >= 1) || undefined, 150);
    await page.getByRole('button', { name: `Deliveries to ${url}` }).click();
    await page.locator('#deliveries-body').getByText('delivered').waitFor();
    const widths = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
    assert.ok(widths.scroll <= widths.client, `page is ${widths.scroll}px wide on a ${widths.client}px screen`);
    mkdirSync(RESULTS, { recursive: true });
    await page.locator('#webhooks-heading').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(RESULTS, 'dashboard-webhooks-phone.png'), fullPage: true });
    assert.deepEqual(problems, []);
    await page.context().close();
  });
});
