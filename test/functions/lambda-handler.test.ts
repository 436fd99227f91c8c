import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import type { APIGatewayProxyResult, LambdaContext, LambdaEvent } from 'hono/aws-lambda';
import { handle } from 'hono/aws-lambda';
import { resetCoreDeps } from '../../lib/deps/core.js';
import { createApp } from '../../lib/http/app.js';
import { notImplemented } from '../../lib/http/errors.js';
import * as chainVerify from '../../functions/v1/chain-verify.js';
import * as health from '../../functions/v1/health.js';
import * as timestamp from '../../functions/v1/timestamp.js';
import { useStack } from '../support/stack.js';

/**
 * The Lambda path (API Gateway v2 event → `handler`) and the local path (the same Hono `app`,
 * as lib/local serves it) must answer alike: same status, content type, CORS and body.
 */

/** API Gateway HTTP API payload v2 (hono does not export the type by name). */
type APIGatewayProxyEventV2 = Extract<LambdaEvent, { rawPath: string }>;

const FIXTURES = path.resolve(import.meta.dirname, '..', 'fixtures', 'apigw');
const fixture = (name: string): APIGatewayProxyEventV2 => JSON.parse(readFileSync(path.join(FIXTURES, name), 'utf8')) as APIGatewayProxyEventV2;

const CONTEXT = {
  callbackWaitsForEmptyEventLoop: true,
  functionName: 'evidence-anchoring-dev-test',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:eu-central-1:123456789012:function:evidence-anchoring-dev-test',
  memoryLimitInMB: '512',
  awsRequestId: '6f1c2a1e-8d0b-4c39-9b7e-2f0d5c1e4a77',
  logGroupName: '/aws/lambda/evidence-anchoring-dev-test',
  logStreamName: '2026/11/22/[$LATEST]0123456789abcdef0123456789abcdef',
  getRemainingTimeInMillis: () => 10_000,
} as unknown as LambdaContext;

type Handler = (event: APIGatewayProxyEventV2, context: LambdaContext) => Promise<APIGatewayProxyResult>;
interface Answer {
  status: number;
  contentType: string | undefined;
  allowOrigin: string | undefined;
  body: unknown;
}

/** What differs between two calls by design: the request id, the clock, rate-limit counters. */
function normalize(body: unknown): unknown {
  if (typeof body !== 'object' || body === null) return body;
  const { request_id: _r, time: _t, ...rest } = body as Record<string, unknown>;
  return rest;
}

function parse(text: string, contentType: string | undefined): unknown {
  return contentType && /json/.test(contentType) ? (JSON.parse(text) as unknown) : text;
}

async function viaLambda(handler: Handler, event: APIGatewayProxyEventV2): Promise<Answer> {
  const res = await handler(event, CONTEXT);
  const raw = 'headers' in res ? (res.headers ?? {}) : {};
  const headers = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k.toLowerCase(), String(v)]));
  const text = res.isBase64Encoded ? Buffer.from(res.body, 'base64').toString('utf8') : res.body;
  return { status: res.statusCode, contentType: headers['content-type'], allowOrigin: headers['access-control-allow-origin'], body: parse(text, headers['content-type']) };
}

/** The same request as the local server would pass it to the app. */
async function viaApp(app: { request(input: string, init: RequestInit): Response | Promise<Response> }, event: APIGatewayProxyEventV2): Promise<Answer> {
  const body = event.body === undefined || event.body === null ? undefined : event.isBase64Encoded ? Buffer.from(event.body, 'base64') : event.body;
  const url = `https://${event.requestContext.domainName}${event.rawPath}${event.rawQueryString ? `?${event.rawQueryString}` : ''}`;
  const res = await app.request(url, { method: event.requestContext.http.method, headers: event.headers as Record<string, string>, body });
  const contentType = res.headers.get('content-type') ?? undefined;
  return { status: res.status, contentType, allowOrigin: res.headers.get('access-control-allow-origin') ?? undefined, body: parse(await res.text(), contentType) };
}

async function assertSameAnswer(mod: { app: Parameters<typeof viaApp>[0]; handler: unknown }, event: APIGatewayProxyEventV2): Promise<Answer> {
  const lambda = await viaLambda(mod.handler as Handler, event);
  const local = await viaApp(mod.app, event);
  assert.deepEqual({ ...lambda, body: normalize(lambda.body) }, { ...local, body: normalize(local.body) });
  return lambda;
}

// At module level, not in a `before` hook: on Node 20, an `after()` registered inside a root
// `before` hook (useStack registers one to stop a private stack) runs as soon as that hook ends,
// which would stop the database before the first test.
// Destroys the shared DynamoDB client first, so that its keep-alive sockets do not hold the
// embedded server (and this process) open after the last test.
after(() => resetCoreDeps());
await useStack();

describe('Lambda handlers on API Gateway v2 events', () => {
  test('health answers 200 or 503 with every part, as the local app does', async () => {
    const answer = await assertSameAnswer(health, fixture('get-health.json'));
    assert.ok(answer.status === 200 || answer.status === 503, `status ${answer.status}`);
    assert.match(answer.contentType ?? '', /^application\/json/);
    const body = answer.body as { status: string; parts: Record<string, { status: string }> };
    assert.equal(body.parts.database?.status, 'up', JSON.stringify(body.parts.database));
    assert.ok('ledger' in body.parts);
    assert.equal(answer.allowOrigin, '*', 'public endpoint answers CORS');
  });

  test('a GET with a path parameter answers as the local app does', async () => {
    await assertSameAnswer(chainVerify, fixture('get-path-parameter.json'));
  });

  test('a POST with a JSON body and its base64 form answer as the local app does, and alike', async () => {
    const plain = await assertSameAnswer(timestamp, fixture('post-json.json'));
    const encoded = await assertSameAnswer(timestamp, fixture('post-base64.json'));
    assert.deepEqual(normalize(encoded.body), normalize(plain.body));
    assert.equal(encoded.status, plain.status);
  });
});

describe('a stub function on the Lambda path', () => {
  // Built exactly like every not-yet-implemented function: the app factory and one 501 route.
  const stub = createApp({ publicCors: false });
  stub.post('/api/v1/timestamp/echo', async (c) => c.json({ received: await c.req.json<unknown>(), ip: c.get('clientIp'), id: c.get('requestId') }));
  stub.all('*', () => {
    throw notImplemented('POST /api/v1/timestamp is not implemented yet.');
  });
  const stubModule = { app: stub, handler: handle(stub) };

  test('answers 501 problem+json with a stable code, on both paths', async () => {
    for (const name of ['post-json.json', 'post-base64.json', 'get-path-parameter.json']) {
      const answer = await assertSameAnswer(stubModule, fixture(name));
      assert.equal(answer.status, 501, name);
      assert.equal(answer.contentType, 'application/problem+json');
      assert.equal((answer.body as { code: string }).code, 'not_implemented');
    }
  });

  test('decodes a base64 body and takes the request id and client IP from API Gateway', async () => {
    for (const name of ['post-json.json', 'post-base64.json']) {
      const event = fixture(name);
      event.rawPath = '/api/v1/timestamp/echo';
      event.requestContext.http.path = event.rawPath;
      const res = await (stubModule.handler as Handler)(event, CONTEXT);
      assert.equal(res.statusCode, 200, name);
      assert.deepEqual(JSON.parse(res.body) as unknown, {
        received: { hash: 'b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9' },
        ip: event.requestContext.http.sourceIp,
        id: event.requestContext.requestId,
      });
    }
  });
});
