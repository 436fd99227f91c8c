import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import registry from '../../infra/functions.json' with { type: 'json' };
import { HTTP_FUNCTIONS } from '../../lib/local/routes.js';
import { useStack } from '../support/stack.js';

let mod: typeof import('../../functions/openapi.js');

before(async () => {
  await useStack();
  mod = await import('../../functions/openapi.js');
});

describe('GET /api/openapi.json', () => {
  it('lets the first anchor of a chain send previous_hash: null, as the API requires (v2 and v1)', async () => {
    const doc = (await (await mod.app.request('/api/openapi.json')).json()) as {
      components: { schemas: Record<string, { properties?: Record<string, { type?: string | string[] }> }> };
    };
    for (const name of ['AnchorRequest', 'V1AnchorRequest']) {
      const type = doc.components.schemas[name]?.properties?.previous_hash?.type;
      assert.ok(Array.isArray(type) && type.includes('null') && type.includes('string'), `${name}.previous_hash is documented as ${JSON.stringify(type)}`);
    }
  });

  it('documents the v1 device_id pattern as a plain ECMA-262 pattern that accepts a label and refuses a control character', async () => {
    const doc = (await (await mod.app.request('/api/openapi.json')).json()) as {
      components: { schemas: Record<string, { properties?: Record<string, { pattern?: string }> }> };
    };
    const pattern = doc.components.schemas.V1AnchorRequest?.properties?.device_id?.pattern;
    assert.ok(pattern, 'device_id has a pattern');
    const re = new RegExp(pattern);
    assert.equal(re.test('Pixel 8 — Claims van #3'), true);
    assert.equal(re.test('bad\u0007label'), false);
    assert.equal(re.test('bad\u0085label'), false);
  });

  it('documents every function of the registry but the document itself, in registry order (infra/functions.json openapi)', () => {
    assert.deepEqual(registry.http.filter((f) => f.openapi === false).map((f) => f.name), ['openapi'], 'only the document itself is left out');
    const expected = HTTP_FUNCTIONS.filter((f) => f.name !== 'openapi').map((f) => f.name);
    assert.deepEqual(Object.keys(mod.DOCUMENTED_APPS), expected);
  });

  it('documents each of those at its route with its operationId from the registry', async () => {
    const doc = (await (await mod.app.request('/api/openapi.json')).json()) as { paths: Record<string, Record<string, { operationId?: string }>> };
    for (const f of registry.http.filter((x) => x.openapi !== false)) {
      assert.equal(doc.paths[f.path]?.[f.method.toLowerCase()]?.operationId, f.operationId, `${f.method} ${f.path}`);
    }
  });

  it('serves an OpenAPI 3.1 document with every /api route of both versions and the error schema', async () => {
    const res = await mod.app.request('/api/openapi.json');
    assert.equal(res.status, 200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, unknown> } };
    assert.equal(doc.openapi, '3.1.0');
    for (const f of HTTP_FUNCTIONS.filter((x) => x.path.startsWith('/api/') && x.name !== 'openapi')) {
      const item = doc.paths[f.path];
      assert.ok(item, `${f.method} ${f.path} is not documented`);
      assert.ok(item[f.method.toLowerCase()], `${f.method} ${f.path} lacks its method`);
    }
    assert.ok(doc.components.schemas.Problem, 'the problem+json schema is documented');
    assert.ok(doc.components.schemas.AnchorRequest);
  });
});
