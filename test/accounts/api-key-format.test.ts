import { createHash } from 'node:crypto';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  API_KEY_PATTERN,
  API_KEY_PREFIX,
  apiKeyDisplayPrefix,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
} from '../../lib/accounts/api-key-format.js';

describe('API key format', () => {
  it('starts with the fixed service prefix eas_ followed by 38 base62 characters', () => {
    const key = generateApiKey();
    assert.equal(API_KEY_PREFIX, 'eas_');
    assert.match(key, /^eas_[0-9A-Za-z]{38}$/);
    assert.match(key, API_KEY_PATTERN);
  });

  it('carries at least 128 random bits (32 base62 characters before the checksum)', () => {
    assert.ok(32 * Math.log2(62) >= 128);
    const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey().slice(4, 36)));
    assert.equal(keys.size, 1000);
  });

  it('accepts its own keys and recognises them offline by the checksum', () => {
    for (let i = 0; i < 100; i++) assert.equal(isWellFormedApiKey(generateApiKey()), true);
  });

  it('rejects a key with one character changed, because the checksum no longer matches', () => {
    const key = generateApiKey();
    const i = 10;
    const changed = key.slice(0, i) + (key[i] === 'a' ? 'b' : 'a') + key.slice(i + 1);
    assert.equal(isWellFormedApiKey(changed), false);
  });

  it('rejects other prefixes, lengths and alphabets', () => {
    const key = generateApiKey();
    assert.equal(isWellFormedApiKey(`xyz_${key.slice(4)}`), false);
    assert.equal(isWellFormedApiKey(key.slice(0, -1)), false);
    assert.equal(isWellFormedApiKey(`${key}0`), false);
    assert.equal(isWellFormedApiKey(`${key.slice(0, 20)}-${key.slice(21)}`), false);
    assert.equal(isWellFormedApiKey(''), false);
  });

  it('stores the SHA-256 of the whole key as lower-case hex', () => {
    const key = generateApiKey();
    assert.equal(hashApiKey(key), createHash('sha256').update(key).digest('hex'));
  });

  it('shows the prefix and 8 characters in listings, far from the whole secret', () => {
    const key = generateApiKey();
    assert.equal(apiKeyDisplayPrefix(key), key.slice(0, 12));
  });
});
