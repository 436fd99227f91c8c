/**
 * `npm run check:template [-- <package folder>]`: offline checks of what `osls package` produced
 * (run it first; the folder is .serverless unless `osls package --package <folder>` wrote
 * another). Reads cloudformation-template-update-stack.json, serverless-state.json and the zips,
 * prints one line per check, and exits 1 when any fails. No network, no AWS credentials:
 * resource types, properties, required properties and attributes come from the CloudFormation
 * specification shipped in @aws-cdk/aws-service-spec (pinned; docs/decisions.md "Deploying"
 * gives its provenance); the deployment rules come from infra/functions.json and tables.json;
 * the deployment parameters (every placeholder, missing or malformed value, every key file absent
 * from the zips) from infra/deploy-params.cjs, each by its --param name: a failure on every stage
 * but dev, a note on dev.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';
import { createRequire } from 'node:module';
import path from 'node:path';
import { loadAwsServiceSpec } from '@aws-cdk/aws-service-spec';
import registry from './registry.cjs';
import type { KmsKey } from './registry.cjs';
import {
  type CfnTemplate,
  type RuleResult,
  checkEdge,
  checkFunctions,
  checkOperations,
  checkLeastPrivilege,
  checkProperties,
  checkReferences,
  checkResourceTypes,
  checkRoutes,
  checkSchedules,
  checkStreams,
  checkTables,
  templateView,
} from './template-rules.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const OUT = path.resolve(process.argv[2] ?? path.join(ROOT, '.serverless'));
const TEMPLATE = path.join(OUT, 'cloudformation-template-update-stack.json');
const STATE = path.join(OUT, 'serverless-state.json');
/** The edge WebACL's own template (scope CLOUDFRONT: deployed in us-east-1, docs/runbook.md "The edge"). */
const EDGE_WAF = path.join(OUT, 'edge-waf-us-east-1.json');
const require = createRequire(import.meta.url);
const { buildEdgeWebAclTemplate } = require('./edge-waf.cjs') as typeof import('./edge-waf.cjs');
const { PLACEHOLDER_STAGES, parameterProblems } = require('./deploy-params.cjs') as typeof import('./deploy-params.cjs');

/** The stage's PUBLIC_RATE_PER_MINUTE, as packaged into the functions' environment. */
function packagedPublicRate(template: CfnTemplate): number {
  for (const r of Object.values(template.Resources)) {
    const vars = (r.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables;
    const rate = Number(vars?.PUBLIC_RATE_PER_MINUTE);
    if (r.Type === 'AWS::Lambda::Function' && Number.isInteger(rate)) return rate;
  }
  throw new Error('no function carries PUBLIC_RATE_PER_MINUTE');
}
/** Lambda limits for a .zip deployment package. */
const MAX_ZIPPED = 50 * 1024 * 1024;
const MAX_UNZIPPED = 250 * 1024 * 1024;
const MAX_PROBLEMS_SHOWN = 25;

interface ServerlessState {
  service: {
    provider: { stage: string; region: string; environment?: Record<string, unknown> };
    custom?: { kms?: Record<string, string>; keysDir?: string; edgeSetup?: { enabled?: boolean } };
    functions: Record<string, { package?: { artifact?: string } }>;
  };
}

/** A function's zip in the package folder (osls records `.serverless/<name>.zip` whatever the folder). */
function artifactOf(state: ServerlessState, name: string): string {
  const artifact = state.service.functions[name]?.package?.artifact ?? `${name}.zip`;
  return path.join(OUT, path.basename(artifact));
}

function report(result: RuleResult): boolean {
  const ok = result.problems.length === 0;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${result.name} (${result.summary})`);
  for (const p of result.problems.slice(0, MAX_PROBLEMS_SHOWN)) console.log(`       - ${p}`);
  if (result.problems.length > MAX_PROBLEMS_SHOWN) console.log(`       … and ${result.problems.length - MAX_PROBLEMS_SHOWN} more`);
  return ok;
}

interface ZipEntry {
  name: string;
  size: number;
  /** The entry's bytes (stored or deflated, the two methods osls writes). */
  read(): Buffer;
}

/** Entries of a .zip from its central directory (no dependency; packages are far below 4 GiB, so no ZIP64). */
export function zipEntries(buf: Buffer): ZipEntry[] {
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 0xffff); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('not a zip file (no end of central directory)');
  const count = buf.readUInt16LE(eocd + 10);
  let at = buf.readUInt32LE(eocd + 16);
  const entries: ZipEntry[] = [];
  for (let n = 0; n < count; n++) {
    if (buf.readUInt32LE(at) !== 0x02014b50) throw new Error('corrupt central directory');
    const method = buf.readUInt16LE(at + 10);
    const compressedSize = buf.readUInt32LE(at + 20);
    const size = buf.readUInt32LE(at + 24);
    const nameLength = buf.readUInt16LE(at + 28);
    const extraLength = buf.readUInt16LE(at + 30);
    const commentLength = buf.readUInt16LE(at + 32);
    const local = buf.readUInt32LE(at + 42);
    const read = () => {
      if (buf.readUInt32LE(local) !== 0x04034b50) throw new Error('corrupt local header');
      const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
      const data = buf.subarray(start, start + compressedSize);
      if (method === 0) return Buffer.from(data);
      if (method === 8) return inflateRawSync(data);
      throw new Error(`zip method ${method} is not supported`);
    };
    entries.push({ name: buf.toString('utf8', at + 46, at + 46 + nameLength), size, read });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

const kib = (n: number) => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`);

/** Each function's zip exists, holds its handler bundle and nothing of the local stack, within Lambda's limits. */
function checkArtifacts(state: ServerlessState, entriesOf: (name: string) => ZipEntry[] | undefined): boolean {
  let allOk = true;
  for (const fn of registry.allFunctions()) {
    const file = artifactOf(state, fn.name);
    const problems: string[] = [];
    let line = `zip ${path.relative(ROOT, file)}`;
    const entries = entriesOf(fn.name);
    if (!entries) problems.push('missing');
    else {
      const zipped = statSync(file).size;
      const unzipped = entries.reduce((n, e) => n + e.size, 0);
      line += ` ${kib(zipped)} (${entries.length} file${entries.length === 1 ? '' : 's'}, ${kib(unzipped)} unzipped)`;
      const bundle = registry.handlerOf(fn).replace(/\.handler$/, '.mjs');
      if (!entries.some((e) => e.name === bundle)) problems.push(`holds no ${bundle} (has ${entries.map((e) => e.name).join(', ')})`);
      const local = entries.filter((e) => /(^|\/)(node_modules\/(hardhat|dynalite|@aws-sdk)|lib\/local)\//.test(e.name));
      if (local.length) problems.push(`ships ${local.map((e) => e.name).slice(0, 3).join(', ')}…`);
      if (zipped > MAX_ZIPPED) problems.push(`larger than Lambda's ${kib(MAX_ZIPPED)} zipped`);
      if (unzipped > MAX_UNZIPPED) problems.push(`larger than Lambda's ${kib(MAX_UNZIPPED)} unzipped`);
    }
    allOk = report({ name: line, summary: fn.name, problems }) && allOk;
  }
  return allOk;
}

async function main(): Promise<number> {
  if (!existsSync(TEMPLATE) || !existsSync(STATE)) {
    console.log(`FAIL ${path.relative(ROOT, TEMPLATE)} not found: run \`npm run package\` (osls package) first`);
    return 1;
  }
  const template = JSON.parse(readFileSync(TEMPLATE, 'utf8')) as CfnTemplate;
  const state = JSON.parse(readFileSync(STATE, 'utf8')) as ServerlessState;

  const registryProblems = registry.validateRegistry();
  const results: RuleResult[] = [
    {
      name: 'registry: infra/functions.json and infra/tables.json are consistent',
      summary: `${registry.allFunctions().length} functions, ${Object.keys(registry.TABLES).length} tables`,
      problems: registryProblems,
    },
  ];

  const db = await loadAwsServiceSpec();
  results.push(checkResourceTypes(template, db), checkProperties(template, db), checkReferences(template, db));
  // The edge WebACL's own template (us-east-1), for this package's rate: written next to the stack's.
  const waf = buildEdgeWebAclTemplate({ publicRatePerMinute: packagedPublicRate(template) });
  writeFileSync(EDGE_WAF, `${JSON.stringify(waf, null, 2)}\n`);
  for (const r of [checkResourceTypes(waf, db), checkProperties(waf, db), checkReferences(waf, db)]) results.push({ ...r, name: `edge WebACL template: ${r.name}` });

  // The deployment parameters, by name: what the package recorded, and the key files as the zips hold them.
  const stage = state.service.provider.stage;
  const edgeOn = stage !== 'dev' || template.Resources.EdgeDistribution !== undefined;
  const zips = new Map<string, ZipEntry[] | undefined>();
  const entriesOf = (name: string) => {
    if (!zips.has(name)) {
      const file = artifactOf(state, name);
      zips.set(name, existsSync(file) ? zipEntries(readFileSync(file)) : undefined);
    }
    return zips.get(name);
  };
  const parameterFindings = await parameterProblems({
    get: (p) => p.split('.').reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), state.service),
    // Present only when every function's zip holds it (each function reads it from its own /var/task).
    readFile: (file) => {
      let content: Buffer | undefined;
      for (const fn of registry.allFunctions()) {
        const entry = entriesOf(fn.name)?.find((e) => e.name === file);
        if (!entry) return undefined;
        content ??= entry.read();
      }
      return content;
    },
    edge: edgeOn,
    keysDir: state.service.custom?.keysDir,
    region: state.service.provider.region,
  });
  const strict = !PLACEHOLDER_STAGES.has(stage);
  if (strict) {
    results.push({
      name: `deployment parameters of stage ${stage}: no placeholder, nothing missing or malformed, every key file in every zip`,
      summary: `infra/deploy-params.cjs, edge ${edgeOn ? 'on' : 'off'}`,
      problems: parameterFindings,
    });
  }

  const custom = state.service.custom?.kms ?? {};
  const kmsArns: Partial<Record<KmsKey, string>> = {};
  for (const [key, { custom: name }] of Object.entries(registry.KMS_KEYS)) {
    const arn = custom[name];
    if (arn) kmsArns[key as KmsKey] = arn;
  }
  results.push(
    checkFunctions(template),
    checkRoutes(template),
    checkSchedules(template),
    checkStreams(template),
    checkOperations(template),
    checkEdge(template, waf, stage),
    checkTables(template.Resources),
    ...checkLeastPrivilege(templateView(template, kmsArns)),
  );

  let ok = results.map(report).every(Boolean);
  ok = checkArtifacts(state, entriesOf) && ok;

  if (!strict && parameterFindings.length) {
    console.log(`note stage ${stage} may package with placeholders (CI); a deploy of any other stage would fail on:`);
    for (const p of parameterFindings) console.log(`       - ${p}`);
  }
  console.log(ok ? 'template checks passed' : 'template checks FAILED');
  return ok ? 0 : 1;
}

process.exitCode = await main();
