/**
 * Cold start of every function of infra/functions.json: bundled with esbuild exactly as
 * serverless.yml's custom.esbuild configures serverless-esbuild (bundle, minify, keepNames, ESM,
 * platform node, target node24, mainFields module/main, @aws-sdk/* external, the createRequire
 * banner, infra/esbuild-plugins.cjs), into a temp dir; then each bundle is imported in a fresh
 * Node process, 5 times (the median is reported). The AWS SDK stays external as on Lambda (the
 * nodejs24.x runtime provides it), so its load time is part of the import and also measured alone.
 *
 * Which heavy packages each bundle contains comes from esbuild's metafile (bytes in the output).
 * `npm run bench` runs it; alone: `npx tsx bench/cold-start.ts` (prints a JSON line;
 * BENCH_COLD_RUNS=5, BENCH_COLD_ONLY=v2EvidenceHash,v2EvidenceVerify to restrict).
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, stat, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type BuildOptions, type Metafile, type Plugin } from 'esbuild';
import registry from '../infra/functions.json' with { type: 'json' };
import { SERVERLESS_ESBUILD } from '../test/support/serverless-esbuild.js';
import type { ColdRow } from './lib/report.js';
import { REPO_ROOT } from './lib/proc.js';

const require = createRequire(import.meta.url);
const plugins = require(path.join(REPO_ROOT, 'infra', 'esbuild-plugins.cjs')) as Plugin[];
const RUNS = Number(process.env.BENCH_COLD_RUNS ?? 5) || 5;
const only = (process.env.BENCH_COLD_ONLY ?? '').split(',').filter(Boolean);

/** Packages worth naming, by the path prefix of their files in the metafile. */
const HEAVY: Record<string, RegExp> = {
  ethers: /node_modules\/(ethers|@adraffy|aes-js)\//,
  pkijs: /node_modules\/(pkijs|asn1js|pvtsutils|pvutils|bytestreamjs|@peculiar)\//,
  '@noble/post-quantum': /node_modules\/@noble\/post-quantum\//,
  jose: /node_modules\/jose\//,
  hono: /node_modules\/(hono|@hono)\//,
  zod: /node_modules\/(zod|@asteasolutions)\//,
};

/** Code that only signing needs: none of it may be in a verification bundle (found by class name). */
const SIGNING_MARKERS: Record<string, RegExp> = {
  'ML-DSA signer classes': /\b(LocalMlDsaSigner|KmsMlDsaSigner)\b/,
  'embedded TSA (token issuing)': /\bEmbeddedTsa\b/,
  'ledger sender': /\bLedgerSender\b/,
};

interface Target {
  name: string;
  file: string;
  /** The esbuild plugins instead of infra/esbuild-plugins.cjs. */
  plugins?: Plugin[];
  note?: string;
  /** Bundle the AWS SDK too instead of leaving it to the runtime. */
  bundleSdk?: boolean;
}
const functions: Target[] = [...registry.http, ...registry.scheduled]
  .map((f) => ({ name: f.name, file: f.file }))
  .filter((f) => only.length === 0 || only.includes(f.name));

/**
 * The measured alternatives to the AWS SDK loaded with require() (infra/esbuild-plugins.cjs,
 * aws-sdk-require): the SDK imported as ESM (Node then scans each CommonJS file for its named
 * exports), and the SDK bundled into the function instead of taken from the runtime.
 */
const withoutSdkRequire = plugins.filter((p) => p.name !== 'aws-sdk-require');
const alternatives: Target[] = ['v2EvidenceHash', 'v2EvidenceVerify']
  .map((name) => functions.find((f) => f.name === name))
  .filter((f): f is Target => f !== undefined)
  .flatMap((f) => [
    { name: `${f.name} (SDK imported as ESM)`, file: f.file, plugins: withoutSdkRequire, note: 'alternative build' },
    { name: `${f.name} (SDK bundled)`, file: f.file, plugins: withoutSdkRequire, bundleSdk: true, note: 'alternative build' },
  ]);

const outDir = await mkdtemp(path.join(os.tmpdir(), 'evidence-cold-'));
// Bare specifiers left external (@aws-sdk/*) resolve from the repository's node_modules, as the
// Lambda runtime resolves them from its own.
await symlink(path.join(REPO_ROOT, 'node_modules'), path.join(outDir, 'node_modules'), 'dir');
const log = (line: string) => process.stderr.write(`  cold: ${line}\n`);

/**
 * Imports `file` in fresh Node processes, RUNS times: first the external AWS SDK packages it
 * imports (timed apart: the runtime provides them), then the bundle. Returns [sdk ms, bundle ms] per run.
 */
function importTimes(file: string, sdk: { path: string; required: boolean }[]): [number, number][] {
  const times: [number, number][] = [];
  // The SDK is loaded the way the bundle loads it: require() (infra/esbuild-sdk-require.cjs) or import.
  const script = [
    "import { createRequire } from 'node:module';",
    `const require = createRequire(${JSON.stringify(pathToFileURL(file).href)});`,
    'const t0 = performance.now();',
    ...sdk.map((p) => (p.required ? `require(${JSON.stringify(p.path)});` : `await import(${JSON.stringify(p.path)});`)),
    'const t1 = performance.now();',
    `await import(${JSON.stringify(pathToFileURL(file).href)});`,
    'process.stdout.write(JSON.stringify([t1 - t0, performance.now() - t1]));',
  ].join('\n');
  for (let i = 0; i < RUNS; i++) {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: outDir,
      env: { PATH: process.env.PATH ?? '', AWS_REGION: 'eu-central-1', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', DEPLOYMENT: 'aws' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    times.push(JSON.parse(out.toString()) as [number, number]);
  }
  return times;
}
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)] ?? NaN;

const rows: ColdRow[] = [];
try {
  for (const fn of [...functions, ...alternatives]) {
    const outfile = path.join(outDir, `${fn.name}.mjs`);
    const options: BuildOptions = {
      ...SERVERLESS_ESBUILD,
      entryPoints: [path.join(REPO_ROOT, fn.file)],
      external: fn.bundleSdk ? [] : SERVERLESS_ESBUILD.external,
      plugins: fn.plugins ?? plugins,
      metafile: true,
      outfile,
      absWorkingDir: REPO_ROOT,
      logLevel: 'silent',
    };
    const result = await build(options);
    const meta: Metafile | undefined = result.metafile;
    if (!meta) throw new Error(`cold-start: no metafile for ${fn.name}`);
    const output = Object.values(meta.outputs)[0];
    const heavy: Record<string, number> = {};
    for (const [input, info] of Object.entries(output?.inputs ?? {})) {
      for (const [pkg, re] of Object.entries(HEAVY)) if (re.test(input)) heavy[pkg] = (heavy[pkg] ?? 0) + info.bytesInOutput;
    }
    // The bundle keeps no names (keepNames is off): the markers are looked for in the same build
    // with names kept, which bundles exactly the same code.
    const named = await build({ ...options, keepNames: true, metafile: false, write: false });
    const text = named.outputFiles?.[0]?.text ?? '';
    if (!text) throw new Error(`cold-start: the name-keeping build of ${fn.name} produced no output`);
    const signing = Object.entries(SIGNING_MARKERS)
      .filter(([, re]) => re.test(text))
      .map(([what]) => what);
    const bundleBytes = (await stat(outfile)).size;
    const sdk = new Map<string, boolean>();
    for (const i of output?.imports ?? []) {
      if (i.external && i.path.startsWith('@aws-sdk/')) sdk.set(i.path, (sdk.get(i.path) ?? true) && i.kind === 'require-call');
    }
    const times = importTimes(outfile, [...sdk].map(([p, required]) => ({ path: p, required })));
    const has = (pkg: string) => (heavy[pkg] ?? 0) > 0;
    let verdict = '';
    const base = fn.name.split(' ')[0] ?? fn.name;
    if (/^v2(EvidenceHash|Account)/.test(base)) {
      const bad = ['ethers', 'pkijs', '@noble/post-quantum'].filter(has);
      verdict = bad.length ? `✗ loads ${bad.join(', ')}` : '✓ no ethers/pkijs/ML-DSA';
    } else if (/Verify$|verifyPage/.test(base)) {
      const bad = [...(has('ethers') ? ['ethers'] : []), ...signing];
      verdict = bad.length ? `✗ loads ${bad.join(', ')}` : `✓ no ethers, no signing code${has('@noble/post-quantum') ? '' : ' (no ML-DSA verify either)'}`;
    } else {
      verdict = signing.length ? `signing: ${signing.join(', ')}` : '';
    }
    const totals = times.map(([a, b]) => a + b);
    rows.push({
      name: fn.name,
      file: fn.file,
      bundleBytes,
      importMsMedian: median(totals),
      bundleImportMsMedian: median(times.map(([, b]) => b)),
      sdkImportMsMedian: median(times.map(([a]) => a)),
      importMsAll: totals.map((t) => Number(t.toFixed(1))),
      heavy,
      verdict: fn.note ? `${fn.note}${verdict ? `; ${verdict}` : ''}` : verdict,
    });
    log(`${fn.name}: ${(bundleBytes / 1024).toFixed(0)} KB, import ${median(totals).toFixed(0)} ms (bundle ${median(times.map(([, b]) => b)).toFixed(0)}) ${verdict}`);
  }
} finally {
  await rm(outDir, { recursive: true, force: true });
}
process.stdout.write(`${JSON.stringify(rows)}\n`);
