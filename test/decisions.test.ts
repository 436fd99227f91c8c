/**
 * docs/decisions.md is where the code's decisions are written: every citation
 * `decisions.md "Section"` in the code, the tests and the docs names a section that exists, so a
 * reader following one lands on the decision (and a section renamed without its citations fails).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');
const sections = new Set([...readFileSync(path.join(ROOT, 'docs', 'decisions.md'), 'utf8').matchAll(/^## (.+)$/gm)].map((m) => m[1]?.trim()));

function files(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|tsx|mts|mjs|cjs|md)$/.test(e.name))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
}

describe('docs/decisions.md', () => {
  it('has a section for every citation of it', () => {
    const cited: { file: string; section: string }[] = [];
    for (const file of [...files('lib'), ...files('functions'), ...files('test'), ...files('bench'), ...files('infra'), ...files('docs'), 'README.md']) {
      for (const m of readFileSync(path.join(ROOT, file), 'utf8').matchAll(/(?<![\w-])decisions\.md "([^"]+)"/g)) {
        // A citation may wrap across comment lines: " * " continues it.
        const section = (m[1] ?? '').replace(/\s*\n\s*\*?\s*/g, ' ');
        if (section !== 'Section') cited.push({ file, section });
      }
    }
    assert.ok(cited.length >= 50, `${cited.length} citations found`);
    assert.deepEqual(cited.filter((c) => !sections.has(c.section)), []);
  });

  it('is the only record of the decisions: no copy of the earlier contract, and nothing cites one', () => {
    assert.deepEqual(readdirSync(path.join(ROOT, 'docs')).filter((f) => /contract/i.test(f)), []);
    for (const file of [...files('lib'), ...files('functions'), ...files('bench'), 'README.md']) {
      assert.doesNotMatch(readFileSync(path.join(ROOT, file), 'utf8'), /CONTRACT(\.md)?\b/, file);
    }
  });
});
