/**
 * POST /api/v2/tsa from another site (issue 34, F5; decisions.md "Starter features"): the endpoint
 * takes HTTP Basic credentials, which a browser caches and sends on its own, so a page of any site
 * could make the browser of a user who once typed their key post to it. Over real HTTP, as a
 * browser speaks it:
 * - what an HTML form can send cross-site without asking (text/plain, a form encoding; RFC 3161's
 *   application/timestamp-query is not among them) gets 415 before the credentials are read:
 *   nothing counted, no Basic challenge, no CORS header;
 * - a request with the RFC 3161 type is not "simple": the browser first asks with a CORS preflight,
 *   which allows no other origin, so it never sends the request.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createAccount } from '../support/client.js';
import { type HttpService, startHttpService } from '../support/http-server.js';
import { useStack } from '../support/stack.js';

let service: HttpService;
let account: Awaited<ReturnType<typeof createAccount>>;
let tsq: Uint8Array<ArrayBuffer>;

before(async () => {
  await useStack();
  service = await startHttpService();
  account = await createAccount('starter');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsa-cross-site-'));
  writeFileSync(path.join(dir, 'photo.jpg'), randomBytes(100));
  const r = spawnSync('openssl', ['ts', '-query', '-data', path.join(dir, 'photo.jpg'), '-sha256', '-cert', '-out', path.join(dir, 'q.tsq')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  tsq = new Uint8Array(readFileSync(path.join(dir, 'q.tsq')));
});
after(() => service?.close());

async function used(): Promise<number> {
  const res = await fetch(`${service.url}/api/v2/account/usage`, { headers: { authorization: `Bearer ${account.token}` } });
  return ((await res.json()) as { used: number }).used;
}

/** What a browser adds to a request another site's page makes it send. */
const crossSite = { origin: 'https://attacker.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'document' };
const basic = () => `Basic ${Buffer.from(`anyone:${account.apiKey}`).toString('base64')}`;

describe('POST /api/v2/tsa from another site', () => {
  it('answers a form post with the cached Basic credentials 415, before reading them: nothing counted, no challenge, no CORS header', async () => {
    const before = await used();
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=----x']) {
      for (const credentials of [{ authorization: basic() }, {}] as Record<string, string>[]) {
        const res = await fetch(`${service.url}/api/v2/tsa`, { method: 'POST', headers: { ...crossSite, 'content-type': type, ...credentials }, body: tsq });
        const what = `${type}, ${credentials.authorization ? 'cached credentials' : 'none'}`;
        assert.equal(res.status, 415, what);
        assert.equal(res.headers.get('content-type'), 'application/problem+json', what);
        assert.equal(((await res.json()) as { code: string }).code, 'unsupported_media_type', what);
        // No challenge: a browser without cached credentials shows no password prompt for another site's page.
        assert.equal(res.headers.get('www-authenticate'), null, what);
        assert.equal(res.headers.get('access-control-allow-origin'), null, what);
      }
    }
    assert.equal(await used(), before, 'no time-stamp was issued or counted');
  });

  it('allows no other origin in the CORS preflight of a request with the RFC 3161 type: the browser never sends it', async () => {
    const res = await fetch(`${service.url}/api/v2/tsa`, {
      method: 'OPTIONS',
      headers: { origin: 'https://attacker.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    await res.arrayBuffer();
    assert.equal(res.headers.get('access-control-allow-origin'), null);
    assert.equal(res.headers.get('access-control-allow-methods'), null);
    assert.equal(res.headers.get('access-control-allow-headers'), null);
  });

  it('no other endpoint that takes a body acts on such a post: they read no Basic credentials (401), or take none and want JSON (415)', async () => {
    const doc = (await (await fetch(`${service.url}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> } }>> };
    const before = await used();
    const answers: string[] = [];
    for (const [template, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (!op.requestBody || template === '/api/v2/tsa') continue;
        // Every other body is JSON, whose type a cross-site form cannot send.
        assert.deepEqual(Object.keys(op.requestBody.content), ['application/json'], `${method} ${template}`);
        const p = template.replace('{image_hash}', 'ab'.repeat(32)).replace('{account_id}', account.accountId);
        const res = await fetch(`${service.url}${p}`, { method: method.toUpperCase(), headers: { ...crossSite, 'content-type': 'text/plain', authorization: basic() }, body: '{"sha256_hash":"' + 'ab'.repeat(32) + '"}' });
        await res.arrayBuffer();
        answers.push(`${method.toUpperCase()} ${template} ${res.status}`);
        assert.ok(res.status === 401 || res.status === 415, `${method.toUpperCase()} ${template}: ${res.status}`);
      }
    }
    assert.ok(answers.length >= 12, answers.join('\n'));
    assert.equal(await used(), before);
  });

  it('still answers an RFC 3161 client (the type, Basic credentials, no Origin) with a token that counts', async () => {
    const before = await used();
    const res = await fetch(`${service.url}/api/v2/tsa`, { method: 'POST', headers: { 'content-type': 'application/timestamp-query', authorization: basic() }, body: tsq });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/timestamp-reply');
    await res.arrayBuffer();
    assert.equal(await used(), before + 1);
  });
});
