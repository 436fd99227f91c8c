/**
 * The documents hold together (issue 35): every relative link of README.md, BENCHMARKS.md and
 * docs/*.md leads to a file of the repository and, with an #anchor, to a heading of that file (as
 * GitHub makes anchors); docs/README.md links every document in docs/ and BENCHMARKS.md; the
 * README stays a path of at most 20,000 bytes. The checks are checked against links that break.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');
const DOCS = ['README.md', 'BENCHMARKS.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The source and document files under `dir`. */
function files(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|mts|mjs|cjs|md|json)$/.test(e.name) && !e.parentPath.includes('node_modules'))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
}

/** Markdown text without its fenced blocks (a line in an example is no heading). */
function unfenced(text: string): string {
  return text.replace(/^```[\s\S]*?^```$/gm, '');
}

/** Markdown text without its fenced blocks and inline code (a link in an example is not a link). */
function prose(text: string): string {
  return unfenced(text).replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped (but - and _), spaces to -; repeats get -1, -2, … */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of unfenced(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = (m[1] ?? '')
      .trim()
      .replace(/`/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The relative links of a markdown text: [text](target) whose target is no URL. */
export function relativeLinks(text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? '').filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

/** The links of `file` that lead nowhere, as "target (why)". */
function broken(file: string, text = readFileSync(path.join(ROOT, file), 'utf8')): string[] {
  const bad: string[] = [];
  for (const link of relativeLinks(text)) {
    const [target = '', anchor] = link.split('#');
    const resolved = target === '' ? path.join(ROOT, file) : path.resolve(path.dirname(path.join(ROOT, file)), decodeURIComponent(target));
    if (!resolved.startsWith(ROOT + path.sep) || !existsSync(resolved)) {
      bad.push(`${link} (no such file)`);
      continue;
    }
    if (anchor !== undefined && !(statSync(resolved).isFile() && anchors(readFileSync(resolved, 'utf8')).has(anchor))) bad.push(`${link} (no such heading)`);
  }
  return bad;
}

describe('the documents link to what exists', () => {
  it('the checks find a missing file, a missing heading, and pass a good link (they can fail)', () => {
    assert.deepEqual(anchors('# A title\n## Stopping it\n## Node and `npm install`\n## Stopping it\n```\n# not a heading\n```\n'), new Set(['a-title', 'stopping-it', 'node-and-npm-install', 'stopping-it-1']));
    assert.deepEqual(relativeLinks('[a](docs/x.md#y) [b](https://example.com) `[c](z.md)` [d](#local)'), ['docs/x.md#y', '#local']);
    assert.deepEqual(broken('README.md', '[gone](docs/no-such-file.md) [bad](docs/local-stack.md#no-such-heading) [ok](docs/local-stack.md#stopping-it) [self](#two-commands) [out](../outside.md)'), [
      'docs/no-such-file.md (no such file)',
      'docs/local-stack.md#no-such-heading (no such heading)',
      '../outside.md (no such file)',
    ]);
  });

  for (const file of DOCS) {
    it(`${file}: every relative link resolves, to a file and a heading`, () => {
      assert.deepEqual(broken(file), []);
    });
  }

  it('every citation `<document>.md "Section"` in the code, the tests and the documents names a heading of that document', () => {
    const sources = ['README.md', 'serverless.yml', '.ci/run', ...['lib', 'functions', 'test', 'bench', 'infra', 'docs'].flatMap((dir) => files(dir))];
    const cited: { file: string; doc: string; section: string }[] = [];
    for (const file of sources) {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      // decisions.md has its own test (test/decisions.test.ts); the others here. A citation may wrap across comment lines.
      for (const m of text.matchAll(/\b(BENCHMARKS|[a-z0-9-]+)\.md"?,?\s+(?:\*\s+)?"([^"\n]+(?:\n\s*\*?\s*[^"\n]+)?)"/g)) {
        const doc = m[1] === 'BENCHMARKS' ? 'BENCHMARKS.md' : `docs/${m[1]}.md`;
        if (m[1] === 'decisions' || !existsSync(path.join(ROOT, doc))) continue;
        cited.push({ file, doc, section: (m[2] ?? '').replace(/\s*\n\s*\*?\s*/g, ' ') });
      }
    }
    assert.ok(cited.length >= 40, `${cited.length} citations found`);
    // A heading, or a paragraph's bold label (docs/runbook.md "TSA key").
    const headings = (doc: string) => {
      const text = unfenced(readFileSync(path.join(ROOT, doc), 'utf8'));
      return [...text.matchAll(/^#{1,6} (?:\d+\. )?(.+)$/gm), ...text.matchAll(/^\*\*([^*\n]+)\*\*/gm)].map((h) => (h[1] ?? '').trim());
    };
    const missing = cited.filter((c) => !headings(c.doc).some((h) => h === c.section || h.startsWith(`${c.section} `) || h.startsWith(`${c.section}:`)));
    assert.deepEqual(missing, []);
  });

  it('docs/README.md links every document in docs/, and BENCHMARKS.md', () => {
    const index = readFileSync(path.join(ROOT, 'docs', 'README.md'), 'utf8');
    const linked = new Set(relativeLinks(index).map((l) => path.normalize(path.join('docs', l.split('#')[0] ?? ''))));
    const expected = [...DOCS.filter((f) => f.startsWith('docs/') && f !== 'docs/README.md'), 'BENCHMARKS.md'];
    assert.ok(expected.length >= 10, `${expected.length} documents`);
    assert.deepEqual(expected.filter((f) => !linked.has(f)), []);
  });

  it('the README is a path: at most 20,000 bytes, and its first screen says how to start, anchor and verify, and where the reference is', () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    assert.ok(Buffer.byteLength(readme) <= 20_000, `README.md is ${Buffer.byteLength(readme)} bytes`);
    // The first screen: the first 40 lines.
    const first = readme.split('\n').slice(0, 40).join('\n');
    for (const link of ['#two-commands', '#the-five-minute-walk', 'docs/README.md']) assert.ok(first.includes(`](${link})`), link);
  });
});
