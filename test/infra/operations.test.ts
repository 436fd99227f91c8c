import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { packagedTemplate } from '../support/packaged-template.js';
import { type CfnResource, type CfnTemplate, type JsonObject, checkLeastPrivilege, checkOperations, checkStreams, templateView } from '../../infra/template-rules.js';

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
      ['no reconcile-stuck alarm', (t) => delete t.Resources.ReconcileStuckAlarm, /failing to advance/],
      ['no fee-cap metric filter', (t) => delete t.Resources.LedgerFeeCapMetricFilter, /metric filter for the ledger fee cap/],
      ['no fee-cap alarm', (t) => delete t.Resources.LedgerFeeCapAlarm, /no alarm on the ledger fee cap/],
      ['a clock-drift filter on another log group', (t) => (t.Resources.ClockDriftMetricFilter!.Properties!.LogGroupName = { Ref: 'V1HealthLogGroup' }), /metric filter for the TSA clock drift/],
      ['no clock-drift alarm', (t) => delete t.Resources.TsaClockDriftAlarm, /no alarm on the TSA clock drift/],
      ['no scheduled failures alarm', (t) => delete t.Resources.ScheduledFailuresAlarm, /no alarm on failed scheduled runs/],
      ['no stream failures alarm', (t) => delete t.Resources.StreamFailuresAlarm, /no alarm on stream changes dropped unapplied/],
      ['no stream failure queue', (t) => delete t.Resources.StreamFailureQueue, /no AWS::SQS::Queue StreamFailureQueue/],
      ['no iterator-age alarm', (t) => delete t.Resources.EvidenceStreamIteratorAgeAlarm, /no alarm on the iterator age of evidenceStream/],
      ['an iterator-age threshold in seconds', (t) => (t.Resources.EvidenceStreamIteratorAgeAlarm!.Properties!.Threshold = 60), /no alarm on the iterator age of evidenceStream/],
      ['an iterator age averaged', (t) => (t.Resources.EvidenceStreamIteratorAgeAlarm!.Properties!.Statistic = 'Average'), /no alarm on the iterator age of evidenceStream/],
      ['an iterator-age alarm of an hour', (t) => (t.Resources.EvidenceStreamIteratorAgeAlarm!.Properties!.EvaluationPeriods = 60), /no alarm on the iterator age of evidenceStream/],
      ['no stream function errors alarm', (t) => delete t.Resources.EvidenceStreamErrorsAlarm, /Errors of evidenceStream/],
    ];
    for (const [name, mutate, expected] of cases) {
      const t = copy();
      mutate(t);
      const problems = checkOperations(t).problems;
      assert.ok(problems.some((p) => expected.test(p)), `${name}: ${JSON.stringify(problems)}`);
    }
  });
});

describe('the packaged stack feeds the evidence stream function from its table\'s stream (docs/decisions.md "Derived data")', () => {
  const MAPPING = 'EvidenceStreamEventSourceMappingDynamodbEvidenceTable';
  const mappingOf = (t: CfnTemplate) => t.Resources[MAPPING]!.Properties!;

  test('one event source mapping, as the policy says, and the role that reads the stream and reaches the failure queue', () => {
    assert.equal(template.Resources[MAPPING]?.Type, 'AWS::Lambda::EventSourceMapping', 'osls names the mapping after the function and the table');
    assert.deepEqual(checkStreams(template).problems, []);
    // The grants as packaged (osls adds stream grants only to a shared role, which this stack has none of).
    const streamRules = checkLeastPrivilege(templateView(template, {})).filter((r) => /^(sqs|dynamodb streams): /.test(r.name));
    assert.equal(streamRules.length, 2);
    for (const r of streamRules) assert.deepEqual(r.problems, [], r.name);
    assert.equal(template.Resources.IamRoleLambdaExecution, undefined, 'no shared role');
  });

  test('the rule notices each setting changed, the mapping gone or doubled, and a stray mapping', () => {
    const cases: [string, (t: CfnTemplate) => void, RegExp][] = [
      ['from the newest change', (t) => (mappingOf(t).StartingPosition = 'LATEST'), /StartingPosition is "LATEST", expected "TRIM_HORIZON"/],
      ['retries limited', (t) => (mappingOf(t).MaximumRetryAttempts = 10), /MaximumRetryAttempts is 10, expected -1/],
      ['records given up after an hour', (t) => (mappingOf(t).MaximumRecordAgeInSeconds = 3600), /MaximumRecordAgeInSeconds is 3600, expected -1/],
      ['no bisecting', (t) => delete mappingOf(t).BisectBatchOnFunctionError, /BisectBatchOnFunctionError is null, expected true/],
      ['two batches per shard at once', (t) => (mappingOf(t).ParallelizationFactor = 2), /ParallelizationFactor is 2, expected 1/],
      ['no tumbling window (no shard in the event)', (t) => delete mappingOf(t).TumblingWindowInSeconds, /TumblingWindowInSeconds is null, expected 60/],
      ['another batch size', (t) => (mappingOf(t).BatchSize = 10), /BatchSize is 10, expected 100/],
      ['another batching window', (t) => (mappingOf(t).MaximumBatchingWindowInSeconds = 30), /MaximumBatchingWindowInSeconds is 30, expected 1/],
      ['no failure destination', (t) => delete mappingOf(t).DestinationConfig, /DestinationConfig is null, expected/],
      ['the scheduled runs\' queue as destination', (t) => (mappingOf(t).DestinationConfig = { OnFailure: { Destination: { 'Fn::GetAtt': ['ScheduledFailureQueue', 'Arn'] } } }), /DestinationConfig is .*ScheduledFailureQueue/],
      ['a filter', (t) => (mappingOf(t).FilterCriteria = { Filters: [{ Pattern: '{"eventName":["INSERT"]}' }] }), /FilterCriteria is .*, expected null/],
      ['disabled', (t) => (mappingOf(t).Enabled = false), /Enabled is false, expected true/],
      ['another table\'s stream', (t) => (mappingOf(t).EventSourceArn = { 'Fn::GetAtt': ['ChainsTable', 'StreamArn'] }), /EventSourceArn is .*ChainsTable/],
      ['not after its role', (t) => (t.Resources[MAPPING]!.DependsOn = []), /does not depend on its role EvidenceStreamIamRole/],
      ['keys only in the stream', (t) => (t.Resources.EvidenceTable!.Properties!.StreamSpecification = { StreamViewType: 'KEYS_ONLY' }), /the evidence table streams "KEYS_ONLY", not NEW_AND_OLD_IMAGES/],
      ['no mapping', (t) => delete t.Resources[MAPPING], /evidenceStream: 0 AWS::Lambda::EventSourceMapping invoking EvidenceStreamLambdaFunction, expected 1/],
      ['two mappings', (t) => (t.Resources.SecondMapping = structuredClone(t.Resources[MAPPING]!)), /evidenceStream: 2 AWS::Lambda::EventSourceMapping/],
      [
        'a stray mapping',
        (t) => {
          const stray = structuredClone(t.Resources[MAPPING]!) as CfnResource;
          (stray.Properties as JsonObject).FunctionName = { 'Fn::GetAtt': ['V1StatsLambdaFunction', 'Arn'] };
          t.Resources.StrayMapping = stray;
        },
        /StrayMapping: an event source mapping .*V1StatsLambdaFunction.* that infra\/functions.json does not list/,
      ],
    ];
    for (const [name, mutate, expected] of cases) {
      const t = copy();
      mutate(t);
      const problems = checkStreams(t).problems;
      assert.ok(problems.some((p) => expected.test(p)), `${name}: ${JSON.stringify(problems)}`);
    }
  });
});

describe('the runbook alarms are the stack alarms (docs/runbook.md "Alarms")', () => {
  const runbook = readFileSync(path.join(ROOT, 'docs', 'runbook.md'), 'utf8');

  test('no alarm or metric filter is left for an operator to create by hand', () => {
    assert.doesNotMatch(runbook, /put-metric-alarm|put-metric-filter/);
  });

  test('every alarm the runbook names is an AWS::CloudWatch::Alarm of the packaged stack, and every alarm of the stack is in the runbook', () => {
    const named = new Set([...runbook.matchAll(/`([A-Z][A-Za-z0-9]*Alarm)`/g)].map((m) => m[1]!));
    assert.ok(named.size >= 7, `${named.size} alarms named`);
    for (const id of named) assert.equal(template.Resources[id]?.Type, 'AWS::CloudWatch::Alarm', id);
    const perFunction = /(Errors|Throttles)Alarm$/;
    const stack = Object.entries(template.Resources).filter(([id, r]) => r.Type === 'AWS::CloudWatch::Alarm' && !perFunction.test(id)).map(([id]) => id);
    assert.deepEqual(stack.filter((id) => !named.has(id)), []);
  });

  test('each metric filter matches a line the code writes, with the field it takes its value from', async () => {
    const { readdir } = await import('node:fs/promises');
    const sources: string[] = [];
    for (const dir of ['lib', 'functions']) {
      for (const e of await readdir(path.join(ROOT, dir), { recursive: true, withFileTypes: true })) {
        if (e.isFile() && e.name.endsWith('.ts')) sources.push(readFileSync(path.join(e.parentPath, e.name), 'utf8'));
      }
    }
    const filters = Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::Logs::MetricFilter');
    assert.ok(filters.length >= 2);
    for (const [id, f] of filters) {
      const pattern = String(f.Properties!.FilterPattern);
      const literal = /\$\.(\w+) = "([^"]+)"/.exec(pattern);
      assert.ok(literal, `${id}: ${pattern}`);
      const [, field, value] = literal;
      // The field is written as `field: 'value'` (log fields) or as the message of log(level, 'value', …).
      const writers = sources.filter((text) => (field === 'msg' ? text.includes(`'${value}'`) : new RegExp(`\\b${field}: '${value}'`).test(text)));
      assert.ok(writers.length > 0, `${id}: no code logs ${field}=${value}`);
      const metricValue = String((f.Properties!.MetricTransformations as { MetricValue: string }[])[0]!.MetricValue);
      if (metricValue.startsWith('$.')) {
        const name = metricValue.slice(2);
        assert.ok(writers.some((text) => new RegExp(`\\b${name}:`).test(text)), `${id}: the line ${value} has no field ${name}`);
      }
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
    { call: /\bregisterHash\(/, table: 'evidence', why: "it writes the account's registration item" },
    { call: /\banchorEvidence\(/, table: 'evidence', why: 'it publishes the anchor on the evidence item' },
    { call: /\banchorEvidence\(/, table: 'chains', why: 'it claims the chain link' },
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
    assert.ok(anchor && /\banchorEvidence\(/.test(sourceOf(anchor.file)) && /\bapiKeyAuth\(/.test(sourceOf(anchor.file)), 'the anchor route module is read through its import');
  });
});
