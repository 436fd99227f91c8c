import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { useServiceAndBrowser } from '../support/browser.js';

const parts = useServiceAndBrowser();

describe('/docs, the API reference', () => {
  it('loads only same-origin files: no inline script, no third-party origin in the CSP', async () => {
    const res = await fetch(`${parts.service.url}/docs`);
    assert.equal(res.status, 200);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /https?:|unsafe-eval|script-src[^;]*unsafe-inline/);
    const html = await res.text();
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.ok(scripts.length >= 2);
    for (const [, attrs, body] of scripts) {
      assert.match(attrs ?? '', /src="\/docs\//);
      assert.equal(body, '', 'no inline script');
    }
    const bundle = await fetch(`${parts.service.url}/docs/swagger-ui-bundle.js`);
    assert.equal(bundle.status, 200);
    assert.match(bundle.headers.get('content-type') ?? '', /^text\/javascript/);
    const packaged = readFileSync(createRequire(import.meta.url).resolve('swagger-ui-dist/swagger-ui-bundle.js'), 'utf8');
    assert.equal((await bundle.text()).length, packaged.length, 'the package’s own file');
    assert.equal((await fetch(`${parts.service.url}/docs/../../etc/passwd`)).status, 404);
    assert.equal((await fetch(`${parts.service.url}/docs/index.html`)).status, 404);
  });

  it('renders every operation of the served document in a real browser, with no CSP violation and no script error', async () => {
    const doc = (await (await fetch(`${parts.service.url}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    const page = await parts.browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${parts.service.url}/docs`);
    await page.waitForFunction((n) => document.querySelectorAll('.opblock').length === n, operations, { timeout: 60_000 });
    assert.deepEqual(problems, []);
    await page.close();
  });
});
