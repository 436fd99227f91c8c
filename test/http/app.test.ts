import assert from 'node:assert/strict';
import { getConfig } from '../../lib/deps/core.js';
import { describe, it } from 'node:test';
import { createRoute, z } from '@hono/zod-openapi';
import { createApp, MAX_BODY_BYTES } from '../../lib/http/app.js';
import { conflict } from '../../lib/http/errors.js';
import { setLogLevel } from '../../lib/log.js';
import { jsonBody, Sha256Hex } from '../../lib/http/schemas/common.js';

setLogLevel('error');

function echoApp() {
  const app = createApp();
  const route = createRoute({
    method: 'post',
    path: '/echo',
    request: jsonBody(z.strictObject({ sha256_hash: Sha256Hex, n: z.number().int().optional() })),
    responses: { 200: { description: 'ok', content: { 'application/json': { schema: z.object({ sha256_hash: z.string() }) } } } },
  });
  app.openapi(route, (c) => c.json({ sha256_hash: c.req.valid('json').sha256_hash }, 200));
  app.get('/conflict', () => {
    throw conflict('hash_already_anchored', 'This hash is already anchored.');
  });
  app.get('/boom', () => {
    throw new Error('secret internal detail from an SDK');
  });
  return app;
}

const post = (body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  echoApp().request('/echo', { method: 'POST', body, headers });

async function problemOf(res: Response) {
  assert.equal(res.headers.get('content-type'), 'application/problem+json');
  return (await res.json()) as Record<string, unknown>;
}

describe('the HTTP basics every function shares', () => {
  it('lower-cases an upper-case hash', async () => {
    const res = await post(JSON.stringify({ sha256_hash: 'AB'.repeat(32) }));
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { sha256_hash: 'ab'.repeat(32) });
  });

  it('answers malformed JSON with 400 malformed_json', async () => {
    const res = await post('{"sha256_hash": ');
    assert.equal(res.status, 400);
    const p = await problemOf(res);
    assert.equal(p.code, 'malformed_json');
    assert.equal(p.status, 400);
  });

  it('answers a wrong type, a bad hash and an unknown field with 400 naming the field', async () => {
    for (const [body, field] of [
      [{ sha256_hash: 'ab'.repeat(32), n: 'x' }, 'n'],
      [{ sha256_hash: 'zz'.repeat(32) }, 'sha256_hash'],
      [{ sha256_hash: 'ab'.repeat(32), extra: 1 }, '(body)'],
    ] as const) {
      const res = await post(JSON.stringify(body));
      assert.equal(res.status, 400, JSON.stringify(body));
      const p = await problemOf(res);
      assert.equal(p.code, 'invalid_request');
      assert.ok((p.errors as { field: string }[]).some((e) => e.field === field), JSON.stringify(p));
    }
  });

  it('answers a missing body with 400, not 500', async () => {
    const res = await echoApp().request('/echo', { method: 'POST' });
    assert.equal(res.status, 400);
    await problemOf(res);
  });

  it('refuses a body over 64 KiB with 413', async () => {
    const res = await post(JSON.stringify({ sha256_hash: 'ab'.repeat(32), pad: 'x'.repeat(MAX_BODY_BYTES) }));
    assert.equal(res.status, 413);
    assert.equal((await problemOf(res)).code, 'payload_too_large');
  });

  it('renders a domain error as problem+json with its stable code', async () => {
    const res = await echoApp().request('/conflict');
    assert.equal(res.status, 409);
    const p = await problemOf(res);
    assert.deepEqual(
      { code: p.code, title: p.title, detail: p.detail, type: p.type, instance: p.instance },
      {
        code: 'hash_already_anchored',
        title: 'Hash already anchored',
        detail: 'This hash is already anchored.',
        type: `${getConfig().publicBaseUrl}/problems/hash_already_anchored`,
        instance: '/conflict',
      },
    );
  });

  it('turns an unexpected error into a generic 500 that leaks nothing', async () => {
    const res = await echoApp().request('/boom');
    assert.equal(res.status, 500);
    const text = await res.text();
    assert.doesNotMatch(text, /secret internal detail|at .*\.ts/);
    assert.match(text, /internal_error/);
  });

  it('answers an unknown path with a 404 problem', async () => {
    const res = await echoApp().request('/nope');
    assert.equal(res.status, 404);
    assert.equal((await problemOf(res)).code, 'not_found');
  });

  it('echoes a sane X-Request-Id and replaces a hostile one', async () => {
    const ok = await echoApp().request('/nope', { headers: { 'x-request-id': 'abc-123' } });
    assert.equal(ok.headers.get('x-request-id'), 'abc-123');
    const hostile = await echoApp().request('/nope', { headers: { 'x-request-id': 'a b;<script>' } });
    assert.match(hostile.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });
});
