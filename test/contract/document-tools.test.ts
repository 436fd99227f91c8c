import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { app as openapiApp } from '../../functions/openapi.js';
import { type HttpService, startHttpService } from '../support/http-server.js';
import { useStack } from '../support/stack.js';

await useStack();
const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..', '..');
const bin = (name: string) => path.join(ROOT, 'node_modules', '.bin', name);
let dir: string;
let docFile: string;
let service: HttpService;

before(async () => {
  service = await startHttpService();
  dir = await mkdtemp(path.join(os.tmpdir(), 'contract-'));
  docFile = path.join(dir, 'openapi.json');
  const res = await openapiApp.request('/api/openapi.json');
  assert.equal(res.status, 200);
  await writeFile(docFile, await res.text());
});
after(async () => {
  await service?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('the served OpenAPI document with the tools of the ecosystem', () => {
  it('passes @redocly/cli lint with the recommended rules: no error, no warning', async () => {
    const out = await run(bin('redocly'), ['lint', docFile, '--format=json'], { cwd: dir, maxBuffer: 16 << 20 }).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }));
    const report = JSON.parse(out.stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string }[] };
    assert.deepEqual(report.problems.map((p) => `${p.ruleId}: ${p.message}`), []);
    assert.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 });
  });

  it('generates a typed client (openapi-typescript) that compiles the README anchor body unchanged and runs the README flow', async () => {
    await run(bin('openapi-typescript'), [docFile, '-o', path.join(dir, 'api.d.ts')], { cwd: dir });
    // The README's anchor request, field for field (previous_hash: null at index 0), and the flow's operations.
    // The README's flow as a typed program: register, the operator's upgrade, the README's anchor
    // request field for field (previous_hash: null at index 0), verify, receipt. tsc checks every
    // body and answer against the generated types, then the program runs against the real server.
    await writeFile(
      path.join(dir, 'client.ts'),
      `import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import type { paths } from './api.js';
type Body<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type Ok<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { responses: { 200: { content: { 'application/json': infer R } } } } ? R : never;
const base = process.argv[2] as string;
async function call<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(base + path, { method, headers: { 'content-type': 'application/json', ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  if (res.status !== 200) throw new Error(method + ' ' + path + ': ' + res.status + ' ' + (await res.text()));
  return (await res.json()) as T;
}
const register: Body<'/api/v2/account/register', 'post'> = { email: 'typed-' + Date.now() + '@example.com', password: 'a long enough password' };
const account = await call<Ok<'/api/v2/account/register', 'post'>>('POST', '/api/v2/account/register', register);
const upgrade: Body<'/api/v2/admin/accounts/{account_id}/tier', 'put'> = { tier: 'pro' };
await call('PUT', '/api/v2/admin/accounts/' + account.account_id + '/tier', upgrade, { authorization: 'Bearer ' + process.env.ADMIN_TOKEN });
const photo = Buffer.from('a photo taken at ' + Date.now());
const imageHash = createHash('sha256').update(photo).digest('hex');
const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const publicKeyHex = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('hex');
const chainHash = createHash('sha256').update(Buffer.alloc(32)).update(Buffer.from(imageHash, 'hex')).digest('hex');
const signatureHex = sign(null, Buffer.from(imageHash, 'hex'), privateKey).toString('hex');
const anchorBody: Body<'/api/v2/evidence/anchor', 'post'> = {
    sha256_hash: imageHash, chain_index: 0, chain_hash: chainHash, previous_hash: null,
    signature_hex: signatureHex, public_key_hex: publicKeyHex,
};
const anchored = await call<Ok<'/api/v2/evidence/anchor', 'post'>>('POST', '/api/v2/evidence/anchor', anchorBody, { 'x-api-key': account.api_key });
const verified = await call<Ok<'/api/v2/evidence/verify/{image_hash}', 'get'>>('GET', '/api/v2/evidence/verify/' + imageHash);
const receipt = await call<Ok<'/api/v2/evidence/receipt/{image_hash}', 'get'>>('GET', '/api/v2/evidence/receipt/' + imageHash);
const previous: string | null = receipt.device.previous_hash;
console.log(JSON.stringify({ status: anchored.status, tx: anchored.tx_hash, verified: verified.verified, token: receipt.timestamp.token.length > 0, previous }));
`,
    );
    await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    await writeFile(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', skipLibCheck: true, types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')], outDir: 'out' },
        files: ['client.ts'],
      }),
    );
    const tsc = await run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { cwd: dir }).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? 'failed' }));
    assert.equal(tsc.stdout.trim(), '');
    const out = await run(process.execPath, [path.join(dir, 'out', 'client.js'), service.url], { cwd: dir, env: process.env });
    assert.deepEqual(JSON.parse(out.stdout.trim()), { status: 'anchored', tx: JSON.parse(out.stdout.trim()).tx, verified: true, token: true, previous: null });
    assert.match(JSON.parse(out.stdout.trim()).tx, /^0x[0-9a-f]{64}$/);
  });
});
