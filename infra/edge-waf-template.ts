/**
 * `npm run edge-waf -- [--stage <stage>] [--rate <requests per minute>] [--out <file>]`: writes the
 * edge WebACL's CloudFormation template (infra/edge-waf.cjs buildEdgeWebAclTemplate: scope
 * CLOUDFRONT, deployed in us-east-1, docs/runbook.md "The edge") without packaging the service,
 * which on any stage but dev needs the WebACL's ARN first. Defaults: stage dev, the rate of
 * serverless.yml's publicRatePerMinute default (600), .serverless/edge-waf-us-east-1.json. It
 * checks the template against the CloudFormation specification and the edge rule before writing,
 * and exits 1 without writing when either fails. `npm run check:template` writes the same template
 * for a package's own rate.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadAwsServiceSpec } from '@aws-cdk/aws-service-spec';
import { checkEdgeWebAcl, checkProperties, checkReferences, checkResourceTypes } from './template-rules.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const { buildEdgeWebAclTemplate } = createRequire(import.meta.url)('./edge-waf.cjs') as typeof import('./edge-waf.cjs');

export async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { stage: { type: 'string', default: 'dev' }, rate: { type: 'string', default: '600' }, out: { type: 'string' } } });
  const rate = Number(values.rate);
  let waf;
  try {
    waf = buildEdgeWebAclTemplate({ publicRatePerMinute: rate, stage: values.stage });
  } catch (error) {
    console.error(`edge-waf: ${(error as Error).message} (--rate ${values.rate})`);
    return 1;
  }
  const db = await loadAwsServiceSpec();
  const problems = [checkResourceTypes(waf, db), checkProperties(waf, db), checkReferences(waf, db)].flatMap((r) => r.problems);
  problems.push(...checkEdgeWebAcl(waf, rate));
  if (problems.length) {
    for (const p of problems) console.error(`edge-waf: ${p}`);
    return 1;
  }
  const out = path.resolve(values.out ?? path.join(ROOT, '.serverless', 'edge-waf-us-east-1.json'));
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(waf, null, 2)}\n`);
  console.log(`edge WebACL template for stage ${values.stage}, ${rate} requests per minute and IP: ${path.relative(process.cwd(), out)} (deploy it in us-east-1)`);
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) process.exitCode = await main(process.argv.slice(2));
