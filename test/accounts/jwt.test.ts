import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SignJWT, UnsecuredJWT, decodeJwt, decodeProtectedHeader, generateKeyPair } from 'jose';
import { InvalidTokenError, TokenService } from '../../lib/accounts/jwt.js';
import { JwtSecretError, cachedJwtSecret, loadJwtSecret } from '../../lib/accounts/jwt-secret.js';
import type { Config } from '../../lib/config.js';
import { frozenClock } from './support.js';

const SECRET = randomBytes(32);
const SETTINGS = { issuer: 'evidence-anchoring-service', audience: 'evidence-account-api', ttlSeconds: 3600 };
const NOW = '2026-11-22T10:15:30.000Z';
const nowSeconds = Date.parse(NOW) / 1000;

function service(clock = frozenClock(NOW), secret: Uint8Array = SECRET) {
  return new TokenService(async () => secret, SETTINGS, clock);
}

function claims(overrides: Record<string, unknown> = {}) {
  return { iss: SETTINGS.issuer, aud: SETTINGS.audience, sub: 'acc_1', iat: nowSeconds, exp: nowSeconds + 60, ...overrides };
}

async function rejects(token: string) {
  await assert.rejects(service().verify(token), InvalidTokenError);
}

describe('account JWT', () => {
  it('is HS256 with iss, aud, sub, iat and exp one TTL after iat', async () => {
    const { token, token_type, expires_in } = await service().issue('acc_1');
    assert.equal(token_type, 'Bearer');
    assert.equal(expires_in, 3600);
    assert.equal(decodeProtectedHeader(token).alg, 'HS256');
    assert.deepEqual(decodeJwt(token), claims({ exp: nowSeconds + 3600 }));
  });

  it('verifies to the account id', async () => {
    const { token } = await service().issue('acc_42');
    assert.equal(await service().verify(token), 'acc_42');
  });

  it('is rejected once expired, by the injected clock', async () => {
    const clock = frozenClock(NOW);
    const { token } = await service(clock).issue('acc_1');
    clock.advance(3600_000);
    await assert.rejects(service(clock).verify(token), InvalidTokenError);
  });

  it('is rejected when issued more than a minute in the future', async () => {
    const sign = (iat: number) => new SignJWT(claims({ iat, exp: iat + 600 })).setProtectedHeader({ alg: 'HS256' }).sign(SECRET);
    assert.equal(await service().verify(await sign(nowSeconds + 60)), 'acc_1');
    await rejects(await sign(nowSeconds + 61));
    await rejects(await sign(nowSeconds + 365 * 86400));
  });

  it('is rejected when it lives longer than the configured lifetime', async () => {
    const sign = (lifetime: number) => new SignJWT(claims({ exp: nowSeconds + lifetime })).setProtectedHeader({ alg: 'HS256' }).sign(SECRET);
    assert.equal(await service().verify(await sign(SETTINGS.ttlSeconds)), 'acc_1');
    await rejects(await sign(SETTINGS.ttlSeconds + 1));
    await rejects(await sign(100 * 365 * 86400));
  });

  it('is rejected with alg none', async () => {
    await rejects(new UnsecuredJWT(claims()).encode());
  });

  it('is rejected when signed with HS512, even with the right secret', async () => {
    await rejects(await new SignJWT(claims()).setProtectedHeader({ alg: 'HS512' }).sign(SECRET));
  });

  it('is rejected when signed with RS256', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    await rejects(await new SignJWT(claims()).setProtectedHeader({ alg: 'RS256' }).sign(privateKey));
  });

  it('is rejected when its payload was changed after signing', async () => {
    const { token } = await service().issue('acc_1');
    const [h, , s] = token.split('.');
    const forged = Buffer.from(JSON.stringify(claims({ sub: 'acc_2', exp: nowSeconds + 3600 }))).toString('base64url');
    await rejects(`${h}.${forged}.${s}`);
  });

  it('is rejected for another audience or another issuer', async () => {
    await rejects(await new SignJWT(claims({ aud: 'someone-else' })).setProtectedHeader({ alg: 'HS256' }).sign(SECRET));
    await rejects(await new SignJWT(claims({ iss: 'someone-else' })).setProtectedHeader({ alg: 'HS256' }).sign(SECRET));
  });

  it('is rejected without a subject or an expiry', async () => {
    await rejects(await new SignJWT(claims({ sub: undefined })).setProtectedHeader({ alg: 'HS256' }).sign(SECRET));
    await rejects(await new SignJWT(claims({ exp: undefined })).setProtectedHeader({ alg: 'HS256' }).sign(SECRET));
  });

  it('is neither issued nor verified with a secret under 32 bytes', async () => {
    const weak = service(frozenClock(NOW), randomBytes(31));
    await assert.rejects(weak.issue('acc_1'), JwtSecretError);
  });
});

describe('JWT secret source', () => {
  const base: Config['jwt'] = { source: 'file', file: '', value: undefined, kmsCiphertext: undefined, ...SETTINGS };

  it('reads the secret generated into DATA_DIR', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'jwt-secret-'));
    const file = path.join(dir, 'jwt-secret');
    await writeFile(file, `${randomBytes(32).toString('base64url')}\n`);
    const secret = await loadJwtSecret({ ...base, file });
    assert.equal(secret.length, 43);
  });

  it('refuses a secret of fewer than 32 bytes from any source', async () => {
    await assert.rejects(loadJwtSecret({ ...base, source: 'env', value: 'x'.repeat(31) }), JwtSecretError);
    await assert.rejects(
      loadJwtSecret({ ...base, source: 'kms', kmsCiphertext: 'AAAA' }, async () => randomBytes(16)),
      JwtSecretError,
    );
  });

  it('decrypts a KMS ciphertext once per process and uses the plaintext bytes', async () => {
    const plaintext = randomBytes(32);
    const ciphertext = randomBytes(64);
    let calls = 0;
    const decrypt = async (blob: Uint8Array) => {
      calls++;
      assert.deepEqual(Buffer.from(blob), ciphertext);
      return plaintext;
    };
    const jwt = { ...base, source: 'kms' as const, kmsCiphertext: ciphertext.toString('base64') };
    const [a, b] = await Promise.all([cachedJwtSecret(jwt, decrypt), cachedJwtSecret(jwt, decrypt)]);
    await cachedJwtSecret(jwt, decrypt);
    assert.deepEqual(Buffer.from(a), plaintext);
    assert.equal(a, b);
    assert.equal(calls, 1);
  });
});
