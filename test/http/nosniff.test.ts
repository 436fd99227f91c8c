/**
 * `X-Content-Type-Options: nosniff` on every answer of every class (lib/http/app.ts sets it for
 * every app, so local and Lambda answers carry it; the edge adds it too, infra/edge-waf.cjs):
 * JSON, problem+json (a validation error, an unknown path, a refused credential), an HTML page,
 * an HTML error page and the PDF certificate, each from the function that serves it.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { sha256Hex } from '../../lib/crypto/hash.js';
import { createAccount, Device, json, randomHash } from '../support/client.js';
import { useStack } from '../support/stack.js';

type App = { request(path: string, init?: RequestInit): Response | Promise<Response> };
const apps: Record<string, App> = {};
let apiKey: string;
let imageHash: string;

before(async () => {
  await useStack();
  for (const [name, file] of [
    ['anchor', '../../functions/v2/evidence-anchor.js'],
    ['verify', '../../functions/v2/evidence-verify.js'],
    ['receipt', '../../functions/v2/evidence-receipt.js'],
    ['certificate', '../../functions/v2/evidence-certificate.js'],
    ['landing', '../../functions/web/landing-page.js'],
    ['ledgerTx', '../../functions/web/ledger-tx.js'],
  ] as const) {
    apps[name] = ((await import(file)) as { app: App }).app;
  }
  const pro = await createAccount('pro');
  apiKey = pro.apiKey;
  imageHash = sha256Hex(Buffer.from(`a photo ${randomHash()}`));
  const res = await apps.anchor!.request('/api/v2/evidence/anchor', json(new Device().next(imageHash), { 'x-api-key': apiKey }));
  assert.equal(res.status, 200, await res.clone().text());
});

describe('every response carries X-Content-Type-Options: nosniff', () => {
  const cases: [string, () => Response | Promise<Response>, RegExp][] = [
    ['JSON (a verification)', () => apps.verify!.request(`/api/v2/evidence/verify/${imageHash}`), /^application\/json/],
    ['JSON (a receipt)', () => apps.receipt!.request(`/api/v2/evidence/receipt/${imageHash}`), /^application\/json/],
    ['problem+json (a malformed hash, 400)', () => apps.receipt!.request('/api/v2/evidence/receipt/not-a-hash'), /^application\/problem\+json/],
    ['problem+json (an unknown path, 404)', () => apps.receipt!.request('/api/v2/nothing-here'), /^application\/problem\+json/],
    ['problem+json (a wrong API key, 401)', () => apps.certificate!.request(`/api/v2/evidence/certificate/${imageHash}`, { headers: { 'x-api-key': 'ek_wrong' } }), /^application\/problem\+json/],
    ['an HTML page', () => apps.landing!.request('/'), /^text\/html/],
    ['an HTML error page (400)', () => apps.ledgerTx!.request('/ledger/tx/not-a-hash', { headers: { accept: 'text/html' } }), /^text\/html/],
    ['the PDF certificate', () => apps.certificate!.request(`/api/v2/evidence/certificate/${imageHash}`, { headers: { 'x-api-key': apiKey } }), /^application\/pdf/],
  ];
  for (const [name, request, type] of cases) {
    it(name, async () => {
      const res = await request();
      assert.match(res.headers.get('content-type') ?? '', type, `${name}: ${res.status} ${res.headers.get('content-type')}`);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', `${name}: ${res.status}`);
    });
  }
});
