/**
 * The test vectors are in the repository (test/vectors, README.txt says where each came from) and
 * unchanged since they were copied in: every file of test/vectors/SHA256SUMS is there with its
 * checksum (the README.txt files, which tell their provenance, are not inputs and are not listed). A vector file that is missing or changed fails here, by name, as well as in the test
 * that reads it (which throws when its input is missing: never a silent pass).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const DIR = path.resolve(import.meta.dirname, '..', 'vectors');
const sums = readFileSync(path.join(DIR, 'SHA256SUMS'), 'utf8')
  .trim()
  .split('\n')
  .map((line) => /^([0-9a-f]{64}) {2}(.+)$/.exec(line))
  .map((m) => ({ sha256: m?.[1] ?? '', file: m?.[2] ?? '' }));

describe('the test vectors in test/vectors', () => {
  it('lists every file it holds, and every listed file is there with its SHA-256', () => {
    assert.ok(sums.length >= 12, `${sums.length} files listed`);
    for (const { sha256, file } of sums) {
      const at = path.join(DIR, file);
      assert.ok(existsSync(at), `${file} is missing (see test/vectors/README.txt for where it came from)`);
      assert.equal(createHash('sha256').update(readFileSync(at)).digest('hex'), sha256, `${file} has changed`);
    }
    const held = readdirSync(DIR, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && e.name !== 'SHA256SUMS' && e.name !== 'README.txt')
      .map((e) => path.relative(DIR, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
      .sort();
    assert.deepEqual(held, sums.map((s) => s.file).sort(), 'a vector file without a checksum (add it to SHA256SUMS with its provenance in README.txt)');
  });
});
