import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { app as openapiApp } from '../../functions/openapi.js';
import { useStack } from '../support/stack.js';

await useStack();
const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..', '..');
const bin = (name: string) => path.join(ROOT, 'node_modules', '.bin', name);
let dir: string;
let docFile: string;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'contract-'));
  docFile = path.join(dir, 'openapi.json');
  const res = await openapiApp.request('/api/openapi.json');
  assert.equal(res.status, 200);
  await writeFile(docFile, await res.text());
});
after(() => rm(dir, { recursive: true, force: true }));

describe('the served OpenAPI document with the tools of the ecosystem', () => {
  it('passes @redocly/cli lint with the recommended rules: no error, no warning', async () => {
    const out = await run(bin('redocly'), ['lint', docFile, '--format=json'], { cwd: dir, maxBuffer: 16 << 20 }).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }));
    const report = JSON.parse(out.stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string }[] };
    assert.deepEqual(report.problems.map((p) => `${p.ruleId}: ${p.message}`), []);
    assert.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 });
  });

  it('generates a typed client (openapi-typescript) that compiles the README anchor body unchanged and the README flow', async () => {
    await run(bin('openapi-typescript'), [docFile, '-o', path.join(dir, 'api.d.ts')], { cwd: dir });
    // The README's anchor request, field for field (previous_hash: null at index 0), and the flow's operations.
    await writeFile(
      path.join(dir, 'client.ts'),
      `import type { operations, paths } from './api.js';
type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type AnchorBody = Json<paths['/api/v2/evidence/anchor']['post']['requestBody']>;
declare const imageHash: string, chainHash: string, signatureHex: string, publicKeyHex: string;
export const body: AnchorBody = {
    sha256_hash: imageHash, chain_index: 0, chain_hash: chainHash, previous_hash: null,
    signature_hex: signatureHex, public_key_hex: publicKeyHex,
};
export const register: Json<operations['registerAccount']['requestBody']> = { email: 'alice@example.com', password: 'a long enough password' };
export type Registered = Json<operations['registerAccount']['responses'][200]>;
export const apiKeyOf = (r: Registered): string => r.api_key;
export type Anchored = Json<operations['anchorEvidence']['responses'][200]>;
export const txOf = (a: Anchored): string => a.tx_hash;
export type Verified = Json<operations['verifyEvidence']['responses'][200]>;
export const verdict = (v: Verified): boolean => v.verified;
export type Receipt = Json<operations['getEvidenceReceipt']['responses'][200]>;
export const tokenOf = (r: Receipt): string => r.timestamp.token;
export const rootOf = (r: Receipt): string | undefined => r.timestamp.tsa_certificates.at(-1);
export const previousOf = (r: Receipt): string | null => r.device.previous_hash;
export type Problem = Json<operations['anchorEvidence']['responses'][409]> extends never ? never : { code: string };
`,
    );
    await writeFile(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', skipLibCheck: false, lib: ['es2022'] }, files: ['client.ts'] }),
    );
    const tsc = await run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { cwd: dir }).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? 'failed' }));
    assert.equal(tsc.stdout.trim(), '');
  });
});
