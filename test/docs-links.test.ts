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
  it('the check finds a missing file, a missing heading, and passes a good link (it can fail)', () => {
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
