/**
 * The validity-window model (lib/crypto/key-windows.ts, decisions.md "Key validity windows"): the
 * rule at its bounds, and a rotation of the registry in memory.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { checkWindow, keyStatus, readKeyRegistry, type RegistryEntry, rotateRegistry, UNBOUNDED, writeKeyRegistry } from '../../lib/crypto/key-windows.js';

const at = (iso: string) => new Date(iso);
const W = { not_before: '2026-01-01T00:00:00.000Z', not_after: '2036-01-01T00:00:00.000Z', retired_at: '2027-01-01T00:00:00.000Z' };

describe('checkWindow', () => {
  it('holds from not_before on, up to but not at retired_at, and says as of when', () => {
    assert.equal(checkWindow(W, at(W.not_before)).ok, true);
    const inside = checkWindow(W, at('2026-12-31T23:59:59.999Z'));
    assert.deepEqual(inside, { ok: true, reason: 'valid as of 2026-12-31T23:59:59.999Z (retired since 2027-01-01T00:00:00.000Z)', retiredSince: '2027-01-01T00:00:00.000Z' });
    assert.deepEqual(checkWindow({ ...W, retired_at: null }, at('2026-06-01T00:00:00.000Z')), { ok: true, reason: 'valid as of 2026-06-01T00:00:00.000Z' });
    assert.match(checkWindow(W, at(W.retired_at)).reason, /^dated 2027-01-01T00:00:00.000Z, after the key's retirement at 2027-01-01T00:00:00.000Z$/);
    assert.equal(checkWindow(W, at(W.retired_at)).ok, false);
  });

  it('fails before not_before and after not_after (an X.509 window), holds at not_after', () => {
    const cert = { ...W, retired_at: null };
    assert.equal(checkWindow(cert, at('2025-12-31T23:59:59.999Z')).ok, false);
    assert.match(checkWindow(cert, at('2025-12-31T23:59:59.999Z')).reason, /before the key's validity began/);
    assert.equal(checkWindow(cert, at(cert.not_after)).ok, true);
    assert.match(checkWindow(cert, at('2036-01-01T00:00:00.001Z')).reason, /after the key's validity ended/);
  });

  it('an unbounded window holds at any time; a time that is not one fails', () => {
    assert.equal(checkWindow(UNBOUNDED, at('1990-01-01T00:00:00.000Z')).ok, true);
    assert.equal(checkWindow(UNBOUNDED, new Date(Number.NaN)).ok, false);
  });
});

describe('rotateRegistry', () => {
  const key = (kid: string): Omit<RegistryEntry, 'not_before' | 'retired_at'> => ({ kind: 'ed25519', kid, sha256: kid.padEnd(64, '0'), not_after: null });

  it('retires the active key at the rotation and starts the new one then; rotating to it again changes nothing', () => {
    const when = at('2027-06-01T12:00:00.000Z');
    const first = rotateRegistry({ version: 1, keys: [] }, key('b'), when, { ...key('a'), not_before: null, retired_at: null });
    assert.deepEqual(
      first.keys.map((k) => [k.kid, k.not_before, k.retired_at, keyStatus(k)]),
      [
        ['a', null, '2027-06-01T12:00:00.000Z', 'retired'],
        ['b', '2027-06-01T12:00:00.000Z', null, 'active'],
      ],
    );
    assert.equal(rotateRegistry(first, key('b'), at('2028-01-01T00:00:00.000Z')), first);
    assert.throws(() => rotateRegistry(first, key('a'), at('2028-01-01T00:00:00.000Z')), /retired .* never signs again/);
  });

  it('is written whole (0644, public material only) and read back', async () => {
    const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'registry-')), 'keys', 'key-registry.json');
    assert.deepEqual(await readKeyRegistry(file), { version: 1, keys: [] });
    const registry = rotateRegistry({ version: 1, keys: [] }, key('c'), at('2027-01-01T00:00:00.000Z'));
    await writeKeyRegistry(file, registry);
    assert.deepEqual(await readKeyRegistry(file), registry);
    assert.equal((await stat(file)).mode & 0o777, 0o644);
    assert.match(await readFile(file, 'utf8'), /^\{\n {2}"version": 1,/);
    await assert.rejects(async () => writeKeyRegistry(file, { version: 1, keys: [{ ...registry.keys[0], not_before: 'soon' } as RegistryEntry] }).then(() => readKeyRegistry(file)), /ISO 8601 or null/);
  });
});

describe('the verdict on a record whose stated time is not a time', () => {
  it('fails the key (never throws) when the window must be judged at it', async () => {
    const { judgePq } = await import('../../lib/evidence/verdict.js');
    const pq = judgePq(
      {
        statement: '{}',
        server_hash: '0'.repeat(64),
        pq: { public_key: new Uint8Array(1952), signature: new Uint8Array(3309) },
        image_hash: '1'.repeat(64),
        anchored_at: 'not a time',
        device: { public_key_hex: '2'.repeat(64), signature_hex: '3'.repeat(128), chain_index: 0, chain_hash: '4'.repeat(64), previous_hash: null },
      },
      [{ sha256: (await import('../../lib/crypto/hash.js')).sha256Hex(new Uint8Array(1952)), window: W }],
    );
    assert.equal(pq.pq_key.state, 'fails');
    assert.match(pq.pq_key.reason, /the signing time is not a time/);
  });
});
