import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { app as problemPage } from '../../functions/web/problem-page.js';
import { PROBLEM_TITLES } from '../../lib/http/problem-titles.js';
import { PROBLEM_TYPES } from '../../lib/http/problem-types.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** Every code the source passes to an error constructor (lib/errors.ts, lib/http/errors.ts helpers, HttpError, DomainError). */
async function codesInSource(): Promise<Set<string>> {
  const codes = new Set<string>();
  const call =
    /\b(?:badRequest|unauthorized|forbidden|notFound|conflict|tooManyRequests|serviceUnavailable|invalid|unauthenticated|forbiddenError|notFoundError|conflictError|unavailable)\(\s*'([a-z_]+)'|new HttpError\(\s*\d+\s*(?:as \d+)?,\s*'([a-z_]+)'|new DomainError\(\s*'[a-z_]+',\s*'([a-z_]+)'/g;
  for (const dir of ['lib', 'functions']) {
    for (const entry of await readdir(path.join(ROOT, dir), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !/\.tsx?$/.test(entry.name)) continue;
      const text = await readFile(path.join(entry.parentPath, entry.name), 'utf8');
      for (const m of text.matchAll(call)) codes.add((m[1] ?? m[2] ?? m[3]) as string);
    }
  }
  return codes;
}

describe('problem types', () => {
  it('has a title, a meaning and a remedy for every code the service answers', async () => {
    const codes = await codesInSource();
    assert.ok(codes.size > 30, `found only ${codes.size} codes: the scan is broken`);
    const missing = [...codes].filter((c) => !PROBLEM_TYPES[c]).sort();
    assert.deepEqual(missing, []);
    assert.deepEqual(Object.keys(PROBLEM_TITLES).sort(), Object.keys(PROBLEM_TYPES).sort(), 'a title for every type, a type for every title');
  });

  it('serves a page for each type at its type URL, and 404 for an unknown one', async () => {
    for (const code of Object.keys(PROBLEM_TYPES)) {
      const res = await problemPage.request(`/problems/${code}`);
      assert.equal(res.status, 200, code);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/);
      const html = await res.text();
      assert.ok(html.includes(`<h1>${PROBLEM_TITLES[code]}</h1>`), code);
      assert.ok(html.includes(`<code>${code}</code>`), code);
    }
    assert.equal((await problemPage.request('/problems/no_such_problem')).status, 404);
    assert.equal((await problemPage.request('/problems/constructor')).status, 404);
  });
});
