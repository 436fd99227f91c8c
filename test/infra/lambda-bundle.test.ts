/**
 * The Lambda bundles as `osls package` builds them: esbuild with serverless.yml's custom.esbuild
 * options and the plugin list of infra/esbuild-plugins.cjs. The anchor function's bundle must
 * carry liboqs' ML-DSA-65 module and sign with it in a fresh Node process (the Lambda runtime
 * has no node_modules of ours); zod's locales are cut to English without changing a message.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, describe, test } from 'node:test';
import { type Plugin, build } from 'esbuild';
import { hexToBytes } from '../../lib/crypto/hash.js';
import { verifyMlDsa65 } from '../../lib/crypto/ml-dsa.js';
import { getSigner } from '../../lib/deps/anchoring.js';
import { resetCoreDeps } from '../../lib/deps/core.js';
import { app as anchorApp } from '../../functions/v2/evidence-anchor.js';
import { app as receiptApp } from '../../functions/v2/evidence-receipt.js';
import { app as hashApp } from '../../functions/v2/evidence-hash.js';
import { createAccount, Device, randomHash } from '../support/client.js';
import registry from '../../infra/functions.json' with { type: 'json' };
import type * as Registry from '../../infra/registry.cjs';
import { BANNER, SERVERLESS_ESBUILD } from '../support/serverless-esbuild.js';
import { useStack } from '../support/stack.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const require = createRequire(import.meta.url);
const plugins = require('../../infra/esbuild-plugins.cjs') as Plugin[];
const ANCHOR_ENTRY = 'functions/v2/evidence-anchor.ts';
const HASH_ENTRY = 'functions/v2/evidence-hash.ts';
const LIBOQS_DIST = /node_modules\/@oqs\/liboqs-js\/dist\//;
const ZOD_LOCALE = /node_modules\/zod\/v4\/locales\//;
const OPENAPI_ENTRY = 'functions/openapi.ts';
const METHOD_NOT_ALLOWED_ENTRY = 'functions/gateway/method-not-allowed.ts';
const REGISTRY_JSON = 'infra/functions.json';

const without = (name: string) => plugins.filter((p) => p.name !== name);

/*
 * What each function's bundle may weigh and which heavy packages it carries: `bundle` of its entry
 * in infra/functions.json ({ maxKiB, heavy, note }), measured sizes plus 1 to 3 %, and exactly
 * today's heavy packages. A bundle that gains ethers, pkijs, ML-DSA or jose (the verify, hash and
 * account functions must not load them), or grows past its budget, fails here rather than only in
 * the bench. A bundle that sheds one: update its entry.
 */

/** Heavy packages by the path of their files in esbuild's metafile (as bench/cold-start.ts names them). */
const HEAVY: Record<string, RegExp> = {
  ethers: /node_modules\/(ethers|@adraffy|aes-js)\//,
  pkijs: /node_modules\/(pkijs|asn1js|pvtsutils|pvutils|bytestreamjs|@peculiar)\//,
  '@noble/post-quantum': /node_modules\/@noble\/post-quantum\//,
  '@oqs/liboqs-js': /node_modules\/@oqs\//,
  jose: /node_modules\/jose\//,
  'pdf-lib': /node_modules\/(pdf-lib|@pdf-lib|@signpdf|qrcode|dejavu-fonts-ttf)\//,
};

interface Bundle {
  inputs: string[];
  bytes: number;
  /** The bundled modules that import infra/functions.json. */
  registryImporters: string[];
  /** Bytes of infra/functions.json in the output. */
  registryBytes: number;
}

async function bundle(entry: string, pluginList: Plugin[], outfile?: string): Promise<Bundle> {
  const result = await build({
    ...SERVERLESS_ESBUILD,
    entryPoints: [path.join(ROOT, entry)],
    plugins: pluginList,
    metafile: true,
    ...(outfile ? { outfile } : { outfile: path.join(ROOT, '.esbuild', 'test', 'bundle.mjs'), write: false }),
    absWorkingDir: ROOT,
    logLevel: 'silent',
  });
  const output = Object.values(result.metafile.outputs)[0];
  assert.ok(output, 'esbuild wrote no output');
  const registryImporters = Object.entries(result.metafile.inputs)
    .filter(([, input]) => input.imports.some((i) => i.path === REGISTRY_JSON))
    .map(([file]) => file);
  return { inputs: Object.keys(output.inputs), bytes: output.bytes, registryImporters, registryBytes: output.inputs[REGISTRY_JSON]?.bytesInOutput ?? 0 };
}

/** API Gateway HTTP API payload 2.0, as test/fixtures/apigw describes it. */
function apiGatewayEvent(method: string, rawPath: string, headers: Record<string, string>, body: unknown) {
  return {
    version: '2.0',
    routeKey: `${method} ${rawPath}`,
    rawPath,
    rawQueryString: '',
    headers: { 'content-type': 'application/json', host: 'a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com', ...headers },
    requestContext: {
      accountId: '123456789012',
      apiId: 'a1b2c3d4e5',
      domainName: 'a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com',
      domainPrefix: 'a1b2c3d4e5',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '198.51.100.23', userAgent: 'bundle-test' },
      requestId: `req-${randomHash().slice(0, 12)}`,
      routeKey: `${method} ${rawPath}`,
      stage: '$default',
      time: '22/Nov/2026:08:14:04 +0000',
      timeEpoch: Date.now(),
    },
    body: JSON.stringify(body),
    isBase64Encoded: false,
  };
}

interface LambdaAnswer {
  statusCode: number;
  body: string;
}

/**
 * Imports the bundle in a fresh Node process (no tsx, no loader, cwd = the bundle's directory)
 * and runs its `handler` on each event in turn. Asynchronous: the child talks to this process's
 * embedded DynamoDB.
 */
async function invokeBundle(dir: string, bundleFile: string, events: unknown[]): Promise<LambdaAnswer[]> {
  const eventsFile = path.join(dir, `events-${randomHash().slice(0, 8)}.json`);
  const resultsFile = `${eventsFile}.out`;
  await writeFile(eventsFile, JSON.stringify(events));
  const script = `
    import { readFileSync, writeFileSync } from 'node:fs';
    import { pathToFileURL } from 'node:url';
    const [bundle, eventsFile, resultsFile] = process.argv.slice(1);
    const { handler } = await import(pathToFileURL(bundle).href);
    const context = { awsRequestId: 'bundle-test', functionName: 'v2EvidenceAnchor', getRemainingTimeInMillis: () => 10000 };
    const answers = [];
    for (const event of JSON.parse(readFileSync(eventsFile, 'utf8'))) {
      const res = await handler(event, context);
      answers.push({ statusCode: res.statusCode, body: res.isBase64Encoded ? Buffer.from(res.body, 'base64').toString('utf8') : res.body });
    }
    writeFileSync(resultsFile, JSON.stringify(answers));
    process.exit(0);`;
  // No NODE_OPTIONS: nothing of this process's loaders (tsx) may help the bundle.
  const env: NodeJS.ProcessEnv = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
  delete env.NODE_OPTIONS;
  try {
    await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, bundleFile, eventsFile, resultsFile], { cwd: dir, env, timeout: 60_000 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    assert.fail(`the bundle failed in a fresh Node process: ${e.stderr || e.message}`);
  }
  return JSON.parse(await readFile(resultsFile, 'utf8')) as LambdaAnswer[];
}

after(() => resetCoreDeps());
await useStack();

const dir = await mkdtemp(path.join(os.tmpdir(), 'evidence-bundle-'));
// Bare specifiers the bundle leaves external (@aws-sdk/*) resolve from here, as the Lambda
// runtime resolves them from its own; liboqs' module must be inside the bundle either way.
await symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
after(() => rm(dir, { recursive: true, force: true }));

describe('the bundles osls package builds', () => {
  test('serverless.yml builds with the options and the plugin list this test uses', () => {
    const yml = readFileSync(path.join(ROOT, 'serverless.yml'), 'utf8');
    const block = /\n {2}esbuild:\n((?: {4}.*\n|\s*\n)+)/.exec(yml)?.[1] ?? '';
    for (const line of [
      'bundle: true', 'minify: true', 'keepNames: false', 'format: esm', 'platform: node', 'target: node24',
      'mainFields: [module, main]', "exclude: ['@aws-sdk/*']", `js: "${BANNER}"`, 'plugins: ./infra/esbuild-plugins.cjs',
    ]) {
      assert.ok(block.split('\n').some((l) => l.trim() === line), `serverless.yml custom.esbuild: expected "${line}"`);
    }
    const names = plugins.map((p) => p.name);
    for (const name of ['forbid-local-stack', 'liboqs-wasm-import', 'zod-english-locale-only', 'aws-sdk-require', 'openapi-sources', 'registry-route-fields']) assert.ok(names.includes(name), `plugin list: ${names.join(', ')}`);
  });

  describe('v2EvidenceAnchor', () => {
    const anchorFile = path.join(dir, 'v2EvidenceAnchor.mjs');
    let built: Bundle | undefined;
    const built$ = () => (built ? Promise.resolve(built) : bundle(ANCHOR_ENTRY, plugins, anchorFile).then((b) => (built = b)));

    test('carries liboqs’ ML-DSA-65 module (the WASM inlined in dist/ml-dsa-65.min.js) and no other liboqs algorithm', async (t) => {
      const { inputs, bytes } = await built$();
      assert.deepEqual(inputs.filter((i) => LIBOQS_DIST.test(i)), ['node_modules/@oqs/liboqs-js/dist/ml-dsa-65.min.js']);
      assert.deepEqual(inputs.filter((i) => /liboqs-js\/src\/algorithms\//.test(i)), ['node_modules/@oqs/liboqs-js/src/algorithms/sig/ml-dsa/ml-dsa-65.js']);
      t.diagnostic(`v2EvidenceAnchor bundle: ${(bytes / 1024).toFixed(0)} KB`);
    });

    test('signs in a fresh Node process: the anchor’s ML-DSA-65 signature verifies with verifyMlDsa65 under the service key', async () => {
      await built$();
      const account = await createAccount('pro');
      const device = new Device();
      const body = device.next();
      const [answer] = await invokeBundle(dir, anchorFile, [apiGatewayEvent('POST', '/api/v2/evidence/anchor', { 'x-api-key': account.apiKey }, body)]);
      assert.ok(answer);
      assert.equal(answer.statusCode, 200, answer.body);
      const anchored = JSON.parse(answer.body) as { status: string; pq_signed: boolean; server_hash: string };
      assert.equal(anchored.status, 'anchored');
      assert.equal(anchored.pq_signed, true);

      const res = await receiptApp.request(`/api/v2/evidence/receipt/${body.sha256_hash}`);
      assert.equal(res.status, 200, await res.clone().text());
      const receipt = (await res.json()) as { server_hash: string; pq_signature: { public_key: string; signature: string; key_id?: string } };
      assert.equal(receipt.server_hash, anchored.server_hash);
      const publicKey = Buffer.from(receipt.pq_signature.public_key, 'base64');
      assert.deepEqual(Uint8Array.from(publicKey), await (await getSigner()).publicKey(), 'signed with the service key');
      const signature = Buffer.from(receipt.pq_signature.signature, 'base64');
      assert.equal(verifyMlDsa65(signature, hexToBytes(anchored.server_hash), publicKey), true);
      const tampered = Uint8Array.from(signature);
      tampered[100]! ^= 1;
      assert.equal(verifyMlDsa65(tampered, hexToBytes(anchored.server_hash), publicKey), false);
    });

    test('validation errors of the bundle (zod English only) are word for word those of the unbundled app', async () => {
      await built$();
      const account = await createAccount('pro');
      const good = new Device().next();
      const bodies: unknown[] = [
        {},
        { ...good, sha256_hash: 'not-a-hash' },
        { ...good, chain_index: -1, previous_hash: 7, public_key_hex: 'zz' },
        { ...good, unexpected: true },
        [],
      ];
      const events = bodies.map((b) => apiGatewayEvent('POST', '/api/v2/evidence/anchor', { 'x-api-key': account.apiKey }, b));
      const bundled = await invokeBundle(dir, anchorFile, events);
      const normalize = (text: string) => {
        const { request_id: _r, ...rest } = JSON.parse(text) as Record<string, unknown>;
        return rest;
      };
      let messages = 0;
      for (const [i, event] of events.entries()) {
        const local = await anchorApp.request(event.rawPath, { method: 'POST', headers: event.headers, body: event.body });
        const localBody = await local.text();
        assert.equal(bundled[i]?.statusCode, local.status, `body ${i}: ${bundled[i]?.body}`);
        assert.equal(local.status, 400, `body ${i}: ${localBody}`);
        assert.deepEqual(normalize(bundled[i]?.body ?? '{}'), normalize(localBody), `body ${i}`);
        const errors = (normalize(localBody).errors ?? []) as { message: string }[];
        messages += errors.length;
        // zod's English messages name what was expected; without a locale zod says only "Invalid input".
        for (const e of errors) assert.notEqual(e.message, 'Invalid input', `body ${i}: ${JSON.stringify(e)}`);
      }
      assert.ok(messages >= bodies.length, `only ${messages} field errors`);
    });

    test('without liboqs-wasm-import the bundle cannot sign (the module is left outside it)', async () => {
      const file = path.join(dir, 'v2EvidenceAnchor-no-liboqs-plugin.mjs');
      const { inputs } = await bundle(ANCHOR_ENTRY, without('liboqs-wasm-import'), file);
      assert.deepEqual(inputs.filter((i) => LIBOQS_DIST.test(i)), []);
      const account = await createAccount('pro');
      const [answer] = await invokeBundle(dir, file, [apiGatewayEvent('POST', '/api/v2/evidence/anchor', { 'x-api-key': account.apiKey }, new Device().next())]);
      assert.equal(answer?.statusCode, 503, answer?.body);
      assert.match(answer?.body ?? '', /signer_unavailable/);
    });
  });

  test('the Starter functions load neither ethers nor the ledger sender unless they time-stamp through the anchoring deps', async (t) => {
    const entries = [
      'functions/v2/evidence-timestamp.ts',
      'functions/v2/tsa.ts',
      'functions/v2/tsa-certificates.ts',
      'functions/v2/evidence-sign.ts',
      'functions/web/jwks.ts',
      'functions/web/trust-anchors.ts',
    ];
    for (const entry of entries) {
      const { inputs, bytes } = await bundle(entry, plugins);
      assert.deepEqual(inputs.filter((i) => i.includes('node_modules/ethers/')), [], `${entry} bundles ethers`);
      assert.deepEqual(inputs.filter((i) => LIBOQS_DIST.test(i)), [], `${entry} bundles liboqs`);
      if (!/timestamp|tsa\.ts$/.test(entry)) {
        // Publishing keys and signing with Ed25519 need no ledger code beyond its error types.
        assert.deepEqual(inputs.filter((i) => /^lib\/ledger\/(sender|nonces|kms-signer)\.ts$/.test(i)), [], `${entry} bundles the ledger sender`);
      }
      t.diagnostic(`${entry}: ${(bytes / 1024).toFixed(0)} KB`);
    }
  });

  test('v2EvidenceCertificate signs a PDF in a fresh Node process: its fonts are inside the bundle (inline-font-files)', async () => {
    const file = path.join(dir, 'v2EvidenceCertificate.mjs');
    const { inputs } = await bundle('functions/v2/evidence-certificate.ts', plugins, file);
    assert.ok(inputs.some((i) => /dejavu-fonts-ttf\/ttf\/DejaVuSans\.ttf$/.test(i)), 'the font files are bundled');
    const account = await createAccount('starter');
    const hash = randomHash();
    const reg = await hashApp.request('/api/v2/evidence/hash', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': account.apiKey }, body: JSON.stringify({ sha256_hash: hash }) });
    assert.equal(reg.status, 200);
    const [answer] = await invokeBundle(dir, file, [{ ...apiGatewayEvent('GET', `/api/v2/evidence/certificate/${hash}`, { 'x-api-key': account.apiKey }, null), body: undefined }]);
    assert.equal(answer?.statusCode, 200, answer?.body);
    assert.ok(answer?.body.startsWith('%PDF-'), 'a PDF');
  });

  test('zod-english-locale-only keeps English alone of zod’s locales (v2EvidenceHash)', async (t) => {
    const withPlugin = await bundle(HASH_ENTRY, plugins);
    const withoutPlugin = await bundle(HASH_ENTRY, without('zod-english-locale-only'));
    assert.deepEqual(withPlugin.inputs.filter((i) => ZOD_LOCALE.test(i)).sort(), ['node_modules/zod/v4/locales/en.js', 'node_modules/zod/v4/locales/index.js']);
    const locales = readdirSync(path.join(ROOT, 'node_modules', 'zod', 'v4', 'locales')).filter((f) => /^(?!index\.)[\w-]+\.js$/.test(f));
    assert.ok(locales.length > 50, `${locales.length} locale files`);
    assert.equal(withoutPlugin.inputs.filter((i) => ZOD_LOCALE.test(i) && !/index\.js$/.test(i)).length, locales.length);
    assert.ok(withoutPlugin.bytes - withPlugin.bytes > 200 * 1024, `saved only ${withoutPlugin.bytes - withPlugin.bytes} bytes`);
    t.diagnostic(`v2EvidenceHash bundle: ${(withoutPlugin.bytes / 1024).toFixed(0)} KB → ${(withPlugin.bytes / 1024).toFixed(0)} KB`);
  });

  test('every function stays within its size budget and carries only today’s heavy packages (infra/functions.json bundle)', async (t) => {
    const functions = [...registry.http, ...registry.scheduled, ...registry.gateway, ...registry.stream];
    // Every function is measured; the failures are reported together (one run shows every budget to re-measure).
    const over: string[] = [];
    for (const f of functions) {
      const budget = f.bundle;
      assert.ok(budget, `${f.name}: no bundle budget in infra/functions.json`);
      for (const pkg of budget.heavy) assert.ok(pkg in HEAVY, `${f.name}: bundle.heavy names "${pkg}", not one of ${Object.keys(HEAVY).join(', ')}`);
      const { inputs, bytes, registryImporters } = await bundle(f.file, plugins);
      const heavy = Object.keys(HEAVY).filter((pkg) => inputs.some((i) => HEAVY[pkg]?.test(i)));
      if (JSON.stringify(heavy) !== JSON.stringify(budget.heavy)) over.push(`${f.name} carries ${heavy.join(', ') || 'no heavy package'}, its budget names ${budget.heavy.join(', ') || 'none'}`);
      if (bytes > budget.maxKiB * 1024) over.push(`${f.name}: ${(bytes / 1024).toFixed(1)} KiB, budget ${budget.maxKiB} KiB (${bytes - budget.maxKiB * 1024} bytes over)`);
      // registry-route-fields trims the registry to what lib/http/registry.ts declares: no other module may read it in a bundle.
      assert.deepEqual(registryImporters.filter((i) => i !== 'lib/http/registry.ts'), [], `${f.name}: only lib/http/registry.ts may read ${REGISTRY_JSON} in a bundle`);
      t.diagnostic(`${f.name}: ${(bytes / 1024).toFixed(1)} KiB of ${budget.maxKiB}`);
    }
    assert.deepEqual(over, []);
  });

  test('the openapi bundle serves, in a fresh Node process, the very document of the unbundled function (openapi-sources, registry-route-fields)', async () => {
    const file = path.join(dir, 'openapi.mjs');
    const { inputs } = await bundle(OPENAPI_ENTRY, plugins, file);
    const { app: openapiApp } = await import('../../functions/openapi.js');
    const local = await openapiApp.request('/api/openapi.json');
    assert.equal(local.status, 200);
    const expected = (await local.json()) as { paths: Record<string, Record<string, { operationId?: string }>> };
    const [answer] = await invokeBundle(dir, file, [{ ...apiGatewayEvent('GET', '/api/openapi.json', {}, null), body: undefined }]);
    assert.equal(answer?.statusCode, 200, answer?.body);
    assert.deepEqual(JSON.parse(answer?.body ?? '{}'), expected);
    // Every documented module is inside the bundle, imported statically from the registry's list.
    for (const source of (require('../../infra/registry.cjs') as typeof Registry).openApiSources()) assert.ok(inputs.includes(source.module), `${source.name}: ${source.module} is not in the openapi bundle`);
    assert.ok(Object.values(expected.paths).some((item) => item.post?.operationId === 'anchorEvidence'), 'operationIds come from the trimmed registry');
    // Without the plugin the modules are left to a computed import() the bundle cannot follow.
    const bare = await bundle(OPENAPI_ENTRY, without('openapi-sources'));
    assert.ok(!bare.inputs.includes('functions/v2/evidence-hash.ts'), 'without openapi-sources the documented apps are not bundled');
  });

  test('methodNotAllowed answers 405 with Allow from the trimmed registry in a fresh Node process, as the unbundled function does', async () => {
    const file = path.join(dir, 'methodNotAllowed.mjs');
    const trimmed = await bundle(METHOD_NOT_ALLOWED_ENTRY, plugins, file);
    const { app: gatewayApp } = await import('../../functions/gateway/method-not-allowed.js');
    const requests: [string, string][] = [['DELETE', '/api/v2/evidence/hash'], ['POST', '/api/v2/evidence/verify/' + 'ab'.repeat(32)], ['PUT', '/api/v2/account/keys']];
    const answers = await invokeBundle(dir, file, requests.map(([method, p]) => ({ ...apiGatewayEvent(method, p, {}, null), body: undefined })));
    const normalize = (text: string) => {
      const { request_id: _r, ...rest } = JSON.parse(text) as Record<string, unknown>;
      return rest;
    };
    for (const [i, [method, p]] of requests.entries()) {
      const local = await gatewayApp.request(p, { method });
      assert.equal(answers[i]?.statusCode, 405, answers[i]?.body);
      assert.equal(local.status, 405);
      assert.deepEqual(normalize(answers[i]?.body ?? '{}'), normalize(await local.text()), `${method} ${p}`);
    }
    // The deployment data (access maps, KMS needs, budgets and their notes) stays out of the bundle.
    const full = await bundle(METHOD_NOT_ALLOWED_ENTRY, without('registry-route-fields'));
    assert.ok(trimmed.registryBytes > 0 && trimmed.registryBytes < full.registryBytes / 3, `registry in the bundle: ${trimmed.registryBytes} bytes trimmed, ${full.registryBytes} whole`);
  });
});
