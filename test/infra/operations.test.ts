import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { type CfnTemplate, checkOperations } from '../../infra/template-rules.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const TEMPLATE = path.join(ROOT, '.serverless', 'cloudformation-template-update-stack.json');
const SOURCES = ['serverless.yml', 'infra/functions.json', 'infra/registry.cjs', 'infra/serverless-resources.cjs', 'infra/serverless-functions.cjs'];
let template: CfnTemplate;

/** The packaged template; `osls package` runs first (offline, no credentials) unless it is newer than its sources. */
before(async () => {
  const stale = !existsSync(TEMPLATE) || SOURCES.some((f) => statSync(path.join(ROOT, f)).mtimeMs > statSync(TEMPLATE).mtimeMs);
  if (stale) {
    const env: NodeJS.ProcessEnv = { ...process.env, AWS_REGION: 'eu-central-1' };
    for (const k of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_PROFILE', 'AWS_SESSION_TOKEN']) delete env[k];
    await promisify(execFile)(path.join(ROOT, 'node_modules', '.bin', 'osls'), ['package'], { cwd: ROOT, env, maxBuffer: 64 << 20 });
  }
  template = JSON.parse(readFileSync(TEMPLATE, 'utf8')) as CfnTemplate;
});

const copy = () => JSON.parse(JSON.stringify(template)) as CfnTemplate;

describe('the packaged stack has the operations an AWS engineer expects', () => {
  test('alarms, failure destinations, reconciler concurrency 1, stage throttling and access logs, X-Ray: all present', () => {
    assert.deepEqual(checkOperations(template).problems, []);
  });

  test('the rule notices each one missing', () => {
    const cases: [string, (t: CfnTemplate) => void, RegExp][] = [
      ['no 5xx alarm', (t) => delete t.Resources.ApiServerErrorRateAlarm, /5xx rate/],
      ['no wallet alarm', (t) => delete t.Resources.WalletBalanceLowAlarm, /low wallet balance/],
      ['no pending alarm', (t) => delete t.Resources.AnchorsPendingTooLongAlarm, /pending too long/],
      ['no anchor errors alarm', (t) => delete t.Resources.V2EvidenceAnchorErrorsAlarm, /Errors of v2EvidenceAnchor/],
      ['no verify throttles alarm', (t) => delete t.Resources.V2EvidenceVerifyThrottlesAlarm, /Throttles of v2EvidenceVerify/],
      ['reconciler unbounded', (t) => delete t.Resources.ReconcileLambdaFunction!.Properties!.ReservedConcurrentExecutions, /reconcile: reserved concurrency/],
      ['no tracing', (t) => delete t.Resources.V2EvidenceHashLambdaFunction!.Properties!.TracingConfig, /v2EvidenceHash: X-Ray/],
      ['no failure destination', (t) => delete t.Resources.ReconcileLambdaEvConf, /reconcile: no on-failure destination/],
      ['no throttling', (t) => delete (t.Resources.HttpApiStage!.Properties!.DefaultRouteSettings as Record<string, unknown>).ThrottlingRateLimit, /throttling/],
      ['no access log', (t) => delete t.Resources.HttpApiStage!.Properties!.AccessLogSettings, /access log/],
    ];
    for (const [name, mutate, expected] of cases) {
      const t = copy();
      mutate(t);
      const problems = checkOperations(t).problems;
      assert.ok(problems.some((p) => expected.test(p)), `${name}: ${JSON.stringify(problems)}`);
    }
  });
});

describe('IAM grants no DynamoDB action the code never sends', () => {
  test('every action of the access letters is a command some repository sends', async () => {
    const { readdir } = await import('node:fs/promises');
    const { createRequire } = await import('node:module');
    const registry = createRequire(import.meta.url)('../../infra/registry.cjs') as { DYNAMO_ACTIONS: Record<string, string[]> };
    const sent = new Set<string>();
    for (const dir of ['lib', 'functions']) {
      for (const entry of await readdir(path.join(ROOT, dir), { recursive: true, withFileTypes: true })) {
        if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.parentPath.includes(`${path.sep}local`)) continue;
        const text = readFileSync(path.join(entry.parentPath, entry.name), 'utf8');
        // lib-dynamodb's document commands drop the "Item" of the API action: GetCommand is GetItem.
        for (const m of text.matchAll(/new (Get|Put|Update|Delete|BatchGet|BatchWrite|Query|Scan|DescribeTable|TransactWrite|TransactGet)Command\(/g)) {
          const name = m[1] as string;
          sent.add(`dynamodb:${['Get', 'Put', 'Update', 'Delete'].includes(name) ? `${name}Item` : name === 'TransactWrite' || name === 'TransactGet' ? `${name}Items` : name === 'BatchGet' || name === 'BatchWrite' ? `${name}Item` : name}`);
        }
      }
    }
    const granted = Object.values(registry.DYNAMO_ACTIONS).flat();
    assert.deepEqual(granted.filter((a) => !sent.has(a)), [], `granted but never sent (sent: ${[...sent].sort().join(', ')})`);
  });
});
