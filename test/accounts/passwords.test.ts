import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PRODUCTION_SCRYPT_COST, createScryptHasher } from '../../lib/accounts/passwords.js';

const FORMAT = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/;

describe('password hashing with the production cost', () => {
  const hasher = createScryptHasher();

  it('uses N = 2^15, r = 8, p = 1', () => {
    assert.deepEqual({ ...PRODUCTION_SCRYPT_COST }, { log2N: 15, r: 8, p: 1 });
  });

  it('stores a self-describing scrypt string with a 16-byte salt and a 32-byte key that verifies the password', async () => {
    const stored = await hasher.hash('correct horse battery staple');
    const m = FORMAT.exec(stored);
    assert.ok(m, stored);
    assert.deepEqual([m[1], m[2], m[3]], ['15', '8', '1']);
    assert.equal(Buffer.from(m[4] ?? '', 'base64').length, 16);
    assert.equal(Buffer.from(m[5] ?? '', 'base64').length, 32);
    assert.equal(await hasher.verify('correct horse battery staple', stored), true);
    assert.equal(await hasher.verify('correct horse battery stapl', stored), false);
  });
});

describe('password hashing', () => {
  const hasher = createScryptHasher({ log2N: 10, r: 8, p: 1 });

  it('salts every hash differently', async () => {
    const [a, b] = await Promise.all([hasher.hash('same password!'), hasher.hash('same password!')]);
    assert.notEqual(a, b);
  });

  it('rejects a wrong password', async () => {
    const stored = await hasher.hash('the right password');
    assert.equal(await hasher.verify('the wrong password', stored), false);
  });

  it('verifies hashes made with another cost, since the cost is read from the stored string', async () => {
    const stored = await hasher.hash('an older password');
    const production = createScryptHasher();
    assert.equal(await production.verify('an older password', stored), true);
  });

  it('answers false for a stored value it cannot read or whose cost is out of bounds', async () => {
    assert.equal(await hasher.verify('x', 'plain-text'), false);
    assert.equal(await hasher.verify('x', '$scrypt$ln=30,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA==$AAAA'), false);
  });

  it('treats composed and decomposed Unicode spellings of a password as the same password', async () => {
    const stored = await hasher.hash('pa\u00dfw\u00f6rter-sind-lang');
    assert.equal(await hasher.verify('pa\u00dfwo\u0308rter-sind-lang', stored), true);
  });

  it('offers a dummy hash with its own cost that an ordinary password does not match', async () => {
    assert.match(hasher.dummyHash, /^\$scrypt\$ln=10,r=8,p=1\$/);
    assert.equal(await hasher.verify('correct horse battery staple', hasher.dummyHash), false);
  });

  it('refuses to be built with an unsupported cost', () => {
    assert.throws(() => createScryptHasher({ log2N: 40, r: 8, p: 1 }), RangeError);
  });
});
