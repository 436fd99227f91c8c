import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { Device, createAccount, json } from '../support/client.js';
import { after, before, describe, it } from 'node:test';
import { resetCoreDeps } from '../../lib/deps/core.js';
import { getReconcileDeps } from '../../lib/deps/anchoring.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { reconcileAnchors } from '../../lib/evidence/reconcile.js';
import { waitFor } from '../support/wait.js';
import { type HttpService, startHttpService } from '../support/http-server.js';
import { freePort, useStack } from '../support/stack.js';
import { slowLoris } from '../support/slow-loris.js';
import { buildLocalApi, listenLocalApi } from '../../lib/local/server.js';

let base: string;
let service: HttpService | undefined;

before(async () => {
  await useStack();
  service = await startHttpService();
  base = service.url;
});

after(() => service?.close());

describe('the local API over real HTTP', () => {
  it('compresses large bodies with br or gzip as the client accepts, and leaves them alone otherwise', async () => {
    const raw = async (acceptEncoding?: string) =>
      new Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        http
          .get(`${base}/api/openapi.json`, { headers: acceptEncoding ? { 'accept-encoding': acceptEncoding } : {} }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (d: Buffer) => chunks.push(d));
            res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
          })
          .on('error', reject);
      });
    const plain = await raw();
    assert.equal(plain.headers['content-encoding'], undefined);
    const doc = JSON.parse(plain.body.toString('utf8')) as { openapi: string };
    assert.equal(doc.openapi, '3.1.0');
    const br = await raw('gzip, deflate, br');
    assert.equal(br.headers['content-encoding'], 'br');
    assert.match(String(br.headers.vary), /accept-encoding/i);
    assert.ok(br.body.length < plain.body.length / 5, `${br.body.length} of ${plain.body.length} bytes`);
    assert.deepEqual(brotliDecompressSync(br.body), plain.body);
    const gz = await raw('gzip;q=1, br;q=0.5');
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.deepEqual(gunzipSync(gz.body), plain.body);
    assert.equal((await raw('identity')).headers['content-encoding'], undefined);
  });

  it('answers verify and the receipt with an ETag, 304 for If-None-Match, and caches a final receipt for good', async () => {
    const account = await createAccount('pro');
    const device = new Device();
    const link = device.next();
    const anchored = await fetch(`${base}/api/v2/evidence/anchor`, json(link, { 'x-api-key': account.apiKey }));
    assert.equal(anchored.status, 200, await anchored.clone().text());
    for (const path of [`/api/v2/evidence/receipt/${link.sha256_hash}`, `/api/v2/evidence/verify/${link.sha256_hash}`, `/api/v1/chain/verify/${link.sha256_hash}`]) {
      // Until the record is final its answer may change between two reads (the confirmations grow
      // with every block the run's other files mine): then the second read is a 200 with another
      // ETag, never one with the tag it was sent. Read again until nothing changed in between.
      let tag: string | null = null;
      await waitFor(`a 304 for ${path}`, 30_000, async () => {
        const first = await fetch(`${base}${path}`);
        assert.equal(first.status, 200, path);
        tag = first.headers.get('etag');
        assert.match(tag ?? '', /^"[^"]+"$/, path);
        await first.arrayBuffer();
        const again = await fetch(`${base}${path}`, { headers: { 'if-none-match': tag as string } });
        if (again.status === 200) {
          assert.notEqual(again.headers.get('etag'), tag, `${path}: 200 with the ETag it was sent`);
          await again.arrayBuffer();
          return undefined;
        }
        assert.equal(again.status, 304, path);
        assert.equal(again.headers.get('etag'), tag);
        assert.equal((await again.arrayBuffer()).byteLength, 0);
        return true;
      });
      const other = await fetch(`${base}${path}`, { headers: { 'if-none-match': '"something-else"' } });
      assert.equal(other.status, 200, path);
      await other.arrayBuffer();
    }
    // Until its transaction is final, the receipt may still change: every use revalidates.
    const before = await fetch(`${base}/api/v2/evidence/receipt/${link.sha256_hash}`);
    const early = (await before.json()) as { ledger: { final?: unknown } };
    if (!early.ledger.final) assert.equal(before.headers.get('cache-control'), 'no-cache');
    // Once final (the reconciler's pass records it), it can no longer change: cached for good.
    await waitFor('the final receipt', 30_000, async () => {
      await reconcileAnchors(await getReconcileDeps(), { fullScan: true });
      return (await getEvidenceRepo().get(link.sha256_hash))?.ledger_final;
    });
    const after = await fetch(`${base}/api/v2/evidence/receipt/${link.sha256_hash}`);
    assert.ok(((await after.json()) as { ledger: { final?: unknown } }).ledger.final);
    assert.equal(after.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  });

  it('keeps the client working after a 413: the next request on the same keep-alive pool succeeds', async () => {
    // One pooled keep-alive socket, as a client library keeps it.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const send = (method: string, route: string, body?: string) =>
      new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
        const req = http.request(`${base}${route}`, { method, agent, headers: body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {} }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        });
        req.on('error', reject);
        req.end(body);
      });
    try {
      for (const route of ['/api/v2/evidence/hash', '/api/v2/account/register', '/api/v1/chain/anchor']) {
        const big = await send('POST', route, `{"x":"${'a'.repeat(100 * 1024)}"}`);
        assert.equal(big.status, 413, route);
        assert.equal(big.headers.connection, 'close');
        assert.equal((JSON.parse(big.text) as { code: string }).code, 'payload_too_large');
        // At once, and again after the ~500 ms the server used to wait before dropping the socket.
        assert.equal((await send('GET', '/api/v1/pq/info')).status, 200);
        await new Promise((r) => setTimeout(r, 600));
        assert.equal((await send('GET', '/api/v1/pq/info')).status, 200);
      }
    } finally {
      agent.destroy();
    }
  });

  it('answers 405 with Allow for a method a known path does not take, and 404 for an unknown path', async () => {
    const cases: [string, string, string][] = [
      ['GET', '/api/v2/evidence/anchor', 'POST'],
      ['DELETE', '/api/v2/account/keys', 'GET, HEAD, POST'],
      ['POST', `/api/v2/evidence/verify/${'ab'.repeat(32)}`, 'GET, HEAD, OPTIONS'],
      ['PUT', '/api/v1/health', 'GET, HEAD, OPTIONS'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await fetch(`${base}${path}`, { method });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get('allow'), allow, `${method} ${path}`);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      const problem = (await res.json()) as { code: string; allow: string[] };
      assert.equal(problem.code, 'method_not_allowed');
      assert.deepEqual(problem.allow, allow.split(', '));
    }
    const unknown = await fetch(`${base}/api/v2/nothing-here`, { method: 'DELETE' });
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { code: string }).code, 'not_found');
  });

  it('reports every part up on /api/v1/health', async () => {
    const res = await fetch(`${base}/api/v1/health`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { status: string; parts: Record<string, { status: string; chain_id?: number }> };
    assert.equal(body.status, 'ok');
    assert.deepEqual(Object.keys(body.parts).sort(), ['database', 'keys', 'ledger']);
    assert.equal(body.parts.ledger?.chain_id, 31337);
  });

  it('answers 503 naming the part that is down, and only why, when the chain node cannot be reached', async () => {
    const saved = process.env.LEDGER_RPC_URL;
    process.env.LEDGER_RPC_URL = `http://127.0.0.1:${await freePort()}`;
    resetCoreDeps();
    try {
      const res = await fetch(`${base}/api/v1/health`);
      assert.equal(res.status, 503);
      const text = await res.text();
      const body = JSON.parse(text) as { status: string; detail?: string; parts: Record<string, { status: string }> };
      assert.equal(body.status, 'degraded');
      assert.deepEqual(body.parts.ledger, { status: 'down', reason: 'unreachable' });
      assert.equal(body.detail, 'ledger: unreachable');
      assert.equal(body.parts.database?.status, 'up');
      // Never the node's address, the fetch/socket error or a stack.
      assert.doesNotMatch(text, /127\.0\.0\.1|ECONN|fetch failed|\bat [\w.]+ \(/);
    } finally {
      process.env.LEDGER_RPC_URL = saved;
      resetCoreDeps();
    }
  });

  it('answers 503 with database: unreachable when DynamoDB cannot be reached, without the SDK message', async () => {
    const saved = process.env.DYNAMODB_ENDPOINT;
    process.env.DYNAMODB_ENDPOINT = `http://127.0.0.1:${await freePort()}`;
    resetCoreDeps();
    try {
      const res = await fetch(`${base}/api/v1/health`);
      assert.equal(res.status, 503);
      const text = await res.text();
      const body = JSON.parse(text) as { detail?: string; parts: Record<string, { status: string }> };
      assert.deepEqual(body.parts.database, { status: 'down', reason: 'unreachable' });
      assert.equal(body.detail, 'database: unreachable');
      assert.equal(body.parts.ledger?.status, 'up');
      assert.doesNotMatch(text, /127\.0\.0\.1|ECONN|\bat [\w.]+ \(/);
    } finally {
      process.env.DYNAMODB_ENDPOINT = saved;
      resetCoreDeps();
    }
  });

  it('answers a CORS preflight on a public endpoint and not on an account endpoint', async () => {
    const pre = await fetch(`${base}/api/v2/evidence/verify/${'a'.repeat(64)}`, {
      method: 'OPTIONS',
      headers: { origin: 'https://insurer.example', 'access-control-request-method': 'GET' },
    });
    assert.equal(pre.headers.get('access-control-allow-origin'), '*');
    const acct = await fetch(`${base}/api/v2/account/info`, { headers: { origin: 'https://insurer.example' } });
    assert.equal(acct.headers.get('access-control-allow-origin'), null);
  });

  it('refuses a body over 64 KiB with 413 problem+json', async () => {
    const res = await fetch(`${base}/api/v2/account/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'a@example.com', password: 'x'.repeat(70_000) }),
    });
    assert.equal(res.status, 413);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
  });

  it('answers an unknown route with a 404 problem and every response with a request id', async () => {
    const res = await fetch(`${base}/api/v3/nothing`);
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { code: string }).code, 'not_found');
    const ok = await fetch(`${base}/api/v1/health`);
    assert.match(ok.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });

  /** A raw HTTP/1.1 exchange over a socket (fetch cannot send a backslash or oversized headers). */
  function raw(request: string): Promise<{ status: number; headers: string; body: string }> {
    const url = new URL(base);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(url.port), url.hostname, () => socket.write(request));
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString('utf8')));
      socket.on('error', reject);
      socket.on('close', () => {
        const [head = '', body = ''] = data.split('\r\n\r\n');
        resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), headers: head.toLowerCase(), body });
      });
    });
  }

  it('answers a backslash in the path with 400 problem+json, not an empty body', async () => {
    const res = await raw(`GET /api/v2/evidence/verify/ab\\cd HTTP/1.1\r\nHost: ${new URL(base).host}\r\nConnection: close\r\n\r\n`);
    assert.equal(res.status, 400);
    assert.match(res.headers, /content-type: application\/problem\+json/);
    const problem = JSON.parse(res.body) as { code: string; status: number; detail: string };
    assert.equal(problem.code, 'malformed_request');
    assert.equal(problem.status, 400);
    assert.match(problem.detail, /backslash/);
  });

  it('gives the problems the server writes itself an absolute type under PUBLIC_BASE_URL, as every function does (issue 34)', async () => {
    const host = new URL(base).host;
    const types: Record<string, string> = {};
    const unknown = await fetch(`${base}/api/v3/nothing`);
    const notFound = (await unknown.json()) as { type: string; instance?: string; request_id?: string };
    types.not_found = notFound.type;
    // Shaped as the functions' problems are: the path, and the request id the response names.
    assert.equal(notFound.instance, '/api/v3/nothing');
    assert.equal(notFound.request_id, unknown.headers.get('x-request-id'));
    types.malformed_request = (JSON.parse((await raw(`GET /api/v2/evidence/verify/ab\\cd HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)).body) as { type: string }).type;
    types.headers_too_large = (JSON.parse((await raw(`GET /api/v1/health HTTP/1.1\r\nHost: ${host}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)).body) as { type: string }).type;
    const garbage = await raw('NOT HTTP AT ALL\r\n\r\n');
    assert.equal(garbage.status, 400);
    types['malformed_request (unparsable)'] = (JSON.parse(garbage.body) as { type: string }).type;
    // A problem a function wrote, for comparison.
    const fromFunction = (await (await fetch(`${base}/api/v2/evidence/verify/abc`)).json()) as { type: string };
    assert.equal(fromFunction.type, `${base}/problems/invalid_request`);
    assert.deepEqual(types, {
      not_found: `${base}/problems/not_found`,
      malformed_request: `${base}/problems/malformed_request`,
      headers_too_large: `${base}/problems/headers_too_large`,
      'malformed_request (unparsable)': `${base}/problems/malformed_request`,
    });
  });

  it('answers oversized headers with 431 problem+json and closes the connection', async () => {
    const res = await raw(`GET /api/v1/health HTTP/1.1\r\nHost: ${new URL(base).host}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.equal(res.status, 431);
    assert.match(res.headers, /content-type: application\/problem\+json/);
    assert.match(res.headers, /connection: close/);
    assert.equal((JSON.parse(res.body) as { code: string }).code, 'headers_too_large');
  });
});

describe('the local API closes requests that never finish (issue 34)', () => {
  let slow: { url: string; close: () => Promise<void> } | undefined;
  before(async () => {
    const server = await listenLocalApi(await buildLocalApi(), { port: 0, hostname: '127.0.0.1', headersTimeoutMs: 1000, requestTimeoutMs: 2000 });
    slow = {
      url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  });
  after(() => slow?.close());

  const timedOut = (answer: string) => {
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 408 Request Timeout\r\n/, answer);
    assert.match(head.toLowerCase(), /content-type: application\/problem\+json/);
    assert.match(head.toLowerCase(), /connection: close/);
    const problem = JSON.parse(body) as { code: string; status: number; type: string };
    assert.equal(problem.code, 'request_timeout');
    assert.equal(problem.status, 408);
    assert.match(problem.type, /^http:\/\/.+\/problems\/request_timeout$/);
  };

  it('closes a connection whose headers never end (a header line every 100 ms), answering 408 problem+json', async () => {
    const { answer } = await slowLoris(slow?.url ?? '', `GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n`, 'X-Slow: 1\r\n');
    timedOut(answer);
  });

  it('closes a connection whose body never ends (a byte every 100 ms of a 1,000-byte body), answering 408 problem+json', async () => {
    const head = 'POST /api/v2/account/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"email":"';
    const { answer } = await slowLoris(slow?.url ?? '', head, 'a');
    timedOut(answer);
  });
});
