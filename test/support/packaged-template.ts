import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { CfnTemplate } from '../../infra/template-rules.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const TEMPLATE = path.join(ROOT, '.serverless', 'cloudformation-template-update-stack.json');
/** What the packaged template is made from: it is packaged again when any is newer. */
const SOURCES = ['serverless.yml', 'infra/functions.json', 'infra/tables.json', 'infra/registry.cjs', 'infra/serverless-resources.cjs', 'infra/serverless-functions.cjs', 'infra/edge-waf.cjs'];

/** The packaged CloudFormation template; `osls package` runs first (offline, no credentials) unless it is newer than its sources. */
export async function packagedTemplate(): Promise<CfnTemplate> {
  const stale = !existsSync(TEMPLATE) || SOURCES.some((f) => statSync(path.join(ROOT, f)).mtimeMs > statSync(TEMPLATE).mtimeMs);
  if (stale) {
    const env: NodeJS.ProcessEnv = { ...process.env, AWS_REGION: 'eu-central-1' };
    for (const k of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_PROFILE', 'AWS_SESSION_TOKEN']) delete env[k];
    await promisify(execFile)(path.join(ROOT, 'node_modules', '.bin', 'osls'), ['package'], { cwd: ROOT, env, maxBuffer: 64 << 20 });
  }
  return JSON.parse(readFileSync(TEMPLATE, 'utf8')) as CfnTemplate;
}
