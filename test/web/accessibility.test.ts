import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { createAccount, Device } from '../support/client.js';
import { useServiceAndBrowser } from '../support/browser.js';

/**
 * axe-core (the accessibility engine of browser audits) on every page of the service, at a
 * phone's width and a desktop's: no serious or critical violation (WCAG 2.2 A/AA rules and axe's
 * best practices). axe runs through the DevTools protocol, which the pages' CSP does not govern,
 * so the pages are audited exactly as served.
 */
const parts = useServiceAndBrowser();
let axeSource = '';
let anchored = { hash: '', tx: '' };

interface AxeResult {
  violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[];
  passes: unknown[];
}

async function audit(page: Page): Promise<AxeResult> {
  await page.evaluate(axeSource);
  return page.evaluate(() => (window as unknown as { axe: { run(d: Document, o: object): Promise<AxeResult> } }).axe.run(document, { resultTypes: ['violations', 'passes'] }));
}

function serious(result: AxeResult): string[] {
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`);
}

describe('accessibility: axe-core finds no serious violation on any page', () => {
  // Inside the describe: it runs after the stack and the service are up (useServiceAndBrowser).
  before(async () => {
    axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    const account = await createAccount('pro');
    const device = new Device();
    const res = await fetch(`${parts.service.url}/api/v2/evidence/anchor`, {
      method: 'POST',
      headers: { 'X-API-Key': account.apiKey, 'Content-Type': 'application/json' },
      body: JSON.stringify(device.next()),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { image_hash: string; tx_hash: string };
    anchored = { hash: body.image_hash, tx: body.tx_hash };
  });

  const pages: [string, () => string, ((page: Page) => Promise<void>)?][] = [
    ['the landing page', () => '/'],
    ['the dashboard, signed out', () => '/dashboard'],
    [
      'the dashboard, signed in (usage, keys, a new key shown)',
      () => '/dashboard',
      async (page) => {
        await page.getByLabel('Email').fill(`a11y-${Date.now()}-${Math.random().toString(16).slice(2)}@example.com`);
        await page.getByLabel('Password').fill('correct horse battery staple');
        await page.getByRole('button', { name: 'Create account' }).click();
        await page.locator('#new-key-box').waitFor({ timeout: 30_000 });
        await page.locator('#usage-used').filter({ hasText: '/' }).waitFor();
      },
    ],
    ['the verify page of an anchored hash', () => `/verify/${anchored.hash}`],
    ['the verify page of an unknown hash', () => `/verify/${'0'.repeat(64)}`],
    ['the local explorer page of a transaction', () => `/ledger/tx/${anchored.tx}`],
    ['a problem type page', () => '/problems/rate_limit_exceeded'],
    [
      'the API reference',
      () => '/docs',
      async (page) => {
        await page.locator('.opblock').first().waitFor({ timeout: 30_000 });
        // A POST with a body, a GET with a path parameter and a DELETE opened, so that parameters,
        // request bodies, responses, headers and examples are audited too. (All 45 open make a page
        // that takes axe minutes on a loaded machine; these three render every kind of part.)
        for (const id of ['anchorEvidence', 'verifyEvidence', 'deactivateApiKey']) {
          await page.locator(`[id$="-${id}"] .opblock-summary-control`).click();
          await page.locator(`[id$="-${id}"] .opblock-body`).waitFor();
        }
      },
    ],
  ];
  for (const width of [390, 1280]) {
    for (const [name, path, prepare] of pages) {
      it(`${name} at ${width} px`, async () => {
        const page = await parts.browser.newPage({ viewport: { width, height: 900 } });
        await page.goto(`${parts.service.url}${path()}`);
        await page.waitForLoadState('load');
        if (prepare) await prepare(page);
        const result = await audit(page);
        assert.ok(result.passes.length > 10, 'axe ran its rules on the page');
        assert.deepEqual(serious(result), []);
        await page.close();
      });
    }
  }
});
