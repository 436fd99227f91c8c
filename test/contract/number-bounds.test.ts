/**
 * decisions.md "Faults of the parts", Numbers: every integer a request carries is within
 * 0 … 2^53 − 1, and anything else (beyond it, negative, not an integer, not a number) is a 400
 * problem+json, in v1 and v2 alike, never a 5xx. The fields are not listed here: they are read
 * from the served OpenAPI document (every integer property of a JSON request body, every integer
 * query parameter), so a numeric field added later is covered, and the document must state the
 * bounds it enforces.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount, Device } from '../support/client.js';
import { type HttpService, startHttpService } from '../support/http-server.js';
import { useStack } from '../support/stack.js';

await useStack();

const MAX = Number.MAX_SAFE_INTEGER; // 2^53 − 1
const OUT_OF_RANGE: { label: string; json: string }[] = [
  { label: '2^53', json: '9007199254740992' },
  { label: '2^53 + 1 (not representable)', json: '9007199254740993' },
  { label: '1e300', json: '1e300' },
  { label: '-1', json: '-1' },
  { label: '1.5', json: '1.5' },
  { label: 'a string', json: '"1"' }, // a JSON body only (a query value is always a string)
  { label: 'not a number', json: '"abc"' },
];

interface Schema {
  type?: string | string[];
  minimum?: number;
  maximum?: number;
  properties?: Record<string, Schema>;
  $ref?: string;
  anyOf?: Schema[];
  oneOf?: Schema[];
}
interface Operation {
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  parameters?: { name: string; in: string; schema?: Schema }[];
  security?: Record<string, unknown>[];
}

let service: HttpService;
let doc: { paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, Schema> } };
let apiKey: string;
let token: string;

before(async () => {
  service = await startHttpService();
  doc = (await (await fetch(`${service.url}/api/openapi.json`)).json()) as typeof doc;
  ({ apiKey, token } = await createAccount('enterprise'));
});
after(() => service?.close());

function resolve(schema: Schema | undefined): Schema | undefined {
  if (schema?.$ref) return doc.components?.schemas?.[schema.$ref.split('/').at(-1) as string];
  return schema;
}

const isInteger = (s: Schema | undefined) => {
  const t = resolve(s)?.type;
  return t === 'integer' || (Array.isArray(t) && t.includes('integer'));
};

/** Every (operation, field) that takes an integer: JSON body properties and query parameters. */
function integerInputs(): { method: string; path: string; where: 'body' | 'query'; name: string; schema: Schema }[] {
  const out: { method: string; path: string; where: 'body' | 'query'; name: string; schema: Schema }[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const body = resolve(op.requestBody?.content?.['application/json']?.schema);
      for (const [name, prop] of Object.entries(body?.properties ?? {})) {
        // A field that takes an integer or a decimal string (the v1 timestamp nonce) is an integer field too.
        const alternatives = [prop, ...(prop.anyOf ?? []), ...(prop.oneOf ?? [])];
        const integer = alternatives.find((a) => isInteger(a));
        if (integer) out.push({ method, path, where: 'body', name, schema: resolve(integer) as Schema });
      }
      for (const p of op.parameters ?? []) if (p.in === 'query' && isInteger(p.schema)) out.push({ method, path, where: 'query', name: p.name, schema: resolve(p.schema) as Schema });
    }
  }
  return out;
}

/**
 * A request that is valid but for the field under test, per operation (each is what a client
 * sends; the v2 and v1 anchors as a device's first link). An integer input the document lists
 * without a builder here fails the test: add its valid request.
 */
const VALID: Record<string, (device: Device) => { path: string; body?: Record<string, unknown>; jwt?: true }> = {
  'GET /api/v2/account/evidence': () => ({ path: '/api/v2/account/evidence', jwt: true }),
  'POST /api/v2/evidence/anchor': (device) => ({ path: '/api/v2/evidence/anchor', body: device.next() }),
  'POST /api/v2/evidence/full': (device) => ({ path: '/api/v2/evidence/full', body: device.next() }),
  'POST /api/v1/chain/anchor': (device) => {
    const { sha256_hash, ...rest } = device.next();
    return { path: '/api/v1/chain/anchor', body: { image_hash: sha256_hash, ...rest, device_id: 'phone' } };
  },
  'POST /api/v1/timestamp': (device) => ({ path: '/api/v1/timestamp', body: { hash: device.next().sha256_hash, nonce: 42 } }),
  'GET /api/v1/chain/all/{public_key_hex}': (device) => ({ path: `/api/v1/chain/all/${device.publicKeyHex}` }),
};

/** The request of VALID for the operation, with `name` set to the raw JSON `value`. */
function requestWith(input: { method: string; path: string; where: 'body' | 'query'; name: string }, value: string): { url: string; init: RequestInit } {
  const build = VALID[`${input.method.toUpperCase()} ${input.path}`];
  if (!build) throw new Error(`no valid request known for ${input.method.toUpperCase()} ${input.path}: add one to VALID`);
  const { path, body, jwt } = build(new Device());
  const headers: Record<string, string> = jwt ? { authorization: `Bearer ${token}` } : { 'x-api-key': apiKey };
  if (input.where === 'query') {
    const raw = value.startsWith('"') ? (JSON.parse(value) as string) : value;
    return { url: `${service.url}${path}?${input.name}=${encodeURIComponent(raw)}`, init: { method: input.method.toUpperCase(), headers } };
  }
  const text = JSON.stringify({ ...body, [input.name]: '__VALUE__' }).replace('"__VALUE__"', value);
  return { url: `${service.url}${path}`, init: { method: input.method.toUpperCase(), headers: { ...headers, 'content-type': 'application/json' }, body: text } };
}

/** The same request with an in-range value: it must not be refused for that field (the body is otherwise valid). */
function inRange(input: { schema: Schema }): string {
  return String(Math.max(input.schema.minimum ?? 0, (input.schema as { exclusiveMinimum?: number }).exclusiveMinimum !== undefined ? ((input.schema as { exclusiveMinimum?: number }).exclusiveMinimum as number) + 1 : 0));
}

describe('integer fields of every request: 0 … 2^53 − 1, anything else 400', () => {
  it('finds the integer inputs in the OpenAPI document, and each states its bounds', () => {
    const inputs = integerInputs();
    const names = inputs.map((i) => `${i.method.toUpperCase()} ${i.path} ${i.name}`);
    assert.ok(names.includes('POST /api/v2/evidence/anchor chain_index'), names.join('\n'));
    assert.ok(names.includes('POST /api/v1/chain/anchor chain_index'), names.join('\n'));
    for (const i of inputs) {
      const min = i.schema.minimum ?? (i.schema as { exclusiveMinimum?: number }).exclusiveMinimum;
      assert.equal(typeof min, 'number', `${i.method} ${i.path} ${i.name}: minimum`);
      assert.ok((min as number) >= 0, `${i.method} ${i.path} ${i.name}: minimum ≥ 0`);
      assert.equal(typeof i.schema.maximum, 'number', `${i.method} ${i.path} ${i.name}: maximum`);
      assert.ok((i.schema.maximum as number) <= MAX, `${i.method} ${i.path} ${i.name}: maximum ≤ 2^53 − 1`);
    }
  });

  it('answers 400 problem+json to every out-of-range value of every integer input', async () => {
    const failures: string[] = [];
    for (const input of integerInputs()) {
      // The control: the same request with an in-range value is not refused as a bad request.
      const control = requestWith(input, inRange(input));
      const ok = await fetch(control.url, control.init);
      await ok.arrayBuffer();
      if (ok.status === 400 || ok.status >= 500) failures.push(`${input.method.toUpperCase()} ${input.path} ${input.name}=${inRange(input)} (in range): ${ok.status}`);
      // A field that also takes a decimal string (the v1 nonce, up to 10^38) is not refused for being one.
      const takesStrings = input.name === 'nonce' || input.where === 'query';
      for (const v of OUT_OF_RANGE.filter((x) => !(takesStrings && x.json === '"1"'))) {
        const { url, init } = requestWith(input, v.json);
        const res = await fetch(url, init);
        const text = await res.text();
        const type = res.headers.get('content-type') ?? '';
        if (res.status !== 400 || !type.startsWith('application/problem+json')) {
          failures.push(`${input.method.toUpperCase()} ${input.path} ${input.name}=${v.label}: ${res.status} ${type} ${text.slice(0, 160)}`);
        }
      }
    }
    assert.deepEqual(failures, []);
  });

  it('takes an integer query parameter in decimal digits only: hexadecimal, octal, binary, exponents, signs, blanks and leading zeros are 400', async () => {
    const queries = integerInputs().filter((i) => i.where === 'query');
    assert.ok(queries.length >= 2, queries.map((q) => q.name).join(', '));
    // Each of these Number() reads as 16 (or 10, or 0): a client sending one meant something else.
    const NOT_DECIMAL = ['0x10', '0X10', '0o20', '0b10000', '1e1', '16e0', '+16', ' 16', '16 ', '016', '16.0', '', '١٦'];
    const failures: string[] = [];
    for (const input of queries) {
      const control = requestWith(input, '16');
      const ok = await fetch(control.url, control.init);
      await ok.arrayBuffer();
      if (ok.status === 400 || ok.status >= 500) failures.push(`${input.path} ${input.name}=16: ${ok.status}`);
      for (const v of NOT_DECIMAL) {
        const { url, init } = requestWith(input, JSON.stringify(v));
        const res = await fetch(url, init);
        const text = await res.text();
        const type = res.headers.get('content-type') ?? '';
        if (res.status !== 400 || !type.startsWith('application/problem+json')) failures.push(`${input.path} ${input.name}=${JSON.stringify(v)}: ${res.status} ${text.slice(0, 160)}`);
        else if (!/decimal/.test((JSON.parse(text) as { detail: string }).detail)) failures.push(`${input.path} ${input.name}=${JSON.stringify(v)}: the detail does not say decimal: ${text.slice(0, 200)}`);
      }
    }
    assert.deepEqual(failures, []);
  });

  it('takes chain_index = 2^53 − 1 as a number like any other: the chain rule answers (409: not the next free index), never a 5xx', async () => {
    for (const path of ['/api/v2/evidence/anchor', '/api/v1/chain/anchor']) {
      const device = new Device();
      const first = device.next();
      device.advance(first);
      const next = device.next();
      const { sha256_hash, ...rest } = next;
      const body = JSON.stringify(path.includes('/v2/') ? { ...next, chain_index: MAX } : { image_hash: sha256_hash, ...rest, chain_index: MAX });
      const res = await fetch(`${service.url}${path}`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body });
      const problem = (await res.json()) as { code?: string };
      assert.ok(res.status === 409 || res.status === 400, `${path}: ${res.status} ${JSON.stringify(problem)}`);
      assert.ok(['chain_index_conflict', 'invalid_chain_hash', 'invalid_previous_hash'].includes(problem.code ?? ''), `${path}: ${JSON.stringify(problem)}`);
    }
  });
});
