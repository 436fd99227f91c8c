/**
 * Every script the template, the README and the docs tell someone to run exists (issue 26: the
 * template pointed to `npm run edge-waf`, which never existed; docs/decisions.md "Deploying"):
 * each `npm run <name>` is a script of package.json, and each file given to `tsx` or `node` is in
 * the repository. The scan is checked against a reference that does not exist.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');
const scripts = new Set(Object.keys((JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts));

/** The texts that name commands: the README, docs/, serverless.yml, infra/ and .ci/run. */
function sources(): { file: string; text: string }[] {
  const files = ['README.md', 'serverless.yml', '.ci/run', 'BENCHMARKS.md'];
  for (const dir of ['docs', 'infra']) {
    for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) if (e.isFile() && /\.(md|cjs|ts|yml|json)$/.test(e.name)) files.push(path.join(dir, e.name));
  }
  return files.filter((f) => existsSync(path.join(ROOT, f))).map((file) => ({ file, text: readFileSync(path.join(ROOT, file), 'utf8') }));
}

/** `npm run <name>` and `npx tsx|tsx|node [--import tsx] <file>` references in a text. */
export function namedCommands(text: string): { scripts: string[]; files: string[] } {
  return {
    scripts: [...text.matchAll(/\bnpm run ([a-z][\w:-]*)/g)].map((m) => m[1]!),
    files: [...text.matchAll(/\b(?:npx )?(?:tsx|node(?: --import tsx)?) ((?:lib|infra|test|bench|bin|functions)\/[\w./-]+\.(?:ts|mjs|cjs|js))/g)].map((m) => m[1]!),
  };
}

describe('every script the README, the docs and the template name exists', () => {
  it('the scan finds what it looks for (a missing script is caught)', () => {
    const found = namedCommands('run `npm run no-such-script` then `npx tsx infra/nowhere.ts` and `npm run check:template`');
    assert.deepEqual(found.scripts, ['no-such-script', 'check:template']);
    assert.deepEqual(found.files, ['infra/nowhere.ts']);
    assert.equal(scripts.has('no-such-script'), false);
  });

  for (const { file, text } of sources()) {
    it(file, () => {
      const { scripts: named, files } = namedCommands(text);
      assert.deepEqual(named.filter((s) => !scripts.has(s)), [], `${file} names npm scripts that package.json does not have`);
      assert.deepEqual(files.filter((f) => !existsSync(path.join(ROOT, f))), [], `${file} runs files that do not exist`);
    });
  }

  it('names at least the deploy path (package, check:template, deploy)', () => {
    const all = sources().flatMap(({ text }) => namedCommands(text).scripts);
    for (const s of ['package', 'check:template', 'deploy']) assert.ok(all.includes(s), s);
  });
});
