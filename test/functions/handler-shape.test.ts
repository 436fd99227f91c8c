/**
 * The one handler shape (lib/http/app.ts, at the top): every HTTP function of infra/functions.json
 * is one module-level app, its dependencies come through middleware (`createApp({ deps })` →
 * `c.var.deps`), its middleware is in its route, and the caller is `c.var.caller`. Read from the
 * sources, so that a second shape cannot creep back in.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import registry from '../../infra/functions.json' with { type: 'json' };

const ROOT = path.resolve(import.meta.dirname, '../..');
const modules = [...registry.http, ...registry.gateway].map((f) => f.file);
const source = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** The names a module imports from lib/deps. */
function depsImports(text: string): string[] {
  const names: string[] = [];
  for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*'[./]*lib\/deps\/[\w-]+\.js'/g)) {
    for (const part of (m[1] ?? '').split(',')) {
      const name = part.trim().replace(/^type\s+/, '').split(/\s+as\s+/).pop();
      if (name) names.push(name);
    }
  }
  return names;
}

describe('the one handler shape', () => {
  it('reads every HTTP function of the registry', () => {
    assert.ok(modules.length >= 40, `${modules.length} modules`);
  });

  it('builds one app per module, at module level, and exports it with its Lambda handler', () => {
    for (const file of modules) {
      const text = source(file);
      assert.equal(text.match(/\bcreateApp\(/g)?.length, 1, `${file}: one createApp()`);
      assert.match(text, /^export const app = createApp\(/m, `${file}: export const app = createApp(…)`);
      assert.match(text, /^export const handler = handle\(app\);$/m, `${file}: export const handler = handle(app)`);
      assert.doesNotMatch(text, /export function create\w*App\b/, `${file}: no app factory`);
    }
  });

  it('takes dependencies from c.var.deps: after the app is built, no lib/deps getter is called', () => {
    let named = 0;
    for (const file of modules) {
      const text = source(file);
      const start = text.search(/^export const app = createApp\(/m);
      const body = text.slice(text.indexOf('\n', start));
      for (const name of depsImports(text)) {
        if (/^[A-Z_]+$/.test(name)) continue; // a constant (TRUST_ANCHORS_PATH), not a dependency
        named++;
        assert.doesNotMatch(body, new RegExp(`(?<![\\w.])${name}\\b`), `${file}: ${name} is used by a handler; name it in createApp({ deps }) and call c.var.deps`);
      }
    }
    assert.ok(named > 30, `${named} dependencies named`);
  });

  it('puts every middleware in the route, and gets the caller one way', () => {
    for (const file of modules) {
      const text = source(file);
      assert.doesNotMatch(text, /\bapp\.use\(/, `${file}: middleware belongs in the route's middleware`);
      assert.doesNotMatch(text, /c\.get\('(accountId|tier|keyId)'\)|apiKeyCaller/, `${file}: the caller is c.var.caller`);
    }
  });
});
