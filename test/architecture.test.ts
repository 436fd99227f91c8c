/**
 * The layers, as the import statements of lib/ and functions/ draw them (README "Layout"):
 *
 *     functions/<area>/<endpoint>.ts  →  lib/http + lib/deps  →  lib/evidence, lib/accounts  →  lib/crypto, lib/ledger, lib/store, lib/pdf
 *
 * Arrows point down only: the domain never reaches up into HTTP or the composition root (it
 * receives its dependencies as parameters), and an adapter never knows the domain that uses it.
 * Static imports, re-exports and dynamic import() all count; type-only imports too (a type
 * import up the layers is the first step of a real one).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');

const DOMAIN = ['lib/evidence', 'lib/accounts'];
const ADAPTERS = ['lib/crypto', 'lib/ledger', 'lib/store', 'lib/pdf'];
const WIRING_AND_HTTP = ['lib/deps', 'lib/http', 'lib/local', 'lib/cli', 'lib/web', 'functions'];

/** Who may not import what: [importer folders, forbidden target folders, why]. */
const RULES: [string[], string[], string][] = [
  [DOMAIN, WIRING_AND_HTTP, 'the domain receives its dependencies as parameters and throws DomainError, never HTTP errors'],
  [ADAPTERS, [...DOMAIN, ...WIRING_AND_HTTP], 'an adapter takes its clients and config in the constructor and knows no domain'],
  [['lib/http'], ['functions', 'lib/local', 'lib/cli'], 'the HTTP layer serves the functions, not the other way round'],
];

interface Import {
  from: string;
  to: string;
}

const SPECIFIER = /(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The relative imports of one source text, resolved to repository paths (.js → the .ts/.tsx source). */
export function importsOf(file: string, text: string): Import[] {
  const out: Import[] = [];
  // Comments may quote import statements; they are not imports.
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  for (const m of code.matchAll(SPECIFIER)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (!spec?.startsWith('.')) continue;
    const to = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.js$/, '');
    out.push({ from: file, to });
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|tsx|mts|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts'))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/'));
}

const inside = (p: string, folders: string[]) => folders.some((f) => p === f || p.startsWith(`${f}/`));

export function violations(imports: Import[]): string[] {
  const out: string[] = [];
  for (const { from, to } of imports) {
    for (const [importers, forbidden, why] of RULES) {
      if (inside(from, importers) && inside(to, forbidden)) out.push(`${from} imports ${to}: ${why}`);
    }
  }
  return out;
}

const files = [...sourceFiles('lib'), ...sourceFiles('functions')];
const imports = files.flatMap((f) => importsOf(f, readFileSync(path.join(ROOT, f), 'utf8')));

describe('the layers of lib/ and functions/', () => {
  it('finds the import statements it judges (the reader has not rotted)', () => {
    assert.ok(files.length > 100, `${files.length} files`);
    assert.ok(imports.some((i) => i.from === 'functions/v2/evidence-anchor.ts' && i.to === 'lib/http/routes/evidence-anchor'));
    assert.ok(imports.some((i) => i.from === 'lib/evidence/anchor.ts' && i.to.startsWith('lib/')), 'the domain imports something');
    assert.ok(imports.some((i) => i.from === 'lib/deps/pq-key.ts' && i.to === 'lib/deps/anchoring'), 'dynamic import() is read');
  });

  it('flags a domain module that imports HTTP or the composition root, and an adapter that imports the domain', () => {
    const found = violations([
      ...importsOf('lib/accounts/x.ts', "import { notFound } from '../http/errors.js';"),
      ...importsOf('lib/evidence/x.ts', "const { getSigner } = await import('../deps/anchoring.js');"),
      ...importsOf('lib/ledger/x.ts', "import type { AnchorDeps } from '../evidence/anchor.js';"),
      ...importsOf('lib/evidence/y.ts', "// import { getConfig } from '../deps/core.js';\nimport { log } from '../log.js';"),
    ]);
    assert.equal(found.length, 3, found.join('\n'));
  });

  it('has no import that points up the layers', () => {
    assert.deepEqual(violations(imports), []);
  });

  it('keeps the wiring in lib/deps: no domain folder holds a composition module', () => {
    const wiring = files.filter((f) => inside(f, [...DOMAIN, ...ADAPTERS]) && /(^|\/|-)deps\.ts$/.test(f));
    assert.deepEqual(wiring, []);
  });
});
