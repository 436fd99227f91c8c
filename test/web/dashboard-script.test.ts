/**
 * lib/web/dashboard-script.ts is generated from the browser app (lib/web/dashboard/app.ts) by
 * `npm run build:dashboard` and committed: it must be exactly what the source builds to now, and
 * a script the page can inline as it is (test/web/dashboard.test.ts runs it in a browser), and
 * the page shell must have every element the app looks up by id.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Script } from 'node:vm';
import { describe, it } from 'node:test';
import { jsx } from 'hono/jsx';
import { DASHBOARD_MODULE, buildDashboardScript, dashboardModule } from '../../infra/dashboard-script.js';
import { DASHBOARD_SCRIPT } from '../../lib/web/dashboard-script.js';
import { DashboardPage } from '../../lib/web/dashboard-view.js';
import { renderPage } from '../../lib/web/layout.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

describe('the dashboard script (generated from lib/web/dashboard/app.ts)', () => {
  it('is committed as the browser app builds to now', async () => {
    const built = await buildDashboardScript();
    const committed = await readFile(path.join(ROOT, DASHBOARD_MODULE), 'utf8');
    assert.ok(committed === dashboardModule(built), `${DASHBOARD_MODULE} is not what lib/web/dashboard/ builds to: run \`npm run build:dashboard\` and commit it`);
    // The module's string (through the template literal's escapes) is the bundle, character for character.
    assert.equal(DASHBOARD_SCRIPT, built);
  });

  it('is one classic script, strict, that an inline <script> element carries unchanged', () => {
    assert.doesNotThrow(() => new Script(DASHBOARD_SCRIPT, { filename: 'dashboard.js' }), 'no import or export: it runs as a classic script');
    assert.match(DASHBOARD_SCRIPT, /^\s*"use strict";\s*\(\(\) => \{/);
    // The HTML tokenizer would end the element early (or enter escaped mode) at these.
    assert.doesNotMatch(DASHBOARD_SCRIPT, /<\/script|<!--/i);
  });

  it('finds every element it looks up by id in the page shell (lib/web/dashboard-view.tsx)', async () => {
    const html = await renderPage(jsx(DashboardPage, {}));
    const ids = new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]));
    const dir = path.join(ROOT, 'lib/web/dashboard');
    const modules = (await readdir(dir)).filter((f) => f.endsWith('.ts'));
    const source = (await Promise.all(modules.map((f) => readFile(path.join(dir, f), 'utf8')))).join('\n');
    // $('id'), $('id', Type), input('id'), button('id'), say('id', …) and getElementById('id'); the
    // three file buttons are named `${kind}-button`.
    const used = [...source.matchAll(/(?<![\w$.])(?:\$|input|button|say|document\.getElementById)\('([a-z][\w-]*)'/g)].map((m) => m[1] ?? '');
    used.push(...['timestamp', 'sign', 'anchor'].map((kind) => `${kind}-button`));
    assert.ok(used.length > 40, `found only ${used.length} lookups: update the pattern`);
    // result-heading is the app's own (the result it renders); every other id is the shell's.
    const missing = [...new Set(used)].filter((id) => !ids.has(id) && id !== 'result-heading');
    assert.deepEqual(missing, [], 'ids the app looks up that the page shell lacks');
  });
});
