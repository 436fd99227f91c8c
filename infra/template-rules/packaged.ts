/**
 * Rules of the packaged template only (osls compiled functions, routes, schedules, stream
 * mappings and operations).
 */
import { isDeepStrictEqual } from 'node:util';
import registry from '../registry.cjs';
import type { KmsKey, RegistryFunction } from '../registry.cjs';
import { type CfnResource, type CfnTemplate, type Json, type JsonObject, type RuleResult, asArray, isObject } from './common.js';
import type { DeploymentView } from './least-privilege.js';

/** Environment variables Lambda sets itself; a template that sets them fails to deploy. */
const LAMBDA_RESERVED_ENV = new Set([
  '_HANDLER',
  '_X_AMZN_TRACE_ID',
  'AWS_DEFAULT_REGION',
  'AWS_REGION',
  'AWS_EXECUTION_ENV',
  'AWS_LAMBDA_FUNCTION_NAME',
  'AWS_LAMBDA_FUNCTION_MEMORY_SIZE',
  'AWS_LAMBDA_FUNCTION_VERSION',
  'AWS_LAMBDA_INITIALIZATION_TYPE',
  'AWS_LAMBDA_LOG_GROUP_NAME',
  'AWS_LAMBDA_LOG_STREAM_NAME',
  'AWS_ACCESS_KEY',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_LAMBDA_RUNTIME_API',
  'LAMBDA_TASK_ROOT',
  'LAMBDA_RUNTIME_DIR',
]);

/** The view of a packaged template: Lambda functions name their role by Fn::GetAtt. */
export function templateView(template: CfnTemplate, kmsArns: Partial<Record<KmsKey, string>>): DeploymentView {
  const resources = template.Resources;
  const roleOfLambda = (id: string): string | undefined => {
    const role = resources[id]?.Properties?.Role;
    const getAtt = isObject(role) ? role['Fn::GetAtt'] : undefined;
    return Array.isArray(getAtt) && typeof getAtt[0] === 'string' ? getAtt[0] : undefined;
  };
  const byArn = new Map(Object.entries(kmsArns).map(([k, v]) => [v, k as KmsKey]));
  return {
    resources,
    roleOf: (fn) => roleOfLambda(registry.naming.lambda(fn.name)),
    allFunctionRoles: () =>
      new Map(Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function').map(([id]) => [id, roleOfLambda(id)])),
    kmsKeyOf: (value) => byArn.get(value),
  };
}

/** Every registry function is a Lambda with the right handler, runtime, role and environment. */
export function checkFunctions(template: CfnTemplate): RuleResult {
  const problems: string[] = [];
  const resources = template.Resources;
  const fns = registry.allFunctions();
  const known = new Set(fns.map((fn) => registry.naming.lambda(fn.name)));
  for (const fn of fns) {
    const id = registry.naming.lambda(fn.name);
    const res = resources[id];
    if (!res || res.Type !== 'AWS::Lambda::Function') {
      problems.push(`${fn.name}: no AWS::Lambda::Function ${id}`);
      continue;
    }
    const p = res.Properties ?? {};
    if (p.Handler !== registry.handlerOf(fn)) problems.push(`${fn.name}: handler ${String(p.Handler)}, expected ${registry.handlerOf(fn)}`);
    if (p.Runtime !== 'nodejs24.x') problems.push(`${fn.name}: runtime ${String(p.Runtime)}, expected nodejs24.x`);
    if (!isDeepStrictEqual(p.Architectures, ['arm64'])) problems.push(`${fn.name}: architectures ${JSON.stringify(p.Architectures)}, expected ["arm64"]`);
    if (fn.kind === 'http' && typeof p.Timeout === 'number' && p.Timeout >= 30) {
      problems.push(`${fn.name}: timeout ${p.Timeout} s reaches the 30 s limit of HTTP API integrations`);
    }
    const env = isObject(p.Environment) && isObject(p.Environment.Variables) ? p.Environment.Variables : {};
    for (const name of Object.keys(env)) if (LAMBDA_RESERVED_ENV.has(name)) problems.push(`${fn.name}: sets the reserved variable ${name}`);
    if (env.DEPLOYMENT !== 'aws') problems.push(`${fn.name}: DEPLOYMENT must be "aws"`);
    // docs/webhooks.md "Server-side request forgery": a deployed stage never sends to loopback, private addresses or plain http.
    if (env.WEBHOOK_ALLOW_PRIVATE_TARGETS !== 'false') problems.push(`${fn.name}: WEBHOOK_ALLOW_PRIVATE_TARGETS must be "false" in a deployed stage, is ${JSON.stringify(env.WEBHOOK_ALLOW_PRIVATE_TARGETS)}`);
    for (const [key, def] of Object.entries(registry.TABLES)) {
      if (!isDeepStrictEqual(env[def.envVar], { Ref: registry.naming.table(key) })) {
        problems.push(`${fn.name}: ${def.envVar} must be { Ref: ${registry.naming.table(key)} }, is ${JSON.stringify(env[def.envVar])}`);
      }
    }
    const envBytes = Object.entries(env).reduce((n, [k, v]) => n + k.length + (typeof v === 'string' ? Buffer.byteLength(v) : 64), 0);
    if (envBytes > 4096) problems.push(`${fn.name}: environment is about ${envBytes} bytes (Lambda allows 4 KiB)`);
    const extra = fn.environment ?? {};
    if ('ADMIN_TOKEN' in env && !('ADMIN_TOKEN' in extra)) problems.push(`${fn.name}: receives ADMIN_TOKEN without needing it`);
  }
  for (const [id, res] of Object.entries(resources)) {
    if (res.Type === 'AWS::Lambda::Function' && !known.has(id)) problems.push(`${id}: a function that infra/functions.json does not list`);
  }
  return { name: 'functions: handler, nodejs24.x arm64, table names, webhooks to public addresses only, no reserved or stray secrets', summary: `${fns.length} functions`, problems };
}

/** Every HTTP function has its route `METHOD /path` on an integration that invokes exactly it; no other routes. */
export function checkRoutes(template: CfnTemplate): RuleResult {
  const problems: string[] = [];
  const resources = template.Resources;
  const routes = new Map<string, string>();
  for (const [id, res] of Object.entries(resources)) {
    if (res.Type !== 'AWS::ApiGatewayV2::Route') continue;
    const key = String(res.Properties?.RouteKey);
    const target = res.Properties?.Target;
    const join = isObject(target) ? target['Fn::Join'] : undefined;
    const parts = Array.isArray(join) && Array.isArray(join[1]) ? join[1] : [];
    const integrationRef = parts.find((x): x is JsonObject => isObject(x) && typeof x.Ref === 'string');
    const integration = integrationRef ? resources[String(integrationRef.Ref)] : undefined;
    const uri = integration?.Properties?.IntegrationUri;
    const getAtt = isObject(uri) ? uri['Fn::GetAtt'] : undefined;
    const fnId = Array.isArray(getAtt) ? String(getAtt[0]) : `(route ${id} has no Lambda integration)`;
    if (routes.has(key)) problems.push(`route ${key} is defined twice`);
    routes.set(key, fnId);
  }
  const http = registry.allFunctions().filter((fn) => fn.kind === 'http');
  const expected = new Set<string>();
  for (const fn of http) {
    const key = `${fn.method} ${fn.path}`;
    expected.add(key);
    const fnId = routes.get(key);
    if (!fnId) problems.push(`${fn.name}: no AWS::ApiGatewayV2::Route "${key}"`);
    else if (fnId !== registry.naming.lambda(fn.name)) problems.push(`${fn.name}: route "${key}" invokes ${fnId}, expected ${registry.naming.lambda(fn.name)}`);
  }
  // Every path also has `ANY /path` to methodNotAllowed (405 with Allow for the other methods).
  for (const gateway of registry.allFunctions().filter((fn) => fn.kind === 'gateway')) {
    for (const p of registry.httpPaths()) {
      const key = `ANY ${p}`;
      expected.add(key);
      const fnId = routes.get(key);
      if (!fnId) problems.push(`${gateway.name}: no AWS::ApiGatewayV2::Route "${key}"`);
      else if (fnId !== registry.naming.lambda(gateway.name)) problems.push(`route "${key}" invokes ${fnId}, expected ${registry.naming.lambda(gateway.name)}`);
    }
  }
  for (const key of routes.keys()) if (!expected.has(key)) problems.push(`route "${key}" is not in infra/functions.json`);
  return { name: 'every HTTP function has its route METHOD /path, every path ANY /path to methodNotAllowed (and no other route exists)', summary: `${http.length} routes`, problems };
}

/** Every scheduled function has an enabled EventBridge rule with its expression. */
export function checkSchedules(template: CfnTemplate): RuleResult {
  const problems: string[] = [];
  const rules = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Events::Rule');
  const scheduled = registry.allFunctions().filter((fn) => fn.kind === 'scheduled');
  for (const fn of scheduled) {
    const lambdaId = registry.naming.lambda(fn.name);
    const found = rules.some(
      (r) =>
        r.Properties?.ScheduleExpression === fn.schedule &&
        r.Properties?.State === 'ENABLED' &&
        asArray(r.Properties?.Targets).some((t) => isObject(t) && isDeepStrictEqual(t.Arn, { 'Fn::GetAtt': [lambdaId, 'Arn'] })),
    );
    if (!found) problems.push(`${fn.name}: no enabled AWS::Events::Rule "${fn.schedule}" targeting ${lambdaId}`);
  }
  return { name: 'every scheduled function has its enabled schedule rule', summary: `${scheduled.length} schedules`, problems };
}

/**
 * What every stream consumer's event source mapping must say, whatever generated it (so a change
 * of infra/registry.cjs STREAM_MAPPING fails here until this policy changes with it):
 * - it reads its table's stream (`StreamArn`) from the oldest change kept (`TRIM_HORIZON`): a new
 *   mapping, or one created again, counts what the stream still holds rather than only what comes;
 * - one batch per shard at a time (`ParallelizationFactor` 1): the statistics' checkpoints count a
 *   shard's changes in order (lib/store/stats-counters.ts);
 * - a failed batch is split (`BisectBatchOnFunctionError`) and retried with no limit of attempts
 *   or age (-1, -1): nothing is skipped while the stream keeps it (24 h);
 * - what the stream drops unapplied is described in the StreamFailureQueue (`DestinationConfig`);
 * - no `FilterCriteria` (a filter would drop changes the derived data counts, silently);
 * - `FunctionResponseTypes` [ReportBatchItemFailures] and a tumbling window (the event carries the
 *   shard), with the entry's batchSize, batchWindowSeconds and tumblingWindowSeconds;
 * - created after its role (`DependsOn`), which must allow reading the stream when Lambda checks.
 */
const STREAM_MAPPING_POLICY: [string, (fn: RegistryFunction) => Json][] = [
  ['Enabled', () => true],
  ['EventSourceArn', (fn) => ({ 'Fn::GetAtt': [registry.naming.table(String(fn.table)), 'StreamArn'] })],
  ['StartingPosition', () => 'TRIM_HORIZON'],
  ['ParallelizationFactor', () => 1],
  ['BisectBatchOnFunctionError', () => true],
  ['MaximumRetryAttempts', () => -1],
  ['MaximumRecordAgeInSeconds', () => -1],
  ['FunctionResponseTypes', () => ['ReportBatchItemFailures']],
  ['DestinationConfig', () => ({ OnFailure: { Destination: { 'Fn::GetAtt': [registry.naming.streamFailureQueue, 'Arn'] } } })],
  ['FilterCriteria', () => null],
  ['BatchSize', (fn) => fn.batchSize ?? null],
  ['MaximumBatchingWindowInSeconds', (fn) => fn.batchWindowSeconds ?? null],
  ['TumblingWindowInSeconds', (fn) => fn.tumblingWindowSeconds ?? null],
];

/** Every stream function is fed by exactly one event source mapping, on its table's stream, as STREAM_MAPPING_POLICY says; no other mapping exists. */
export function checkStreams(template: CfnTemplate): RuleResult {
  const problems: string[] = [];
  const resources = template.Resources;
  const mappings = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Lambda::EventSourceMapping');
  const streamFunctions = registry.allFunctions().filter((fn) => fn.kind === 'stream');
  const matched = new Set<string>();
  for (const fn of streamFunctions) {
    const lambdaId = registry.naming.lambda(fn.name);
    const own = mappings.filter(([, m]) => isDeepStrictEqual(m.Properties?.FunctionName, { 'Fn::GetAtt': [lambdaId, 'Arn'] }));
    for (const [id] of own) matched.add(id);
    if (own.length !== 1) {
      problems.push(`${fn.name}: ${own.length} AWS::Lambda::EventSourceMapping invoking ${lambdaId}, expected 1`);
      continue;
    }
    const [id, mapping] = own[0]!;
    const p = mapping.Properties ?? {};
    for (const [property, want] of STREAM_MAPPING_POLICY) {
      const got = p[property] ?? null;
      const expected = want(fn);
      if (!isDeepStrictEqual(got, expected)) problems.push(`${fn.name}: ${id}.${property} is ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`);
    }
    if (!asArray(mapping.DependsOn).includes(registry.naming.role(fn.name))) problems.push(`${fn.name}: ${id} does not depend on its role ${registry.naming.role(fn.name)} (it could be created before the role may read the stream)`);
    const table = resources[registry.naming.table(String(fn.table))];
    const view = isObject(table?.Properties?.StreamSpecification) ? table.Properties.StreamSpecification.StreamViewType : undefined;
    if (view !== 'NEW_AND_OLD_IMAGES') problems.push(`${fn.name}: the ${fn.table} table streams ${JSON.stringify(view)}, not NEW_AND_OLD_IMAGES (the derived data compares old and new images)`);
  }
  for (const [id, m] of mappings) if (!matched.has(id)) problems.push(`${id}: an event source mapping (of ${JSON.stringify(m.Properties?.FunctionName)}) that infra/functions.json does not list`);
  return {
    name: 'every stream function reads its table\'s stream from TRIM_HORIZON, a shard at a time, bisecting and retrying until the stream drops a change, then to its failure queue',
    summary: `${streamFunctions.length} event source mapping${streamFunctions.length === 1 ? '' : 's'}`,
    problems,
  };
}

/**
 * The operations an AWS engineer expects of the packaged stack (docs/runbook.md "Alarms"):
 * alarms on the API's 5xx rate, on errors and throttles of every evidence function, on anchors
 * pending too long and on a low wallet balance, on anchors the reconciler keeps failing to advance,
 * on the ledger fee cap and the TSA clock drift (metric filters of the stack on the reconciler's
 * log lines), each notifying the alarm topic; an on-failure
 * destination for every scheduled function; for every stream function an alarm on its iterator
 * age (Maximum, a threshold in milliseconds, firing within 15 minutes) and one on its failure
 * queue; reserved concurrency 1 for the reconciler; stage throttling and JSON access logs; active
 * X-Ray tracing on every function.
 */
export function checkOperations(template: CfnTemplate): RuleResult {
  const problems: string[] = [];
  const resources = template.Resources;
  const topic = { Ref: registry.naming.alarmTopic };
  if (resources[registry.naming.alarmTopic]?.Type !== 'AWS::SNS::Topic') problems.push(`no AWS::SNS::Topic ${registry.naming.alarmTopic}`);
  if (resources[registry.naming.failureQueue]?.Type !== 'AWS::SQS::Queue') problems.push(`no AWS::SQS::Queue ${registry.naming.failureQueue}`);
  const streamFunctions = registry.allFunctions().filter((fn) => fn.kind === 'stream');
  if (streamFunctions.length > 0 && resources[registry.naming.streamFailureQueue]?.Type !== 'AWS::SQS::Queue') problems.push(`no AWS::SQS::Queue ${registry.naming.streamFailureQueue}`);
  const alarms = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::CloudWatch::Alarm');
  for (const [id, a] of alarms) {
    if (!asArray(a.Properties?.AlarmActions).some((x) => isDeepStrictEqual(x, topic))) problems.push(`${id}: does not notify ${registry.naming.alarmTopic}`);
  }
  const metricOf = (a: CfnResource) => String(a.Properties?.MetricName ?? '');
  /** Every metric an alarm watches: its MetricName, or those of its metric math. */
  const metricsOf = (a: CfnResource) => [
    ...(a.Properties?.MetricName ? [String(a.Properties.MetricName)] : []),
    ...asArray(a.Properties?.Metrics).flatMap((m) => (isObject(m) && isObject(m.MetricStat) && isObject(m.MetricStat.Metric) ? [String(m.MetricStat.Metric.MetricName)] : [])),
  ];
  const dimensionValue = (a: CfnResource) => asArray(a.Properties?.Dimensions).map((d) => (isObject(d) ? d.Value : undefined))[0];
  const has = (what: string, test: (a: CfnResource) => boolean) => {
    if (!alarms.some(([, a]) => test(a))) problems.push(`no alarm on ${what}`);
  };
  has('the API 5xx rate', (a) =>
    asArray(a.Properties?.Metrics).some((m) => isObject(m) && isObject(m.MetricStat) && isObject(m.MetricStat.Metric) && m.MetricStat.Metric.MetricName === '5xx'),
  );
  for (const fn of registry.allFunctions().filter(registry.isEvidenceFunction)) {
    const lambda = { Ref: registry.naming.lambda(fn.name) };
    for (const metric of ['Errors', 'Throttles']) {
      has(`${metric} of ${fn.name}`, (a) => a.Properties?.Namespace === 'AWS/Lambda' && metricOf(a) === metric && isDeepStrictEqual(dimensionValue(a), lambda));
    }
  }
  has('anchors pending too long', (a) => metricOf(a) === 'OldestPendingAnchorAgeSeconds');
  has('a low wallet balance', (a) => metricOf(a) === 'WalletBalanceBelowLow' && a.Properties?.TreatMissingData === 'breaching');
  // docs/webhooks.md "Operations in AWS": failed deliveries, and how late the oldest due one is (silence: the worker stopped).
  has('failed webhook deliveries', (a) => metricOf(a) === 'WebhookDeliveriesFailed');
  has('the oldest due webhook delivery', (a) => metricOf(a) === 'WebhookOldestDueAgeSeconds' && a.Properties?.TreatMissingData === 'breaching');
  const onQueue = (queue: string) => (a: CfnResource) =>
    a.Properties?.Namespace === 'AWS/SQS' && isDeepStrictEqual(dimensionValue(a), { 'Fn::GetAtt': [queue, 'QueueName'] });
  has('failed scheduled runs', onQueue(registry.naming.failureQueue));
  if (streamFunctions.length > 0) has(`stream changes dropped unapplied (${registry.naming.streamFailureQueue})`, onQueue(registry.naming.streamFailureQueue));
  for (const fn of streamFunctions) {
    const lambda = { Ref: registry.naming.lambda(fn.name) };
    // IteratorAge is in milliseconds: a threshold of 60 (meant as seconds) would alarm on every batch.
    has(`the iterator age of ${fn.name} (Maximum, 1 s to 1 h in milliseconds, within 15 minutes)`, (a) => {
      const p = a.Properties ?? {};
      const threshold = Number(p.Threshold);
      return (
        p.Namespace === 'AWS/Lambda' &&
        metricOf(a) === 'IteratorAge' &&
        isDeepStrictEqual(dimensionValue(a), lambda) &&
        p.Statistic === 'Maximum' &&
        threshold >= 1000 &&
        threshold <= 3_600_000 &&
        Number(p.Period) * Number(p.EvaluationPeriods) <= 900
      );
    });
  }
  // The runbook's former hand-made alarms: reconcile stuck (EMF), and two from the reconciler's log lines.
  has('anchors the reconciler keeps failing to advance', (a) => metricsOf(a).includes('ReconcileFailures'));
  const reconcileLogs = { Ref: registry.naming.logGroup('reconcile') };
  for (const [what, literal, value] of [
    ['the ledger fee cap', '"ledger_fee_cap"', '1'],
    ['the TSA clock drift', '"ledger: health"', '$.clockDriftSeconds'],
  ] as const) {
    const filter = Object.values(resources).find(
      (r) =>
        r.Type === 'AWS::Logs::MetricFilter' &&
        isDeepStrictEqual(r.Properties?.LogGroupName, reconcileLogs) &&
        String(r.Properties?.FilterPattern).includes(literal) &&
        asArray(r.Properties?.MetricTransformations).some((t) => isObject(t) && t.MetricValue === value),
    );
    const transform = asArray(filter?.Properties?.MetricTransformations).find(isObject);
    if (!filter || !transform) problems.push(`no metric filter for ${what} (${literal} → ${value}) on ${reconcileLogs.Ref}`);
    else has(what, (a) => metricsOf(a).includes(String(transform.MetricName)));
  }

  const invokeConfigs = Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::EventInvokeConfig');
  for (const fn of registry.allFunctions()) {
    const lambda = resources[registry.naming.lambda(fn.name)];
    if (!lambda) continue;
    const tracing = lambda.Properties?.TracingConfig;
    if (!isObject(tracing) || tracing.Mode !== 'Active') problems.push(`${fn.name}: X-Ray tracing is not Active`);
    if (fn.kind === 'scheduled') {
      const config = invokeConfigs.find((c) => isDeepStrictEqual(c.Properties?.FunctionName, { Ref: registry.naming.lambda(fn.name) }));
      const destination = config?.Properties?.DestinationConfig;
      const onFailure = isObject(destination) && isObject(destination.OnFailure) ? destination.OnFailure.Destination : undefined;
      if (!isDeepStrictEqual(onFailure, { 'Fn::GetAtt': [registry.naming.failureQueue, 'Arn'] })) problems.push(`${fn.name}: no on-failure destination to ${registry.naming.failureQueue}`);
    }
    const reserved = fn.reservedConcurrency;
    if (reserved !== undefined && lambda.Properties?.ReservedConcurrentExecutions !== reserved) {
      problems.push(`${fn.name}: reserved concurrency ${String(lambda.Properties?.ReservedConcurrentExecutions)}, expected ${reserved}`);
    }
  }
  const stage = resources.HttpApiStage?.Properties;
  const route = isObject(stage?.DefaultRouteSettings) ? stage.DefaultRouteSettings : {};
  if (route.ThrottlingBurstLimit === undefined || route.ThrottlingRateLimit === undefined) problems.push('HttpApiStage: no default route throttling');
  const access = isObject(stage?.AccessLogSettings) ? stage.AccessLogSettings : {};
  let format: unknown;
  try {
    format = JSON.parse(String(access.Format ?? ''));
  } catch {
    format = undefined;
  }
  if (!access.DestinationArn || !isObject(format) || !('requestId' in format) || !('status' in format)) problems.push('HttpApiStage: no JSON access log with requestId and status');
  return {
    name: 'operations: alarms to the topic, failure destinations, stream iterator age, reconciler concurrency 1, stage throttling and access logs, X-Ray',
    summary: `${alarms.length} alarms`,
    problems,
  };
}

/** The WebACL template of infra/edge-waf.cjs, as check-template writes it for us-east-1. */
