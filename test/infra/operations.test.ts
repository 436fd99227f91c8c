import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { packagedTemplate } from '../support/packaged-template.js';
import { type CfnTemplate, checkOperations } from '../../infra/template-rules.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
let template: CfnTemplate;

before(async () => {
  template = await packagedTemplate();
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

describe('each function may write the tables its middleware and handler write', () => {
  // A grant missing here fails only in AWS (AccessDenied → 503), never against dynalite, which
  // checks no IAM: so the function sources are read for the calls that imply a write.
  const RULES: { call: RegExp; table: string; why: string }[] = [
    { call: /\b(jwtAuth|adminAuth|loginLockout|apiKeyAuth)\(/, table: 'counters', why: 'its rate limit or lockout counts in the counters table' },
    { call: /\bnoteActivity\(/, table: 'activity', why: "it notes the account's activity" },
    { call: /\b(timestampHash|signHash)\(/, table: 'evidence', why: 'it records the stand-alone answer on the evidence item' },
  ];
  /** The function's file and the route modules it imports (lib/http/routes), where handlers live. */
  const sourceOf = (file: string): string => {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    const routes = [...text.matchAll(/from '(\.\.?\/[^']*routes\/[^']+)\.js'/g)].map((m) => path.join(path.dirname(path.join(ROOT, file)), `${m[1]}.ts`));
    return [text, ...routes.map((r) => readFileSync(r, 'utf8'))].join('\n');
  };
  const registry = JSON.parse(readFileSync(path.join(ROOT, 'infra', 'functions.json'), 'utf8')) as {
    http: { name: string; file: string; access: Record<string, string> }[];
  };
  // functions/openapi.ts builds every other app to document it, and serves none of their requests.
  for (const fn of registry.http.filter((f) => f.name !== 'openapi')) {
    test(fn.name, () => {
      const text = sourceOf(fn.file);
      for (const rule of RULES) {
        if (rule.call.test(text)) assert.ok((fn.access[rule.table] ?? '').includes('w'), `${fn.name} needs "${rule.table}": "w" in infra/functions.json: ${rule.why}`);
      }
    });
  }
  test('the rules see what they look for (a grant removed is found)', () => {
    const anchor = registry.http.find((f) => f.name === 'v2EvidenceAnchor');
    assert.ok(anchor && /\bnoteActivity\(/.test(sourceOf(anchor.file)) && /\bapiKeyAuth\(/.test(sourceOf(anchor.file)), 'the anchor route module is read through its import');
  });
});
