import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getConfig } from '../../lib/deps/core.js';
import { useServiceAndBrowser } from '../support/browser.js';

const parts = useServiceAndBrowser();

describe('/, the landing page', () => {
  it('says what the service does and shows the tiers with the limits in force, under the hash-only CSP', async () => {
    const res = await fetch(`${parts.service.url}/`);
    assert.equal(res.status, 200);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'sha256-[^']+'(;|$)/);
    const html = await res.text();
    for (const text of ['ML-DSA-65', 'RFC 3161', 'only that hash', 'without trusting us', 'href="/docs"', 'href="/dashboard"', 'href="/api/openapi.json"']) assert.ok(html.includes(text), text);
    const { tiers } = getConfig();
    for (const [name, limits] of Object.entries(tiers)) {
      const row = new RegExp(`<th scope="row">${name[0]?.toUpperCase()}${name.slice(1)}</th><td>${limits.monthly_quota.toLocaleString('en-US')}</td><td>${limits.rate_per_minute.toLocaleString('en-US')}</td>`);
      assert.match(html, row, name);
    }
  });

  it('opens the verify page of a pasted hash, refuses a malformed one with a message, and runs with no console error', async () => {
    const page = await parts.browser.newPage({ viewport: { width: 390, height: 844 } });
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    await page.goto(`${parts.service.url}/`);
    await page.getByLabel('SHA-256 hash').fill('not a hash');
    await page.getByRole('button', { name: 'Check hash' }).click();
    await page.getByText('A SHA-256 hash is 64 hexadecimal characters').waitFor();
    const hash = 'AB'.repeat(32);
    await page.getByLabel('SHA-256 hash').fill(hash);
    await page.getByRole('button', { name: 'Check hash' }).click();
    await page.waitForURL(`${parts.service.url}/verify/${hash.toLowerCase()}`);
    // An unknown hash: the verify page's 404 answers for itself; what matters here is where we landed.
    assert.equal(new URL(page.url()).pathname, `/verify/${hash.toLowerCase()}`);
    assert.deepEqual(problems.filter((p) => !/404/.test(p)), []);
    await page.close();
  });
});
