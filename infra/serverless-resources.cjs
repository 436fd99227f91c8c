'use strict';
/**
 * serverless.yml `resources:` generated from infra/tables.json and infra/functions.json
 * (`${file(./infra/serverless-resources.cjs)}`):
 *  - one DynamoDB table per definition: on demand, point-in-time recovery, TTL where the
 *    definition names an expiry attribute, encrypted with KMS, retained on delete and replace;
 *  - one IAM role per function granting exactly its access map (tables and their index ARNs),
 *    its own log group, and the KMS keys it needs, and a stream function its table's stream and
 *    the stream failure queue — nothing with `*` as action or resource (but X-Ray's writes).
 * KMS key ARNs come from serverless.yml `custom.kms`; on any stage but `dev` every deployment
 * parameter that is a placeholder, missing or malformed (infra/deploy-params.cjs) stops
 * packaging, each named, so a real deploy cannot ship a policy on a fake key.
 */

const { existsSync, readFileSync } = require('node:fs');
const path = require('node:path');
const registry = require('./registry.cjs');
const { buildEdgeResources, buildEdgeApiExtension, edgeEnabled } = require('./edge-waf.cjs');
const { PLACEHOLDER_STAGES, parameterProblems } = require('./deploy-params.cjs');

const ROOT = path.resolve(__dirname, '..');
/** The edge as the generator tests see it, before osls resolves serverless.yml's custom.edge. */
const UNRESOLVED_EDGE = {
  webAclArn: '${self:custom.edge.webAclArn}',
  originSecret: '${self:custom.edge.originSecret}',
  originDomain: '${self:custom.edge.originDomain}',
  originCertificateArn: '${self:custom.edge.originCertificateArn}',
  originClientCertificateArn: '${self:custom.edge.originClientCertificateArn}',
  originTruststoreUri: '${self:custom.edge.originTruststoreUri}',
  originTruststoreVersion: '',
  originHostedZoneId: '',
};

/** One CloudFormation table from one infra/tables.json definition. */
function buildTable(key, def) {
  const properties = {
    TableName: { 'Fn::Sub': `\${AWS::StackName}-${key}` },
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: def.AttributeDefinitions,
    KeySchema: def.KeySchema,
    PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
    DeletionProtectionEnabled: true,
    Tags: [{ Key: 'table', Value: key }],
  };
  if (def.GlobalSecondaryIndexes) properties.GlobalSecondaryIndexes = def.GlobalSecondaryIndexes;
  if (def.TimeToLiveAttribute) properties.TimeToLiveSpecification = { AttributeName: def.TimeToLiveAttribute, Enabled: true };
  if (def.StreamSpecification) properties.StreamSpecification = { StreamViewType: def.StreamSpecification.StreamViewType };
  return {
    Type: 'AWS::DynamoDB::Table',
    // Evidence must outlive the stack: neither `osls remove` nor a replacing update deletes data.
    DeletionPolicy: 'Retain',
    UpdateReplacePolicy: 'Retain',
    Properties: properties,
  };
}

/** The IAM statements of one function: logs, then one per table (and its indexes), then one per KMS key. */
function buildStatements(fn) {
  const grants = registry.expectedGrants(fn);
  const statements = [
    {
      Sid: 'OwnLogGroup',
      Effect: 'Allow',
      Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
      // The log group's Arn attribute ends in `:*`, which covers its log streams and nothing else.
      Resource: [{ 'Fn::GetAtt': [registry.naming.logGroup(fn.name), 'Arn'] }],
    },
  ];
  for (const [table, grant] of Object.entries(grants.dynamo)) {
    const logicalId = registry.naming.table(table);
    statements.push({
      Sid: `Table${logicalId}`,
      Effect: 'Allow',
      Action: grant.table,
      Resource: [{ 'Fn::GetAtt': [logicalId, 'Arn'] }],
    });
    if (grant.index.length > 0) {
      statements.push({
        Sid: `Indexes${logicalId}`,
        Effect: 'Allow',
        Action: grant.index,
        Resource: grant.indexes.map((name) => ({ 'Fn::Sub': `\${${logicalId}.Arn}/index/${name}` })),
      });
    }
  }
  // A stream function's event source mapping reads the table's stream with the function's role
  // (osls grants this only to its shared role, which no function here uses).
  for (const [table, actions] of Object.entries(grants.stream)) {
    const logicalId = registry.naming.table(table);
    statements.push({ Sid: `Stream${logicalId}`, Effect: 'Allow', Action: actions, Resource: [{ 'Fn::GetAtt': [logicalId, 'StreamArn'] }] });
  }
  // Active X-Ray tracing (provider.tracing.lambda): Lambda sends the function's segments with its
  // role; X-Ray's write actions take no resource ARN, so this is the one `*` resource.
  statements.push({ Sid: 'XRayTraces', Effect: 'Allow', Action: ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'], Resource: ['*'] });
  // The on-failure destination of its kind: Lambda sends there with the function's role (a
  // scheduled run's failed event; a stream batch's description once the stream dropped it).
  for (const queue of grants.queues) {
    statements.push({ Sid: queue, Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: [{ 'Fn::GetAtt': [queue, 'Arn'] }] });
  }
  for (const [key, actions] of Object.entries(grants.kms)) {
    statements.push({
      Sid: `Kms${key.charAt(0).toUpperCase()}${key.slice(1)}`,
      Effect: 'Allow',
      Action: actions,
      Resource: [`\${self:custom.kms.${registry.KMS_KEYS[key].custom}}`],
    });
  }
  return statements;
}

/** One role per function, assumable by Lambda only, with an inline least-privilege policy. */
function buildRole(fn) {
  return {
    Type: 'AWS::IAM::Role',
    Properties: {
      Description: `Least-privilege role of the ${fn.name} function (generated from infra/functions.json)`,
      AssumeRolePolicyDocument: {
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Principal: { Service: ['lambda.amazonaws.com'] }, Action: ['sts:AssumeRole'] }],
      },
      Policies: [{ PolicyName: `${fn.name}-least-privilege`, PolicyDocument: { Version: '2012-10-17', Statement: buildStatements(fn) } }],
    },
  };
}

/** The custom metrics the reconciler publishes (EMF, functions/jobs/reconcile.ts). */
const METRICS_NAMESPACE = 'EvidenceAnchoring';
/** Metrics the stack derives from the reconciler's JSON log lines (per stack: two stages may share an account). */
const LOG_METRICS_NAMESPACE = { 'Fn::Sub': 'EvidenceAnchoring/${AWS::StackName}' };
/**
 * Log lines → metrics (AWS::Logs::MetricFilter on the reconcile function's log group): the
 * `ledger_fee_cap` alert of lib/ledger/replacement.ts, and the clock drift of the
 * `ledger: health` line the ledger's resend job logs on every reconcile run (lib/ledger/resend.ts).
 */
const LOG_METRICS = {
  LedgerFeeCap: { pattern: '{ $.alert = "ledger_fee_cap" }', metric: 'LedgerFeeCapReached', value: '1' },
  ClockDrift: { pattern: '{ $.msg = "ledger: health" }', metric: 'ClockDriftSeconds', value: '$.clockDriftSeconds' },
};

const alarm = (description, properties) => ({
  Type: 'AWS::CloudWatch::Alarm',
  Properties: {
    AlarmDescription: description,
    AlarmActions: [{ Ref: registry.naming.alarmTopic }],
    OKActions: [{ Ref: registry.naming.alarmTopic }],
    ...properties,
  },
});

/**
 * The alarms an on-call engineer needs (docs/runbook.md "Alarms"), all notifying AlarmTopic:
 * the API's 5xx rate, errors and throttles of every evidence function, anchors pending too long
 * and a low wallet balance (custom metrics of the reconciler, so a reconciler that stops
 * publishing alarms too), failed scheduled runs in the failure queue, and for each stream
 * function its iterator age (derived data behind) and its failure queue (changes dropped).
 */
function buildOperations() {
  const Resources = {};
  Resources[registry.naming.alarmTopic] = {
    Type: 'AWS::SNS::Topic',
    Properties: { DisplayName: 'Evidence anchoring alarms', KmsMasterKeyId: 'alias/aws/sns' },
  };
  Resources[registry.naming.failureQueue] = {
    Type: 'AWS::SQS::Queue',
    Properties: { MessageRetentionPeriod: 1209600, SqsManagedSseEnabled: true },
  };
  // A stream consumer's on-failure destination (its own queue: its messages describe stream
  // batches, not invocations): 14 days, the most SQS keeps a message.
  Resources[registry.naming.streamFailureQueue] = {
    Type: 'AWS::SQS::Queue',
    Properties: { MessageRetentionPeriod: 1209600, SqsManagedSseEnabled: true },
  };
  Resources.ApiServerErrorRateAlarm = alarm('More than 1 % of API requests answered 5xx over 5 minutes (twice in a row)', {
    ComparisonOperator: 'GreaterThanThreshold',
    Threshold: 1,
    EvaluationPeriods: 2,
    DatapointsToAlarm: 2,
    TreatMissingData: 'notBreaching',
    Metrics: [
      {
        Id: 'errors',
        ReturnData: false,
        MetricStat: { Metric: { Namespace: 'AWS/ApiGateway', MetricName: '5xx', Dimensions: [{ Name: 'ApiId', Value: { Ref: 'HttpApi' } }] }, Period: 300, Stat: 'Sum' },
      },
      {
        Id: 'requests',
        ReturnData: false,
        MetricStat: { Metric: { Namespace: 'AWS/ApiGateway', MetricName: 'Count', Dimensions: [{ Name: 'ApiId', Value: { Ref: 'HttpApi' } }] }, Period: 300, Stat: 'Sum' },
      },
      { Id: 'rate', Label: '5xx per 100 requests', ReturnData: true, Expression: 'IF(requests > 0, 100 * errors / requests, 0)' },
    ],
  });
  for (const fn of registry.allFunctions().filter(registry.isEvidenceFunction)) {
    const lambda = { Ref: registry.naming.lambda(fn.name) };
    const base = registry.naming.lambda(fn.name).replace(/LambdaFunction$/, '');
    for (const [metric, threshold] of [
      ['Errors', 1],
      ['Throttles', 1],
    ]) {
      Resources[`${base}${metric}Alarm`] = alarm(`${fn.name}: ${metric.toLowerCase()} in the last 5 minutes`, {
        Namespace: 'AWS/Lambda',
        MetricName: metric,
        Dimensions: [{ Name: 'FunctionName', Value: lambda }],
        Statistic: 'Sum',
        Period: 300,
        EvaluationPeriods: 1,
        Threshold: threshold,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      });
    }
  }
  for (const fn of registry.allFunctions().filter((f) => f.kind === 'stream')) {
    const base = registry.naming.lambda(fn.name).replace(/LambdaFunction$/, '');
    // IteratorAge (milliseconds): how old the last change of a batch was when Lambda handed it to
    // the function. Above a minute for five minutes in a row, a shard is stuck or behind.
    Resources[`${base}IteratorAgeAlarm`] = alarm(`${fn.name}: the ${fn.table} table's changes waited more than 60 s for the function, 5 minutes in a row (derived data behind; nothing is lost while the stream keeps them, 24 h)`, {
      Namespace: 'AWS/Lambda',
      MetricName: 'IteratorAge',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: registry.naming.lambda(fn.name) } }],
      Statistic: 'Maximum',
      Period: 60,
      EvaluationPeriods: 5,
      DatapointsToAlarm: 5,
      Threshold: 60000,
      ComparisonOperator: 'GreaterThanThreshold',
      // No batch, no datapoint: a quiet stream is not behind (a throttled one alarms on Throttles).
      TreatMissingData: 'notBreaching',
    });
  }
  Resources.AnchorsPendingTooLongAlarm = alarm('An anchor has been waiting for its ledger transaction for more than 10 minutes', {
    Namespace: METRICS_NAMESPACE,
    MetricName: 'OldestPendingAnchorAgeSeconds',
    Dimensions: [{ Name: 'service', Value: 'evidence-anchoring' }],
    Statistic: 'Maximum',
    Period: 300,
    EvaluationPeriods: 2,
    Threshold: 600,
    ComparisonOperator: 'GreaterThanThreshold',
    TreatMissingData: 'notBreaching',
  });
  Resources.WalletBalanceLowAlarm = alarm('The ledger wallet is below LEDGER_LOW_BALANCE_WEI (or the reconciler stopped reporting it)', {
    Namespace: METRICS_NAMESPACE,
    MetricName: 'WalletBalanceBelowLow',
    Dimensions: [{ Name: 'service', Value: 'evidence-anchoring' }],
    Statistic: 'Maximum',
    Period: 300,
    EvaluationPeriods: 2,
    Threshold: 1,
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    // Published every minute by the reconciler: silence means it is not running.
    TreatMissingData: 'breaching',
  });
  // Webhooks (docs/webhooks.md "Operations in AWS"; EMF of functions/jobs/webhook-deliver.ts, every minute).
  Resources.WebhookDeliveriesFailedAlarm = alarm('More than 10 webhook deliveries failed for good (their retry schedule ran out, or the endpoint was disabled) in an hour', {
    Namespace: METRICS_NAMESPACE,
    MetricName: 'WebhookDeliveriesFailed',
    Dimensions: [{ Name: 'service', Value: 'evidence-anchoring' }],
    Statistic: 'Sum',
    Period: 3600,
    EvaluationPeriods: 1,
    Threshold: 10,
    ComparisonOperator: 'GreaterThanThreshold',
    TreatMissingData: 'notBreaching',
  });
  Resources.WebhookDeliveriesLateAlarm = alarm('The oldest due webhook delivery has waited more than 5 minutes past its time (or the delivery worker stopped reporting)', {
    Namespace: METRICS_NAMESPACE,
    MetricName: 'WebhookOldestDueAgeSeconds',
    Dimensions: [{ Name: 'service', Value: 'evidence-anchoring' }],
    Statistic: 'Maximum',
    Period: 300,
    EvaluationPeriods: 2,
    Threshold: 300,
    ComparisonOperator: 'GreaterThanThreshold',
    // Published every minute by the worker: silence means it is not running.
    TreatMissingData: 'breaching',
  });
  // The runbook's former hand-made alarms (docs/runbook.md "Alarms"), from the reconciler's own lines.
  const reconcileLogs = { Ref: registry.naming.logGroup('reconcile') };
  Resources.ReconcileStuckAlarm = alarm('Anchors the reconciler could not advance, in every run for 15 minutes (EMF ReconcileFailures)', {
    Namespace: METRICS_NAMESPACE,
    MetricName: 'ReconcileFailures',
    Dimensions: [{ Name: 'service', Value: 'evidence-anchoring' }],
    Statistic: 'Minimum',
    Period: 300,
    EvaluationPeriods: 3,
    DatapointsToAlarm: 3,
    Threshold: 0,
    ComparisonOperator: 'GreaterThanThreshold',
    TreatMissingData: 'notBreaching',
  });
  for (const [id, filter] of Object.entries(LOG_METRICS)) {
    Resources[`${id}MetricFilter`] = {
      Type: 'AWS::Logs::MetricFilter',
      Properties: {
        LogGroupName: reconcileLogs,
        FilterPattern: filter.pattern,
        MetricTransformations: [{ MetricNamespace: LOG_METRICS_NAMESPACE, MetricName: filter.metric, MetricValue: filter.value, Unit: 'None' }],
      },
    };
  }
  Resources.LedgerFeeCapAlarm = alarm('A stuck ledger transaction can no longer be replaced: the fee bump would cross LEDGER_MAX_FEE_GWEI', {
    Namespace: LOG_METRICS_NAMESPACE,
    MetricName: LOG_METRICS.LedgerFeeCap.metric,
    Statistic: 'Sum',
    Period: 300,
    EvaluationPeriods: 1,
    Threshold: 1,
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    TreatMissingData: 'notBreaching',
  });
  Resources.TsaClockDriftAlarm = alarm('The Lambda clock (which the TSA writes into every token) and the latest block are more than 60 s apart for 15 minutes', {
    ComparisonOperator: 'GreaterThanThreshold',
    Threshold: 60,
    EvaluationPeriods: 3,
    DatapointsToAlarm: 3,
    TreatMissingData: 'notBreaching',
    Metrics: [
      {
        Id: 'drift',
        ReturnData: false,
        MetricStat: { Metric: { Namespace: LOG_METRICS_NAMESPACE, MetricName: LOG_METRICS.ClockDrift.metric }, Period: 300, Stat: 'Maximum' },
      },
      {
        Id: 'mindrift',
        ReturnData: false,
        MetricStat: { Metric: { Namespace: LOG_METRICS_NAMESPACE, MetricName: LOG_METRICS.ClockDrift.metric }, Period: 300, Stat: 'Minimum' },
      },
      { Id: 'absdrift', Label: 'largest clock drift, seconds either way', ReturnData: true, Expression: 'MAX([ABS(drift), ABS(mindrift)])' },
    ],
  });
  Resources.StreamFailuresAlarm = alarm('Stream changes were dropped unapplied: the stream expired them (24 h) while their batch kept failing; see the stream failure queue', {
    Namespace: 'AWS/SQS',
    MetricName: 'ApproximateNumberOfMessagesVisible',
    Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [registry.naming.streamFailureQueue, 'QueueName'] } }],
    Statistic: 'Maximum',
    Period: 300,
    EvaluationPeriods: 1,
    Threshold: 1,
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    TreatMissingData: 'notBreaching',
  });
  Resources.ScheduledFailuresAlarm = alarm('A scheduled run (reconcile, quota reset) failed after its retries: see the failure queue', {
    Namespace: 'AWS/SQS',
    MetricName: 'ApproximateNumberOfMessagesVisible',
    Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [registry.naming.failureQueue, 'QueueName'] } }],
    Statistic: 'Maximum',
    Period: 300,
    EvaluationPeriods: 1,
    Threshold: 1,
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    TreatMissingData: 'notBreaching',
  });
  return Resources;
}

/**
 * Overrides of resources osls generates itself: the HTTP API's default stage gets route
 * throttling (`HttpApiStage`, merged by osls' `resources.extensions`).
 */
function buildExtensions(edgeOn) {
  return {
    ...(edgeOn ? buildEdgeApiExtension() : {}),
    HttpApiStage: {
      Properties: {
        DefaultRouteSettings: {
          ThrottlingBurstLimit: '${param:apiBurstLimit, 500}',
          ThrottlingRateLimit: '${param:apiRateLimit, 1000}',
          DetailedMetricsEnabled: true,
        },
      },
    },
  };
}

/**
 * `{ Resources, Outputs, extensions }` for serverless.yml. `edge`: the resolved custom.edge values
 * with the edge on, or null with it off (dev without a WebACL: no distribution, the HTTP API's own
 * endpoint); the generator tests call it with no argument (the edge on, references unresolved).
 */
function buildResources(edge = UNRESOLVED_EDGE) {
  registry.assertValidRegistry();
  const Resources = {};
  const Outputs = {};
  for (const [key, def] of Object.entries(registry.TABLES)) {
    const logicalId = registry.naming.table(key);
    Resources[logicalId] = buildTable(key, def);
    Outputs[`${logicalId}Name`] = { Description: `${def.envVar}`, Value: { Ref: logicalId } };
  }
  for (const fn of registry.allFunctions()) Resources[registry.naming.role(fn.name)] = buildRole(fn);
  Object.assign(Resources, buildOperations());
  if (edge) {
    Object.assign(Resources, buildEdgeResources(edge));
    Outputs.EdgeUrl = { Description: 'The public address of the API (CloudFront with the edge WebACL)', Value: { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': ['EdgeDistribution', 'DomainName'] }]] } };
    Outputs.EdgeOriginTarget = {
      Description: 'Where the origin name (edgeOriginDomain) must point (alias or CNAME) when the stack does not create its record (no edgeOriginHostedZoneId)',
      Value: { 'Fn::GetAtt': ['EdgeOriginDomainName', 'RegionalDomainName'] },
    };
  } else {
    Outputs.ApiUrl = { Description: 'The public address of the API (edge off: the HTTP API itself)', Value: { 'Fn::GetAtt': ['HttpApi', 'ApiEndpoint'] } };
  }
  Outputs.AlarmTopicArn = { Description: 'Subscribe the on-call rotation here (every alarm notifies it)', Value: { Ref: registry.naming.alarmTopic } };
  return { Resources, Outputs, extensions: buildExtensions(Boolean(edge)) };
}

/**
 * Refuses, on every stage but dev, every deployment parameter that is a placeholder, missing or
 * malformed, and every key file that is missing (infra/deploy-params.cjs), all at once, each by
 * its `--param` name. On dev only a half-given edge is refused (a WebACL without its origin).
 * osls passes resolveVariable.
 */
async function assertDeployable(resolveVariable, edgeOn) {
  const stage = await resolveVariable('sls:stage');
  const region = await resolveVariable('self:provider.region');
  const keysDir = await resolveVariable('self:custom.keysDir');
  const get = async (p) => resolveVariable(`self:${p}`);
  const readFile = async (file) => {
    const full = path.join(ROOT, file);
    return existsSync(full) ? readFileSync(full) : undefined;
  };
  let problems = await parameterProblems({ get, readFile, edge: edgeOn, keysDir, region });
  if (PLACEHOLDER_STAGES.has(stage)) problems = problems.filter((p) => p.startsWith('edge'));
  if (problems.length > 0) {
    const error = new Error(`stage "${stage}" cannot be deployed as configured; pass --param="<name>=…" for each (docs/runbook.md):\n  ${problems.join('\n  ')}`);
    error.stack = error.message; // osls prints the stack: the list is the whole story
    throw error;
  }
}

module.exports = async ({ resolveVariable } = {}) => {
  if (!resolveVariable) return buildResources();
  const edgeOn = await edgeEnabled(resolveVariable);
  await assertDeployable(resolveVariable, edgeOn);
  if (!edgeOn) return buildResources(null);
  const edge = {};
  for (const key of Object.keys(UNRESOLVED_EDGE)) edge[key] = await resolveVariable(`self:custom.edge.${key}`);
  return buildResources(edge);
};
module.exports.buildResources = buildResources;
module.exports.buildStatements = buildStatements;
module.exports.buildTable = buildTable;
module.exports.METRICS_NAMESPACE = METRICS_NAMESPACE;
module.exports.LOG_METRICS = LOG_METRICS;
