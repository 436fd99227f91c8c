/**
 * Deployment rules against the registry (infra/functions.json and infra/tables.json via
 * infra/registry.cjs): one role per function, no wildcards, DynamoDB and KMS grants exactly as the
 * registry says, public reads write nothing; every table's settings.
 */
import { isDeepStrictEqual } from 'node:util';
import registry from '../registry.cjs';
import type { KmsKey, RegistryFunction } from '../registry.cjs';
import { type CfnResource, type Json, type RuleResult, asArray, isObject, show, sorted } from './common.js';

/** Services a function role may name at all. */
const ALLOWED_SERVICES = new Set(['logs', 'dynamodb', 'kms', 'xray', 'sqs']);
/** Active tracing: the only X-Ray actions a role needs (they take no resource ARN). */
const XRAY_WRITE_ACTIONS = new Set(['xray:PutTraceSegments', 'xray:PutTelemetryRecords']);
const LOG_ACTIONS = ['logs:CreateLogStream', 'logs:PutLogEvents'];

export interface Statement {
  Effect?: Json;
  Action?: Json;
  NotAction?: Json;
  Resource?: Json;
  NotResource?: Json;
  Principal?: Json;
  Condition?: Json;
}

/** Where the checks find a function's role, and which literal ARN is which KMS key. */
export interface DeploymentView {
  resources: Record<string, CfnResource>;
  /** The role logical id a function runs with, or undefined when it has none of its own. */
  roleOf(fn: RegistryFunction): string | undefined;
  /** Logical ids of every function in the deployment (registry or not) → their role logical id. */
  allFunctionRoles(): Map<string, string | undefined>;
  /** KMS resource values (literal ARNs, or `${self:custom.kms.…}` before resolution) → key. */
  kmsKeyOf(resource: string): KmsKey | undefined;
}

/** All statements of a role: its inline policies and any AWS::IAM::Policy attached to it by Ref. */
export function roleStatements(resources: Record<string, CfnResource>, roleId: string): Statement[] {
  const role = resources[roleId];
  const out: Statement[] = [];
  const fromDoc = (doc: Json | undefined) => {
    if (isObject(doc)) for (const s of asArray(doc.Statement)) if (isObject(s)) out.push(s as Statement);
  };
  for (const p of asArray(role?.Properties?.Policies)) if (isObject(p)) fromDoc(p.PolicyDocument);
  for (const res of Object.values(resources)) {
    if (res.Type !== 'AWS::IAM::Policy' && res.Type !== 'AWS::IAM::ManagedPolicy') continue;
    const roles = asArray(res.Properties?.Roles);
    if (roles.some((r) => isObject(r) && r.Ref === roleId)) fromDoc(res.Properties?.PolicyDocument);
  }
  return out;
}

type ResourceTarget =
  | { kind: 'table'; table: string }
  | { kind: 'stream'; table: string }
  | { kind: 'index'; table: string; index: string }
  | { kind: 'logGroup'; id: string }
  | { kind: 'literal'; value: string }
  | { kind: 'other'; text: string };

function classifyResource(resources: Record<string, CfnResource>, tableByLogicalId: Map<string, string>, r: Json): ResourceTarget {
  if (typeof r === 'string') return { kind: 'literal', value: r };
  if (isObject(r)) {
    const getAtt = r['Fn::GetAtt'];
    if (Array.isArray(getAtt) && getAtt[1] === 'Arn' && typeof getAtt[0] === 'string') {
      const table = tableByLogicalId.get(getAtt[0]);
      if (table) return { kind: 'table', table };
      if (resources[getAtt[0]]?.Type === 'AWS::Logs::LogGroup') return { kind: 'logGroup', id: getAtt[0] };
    }
    if (Array.isArray(getAtt) && getAtt[1] === 'StreamArn' && typeof getAtt[0] === 'string') {
      const table = tableByLogicalId.get(getAtt[0]);
      if (table) return { kind: 'stream', table };
    }
    const sub = r['Fn::Sub'];
    if (typeof sub === 'string') {
      const m = /^\$\{([A-Za-z0-9]+)\.Arn\}\/index\/([A-Za-z0-9_.-]+)$/.exec(sub);
      const table = m?.[1] ? tableByLogicalId.get(m[1]) : undefined;
      if (m?.[2] && table) return { kind: 'index', table, index: m[2] };
    }
  }
  return { kind: 'other', text: JSON.stringify(r) };
}

/** Runs every least-privilege rule over one deployment view (the packaged template or the generator output). */
export function checkLeastPrivilege(view: DeploymentView): RuleResult[] {
  const { resources } = view;
  const fns = registry.allFunctions();
  const tableByLogicalId = new Map(Object.keys(registry.TABLES).map((key) => [registry.naming.table(key), key]));

  const ownRole: string[] = [];
  const wildcards: string[] = [];
  const services: string[] = [];
  const logs: string[] = [];
  const dynamo: string[] = [];
  const streams: string[] = [];
  const queues: string[] = [];
  const kms: string[] = [];
  const publicReads: string[] = [];

  // One role per function: no function without its own role, no role shared by two functions.
  const users = new Map<string, string[]>();
  for (const [fnId, roleId] of view.allFunctionRoles()) {
    if (!roleId) ownRole.push(`${fnId}: has no role of its own`);
    else users.set(roleId, [...(users.get(roleId) ?? []), fnId]);
  }
  for (const [roleId, fnIds] of users) if (fnIds.length > 1) ownRole.push(`${roleId} is shared by ${fnIds.join(', ')}`);

  // No wildcard anywhere in an Allow statement of any IAM policy, and no NotAction/NotResource.
  for (const [id, res] of Object.entries(resources)) {
    if (!['AWS::IAM::Role', 'AWS::IAM::Policy', 'AWS::IAM::ManagedPolicy'].includes(res.Type)) continue;
    const statements = res.Type === 'AWS::IAM::Role' ? roleStatements({ [id]: res }, id) : asArray(isObject(res.Properties?.PolicyDocument) ? res.Properties.PolicyDocument.Statement : undefined).filter(isObject);
    if (res.Type === 'AWS::IAM::Role' && asArray(res.Properties?.ManagedPolicyArns).length > 0) {
      wildcards.push(`${id}: attaches managed policies (their grants cannot be checked here)`);
    }
    for (const s of statements as Statement[]) {
      if (s.Effect !== 'Allow') continue;
      if (s.NotAction !== undefined || s.NotResource !== undefined) wildcards.push(`${id}: uses NotAction/NotResource`);
      for (const a of asArray(s.Action)) if (typeof a !== 'string' || a.includes('*')) wildcards.push(`${id}: action ${JSON.stringify(a)} has a wildcard`);
      // X-Ray's write actions take no resource ARN: `*` is allowed for exactly those two, nothing else.
      const xrayOnly = asArray(s.Action).length > 0 && asArray(s.Action).every((a) => typeof a === 'string' && XRAY_WRITE_ACTIONS.has(a));
      for (const r of asArray(s.Resource)) {
        if (xrayOnly && r === '*') continue;
        if (JSON.stringify(r).includes('*')) wildcards.push(`${id}: resource ${JSON.stringify(r)} has a wildcard`);
      }
      if (asArray(s.Resource).length === 0) wildcards.push(`${id}: a statement names no resource`);
    }
  }

  for (const fn of fns) {
    const roleId = view.roleOf(fn);
    const role = roleId ? resources[roleId] : undefined;
    if (!roleId || !role) {
      ownRole.push(`${fn.name}: role ${roleId ?? '(none)'} is not in the template`);
      continue;
    }
    if (role.Type !== 'AWS::IAM::Role') {
      ownRole.push(`${fn.name}: ${roleId} is a ${role.Type}, not an AWS::IAM::Role`);
      continue;
    }
    if (!lambdaOnlyTrust(role.Properties?.AssumeRolePolicyDocument)) ownRole.push(`${fn.name}: ${roleId} must be assumable by lambda.amazonaws.com only`);

    const expected = registry.expectedGrants(fn);
    const gotTable = new Map<string, Set<string>>();
    const gotIndex = new Map<string, Set<string>>();
    const gotKms = new Map<KmsKey, Set<string>>();
    const gotStream = new Map<string, Set<string>>();
    const gotQueues = new Set<string>();
    const gotLogs = new Set<string>();
    for (const s of roleStatements(resources, roleId)) {
      if (s.Effect !== 'Allow') continue;
      const actions = asArray(s.Action).map(String);
      const targets = asArray(s.Resource).map((r) => classifyResource(resources, tableByLogicalId, r));
      for (const action of actions) {
        const service = action.split(':')[0] ?? '';
        if (!ALLOWED_SERVICES.has(service)) services.push(`${fn.name}: action ${action} (only ${[...ALLOWED_SERVICES].join(', ')} are expected)`);
        if (service === 'xray' && !XRAY_WRITE_ACTIONS.has(action)) services.push(`${fn.name}: ${action} (tracing needs only ${[...XRAY_WRITE_ACTIONS].join(', ')})`);
        if (service === 'sqs') {
          // Only to the failure queue of its kind (expectedGrants: scheduled → ScheduledFailureQueue,
          // stream → StreamFailureQueue), only SendMessage.
          const named = asArray(s.Resource).map((r) => expected.queues.find((q) => isDeepStrictEqual(r, { 'Fn::GetAtt': [q, 'Arn'] })));
          if (action !== 'sqs:SendMessage' || named.length === 0 || named.some((q) => q === undefined)) {
            queues.push(`${fn.name}: ${action} on ${JSON.stringify(s.Resource)} (a ${fn.kind} function may send only to ${show(expected.queues)})`);
          } else for (const q of named) gotQueues.add(q as string);
        }
        for (const t of targets) {
          if (service === 'dynamodb') {
            if (t.kind === 'table') (gotTable.get(t.table) ?? gotTable.set(t.table, new Set()).get(t.table))!.add(action);
            else if (t.kind === 'stream') (gotStream.get(t.table) ?? gotStream.set(t.table, new Set()).get(t.table))!.add(action);
            else if (t.kind === 'index') {
              const k = `${t.table}/index/${t.index}`;
              (gotIndex.get(k) ?? gotIndex.set(k, new Set()).get(k))!.add(action);
            } else dynamo.push(`${fn.name}: ${action} on ${describeTarget(t)} (not a table or index of infra/tables.json)`);
          } else if (service === 'kms') {
            const key = t.kind === 'literal' ? view.kmsKeyOf(t.value) : undefined;
            if (!key) kms.push(`${fn.name}: ${action} on ${describeTarget(t)}, which is none of the service's KMS keys`);
            else (gotKms.get(key) ?? gotKms.set(key, new Set()).get(key))!.add(action);
          } else if (service === 'logs') {
            if (t.kind !== 'logGroup' || t.id !== registry.naming.logGroup(fn.name)) {
              logs.push(`${fn.name}: ${action} on ${describeTarget(t)}, not its own log group ${registry.naming.logGroup(fn.name)}`);
            } else gotLogs.add(action);
          }
        }
      }
    }

    // Logs: exactly stream creation and writes on its own group (the group itself is in the template).
    if (!isDeepStrictEqual(sorted(gotLogs), LOG_ACTIONS)) logs.push(`${fn.name}: logs actions ${show(sorted(gotLogs))}, expected ${show(LOG_ACTIONS)}`);

    // DynamoDB: the tables of the access map, each with exactly its actions; indexes read-only.
    for (const table of sorted([...gotTable.keys(), ...Object.keys(expected.dynamo)])) {
      const got = sorted(gotTable.get(table) ?? []);
      const want = expected.dynamo[table]?.table ?? [];
      if (!isDeepStrictEqual(got, want)) {
        dynamo.push(`${fn.name}: ${table} (access ${fn.access[table] ?? 'none'}) grants ${show(got)}; expected ${show(want)}`);
      }
    }
    const wantIndex = new Map<string, string[]>();
    for (const [table, g] of Object.entries(expected.dynamo)) for (const index of g.indexes) if (g.index.length) wantIndex.set(`${table}/index/${index}`, g.index);
    for (const k of sorted([...gotIndex.keys(), ...wantIndex.keys()])) {
      const got = sorted(gotIndex.get(k) ?? []);
      const want = wantIndex.get(k) ?? [];
      if (!isDeepStrictEqual(got, want)) dynamo.push(`${fn.name}: index ${k} grants ${show(got)}; expected ${show(want)}`);
    }

    // Streams: a stream function reads exactly its table's stream with exactly the mapping's
    // actions (the event source mapping reads with its role); no other function reads a stream.
    for (const table of sorted([...gotStream.keys(), ...Object.keys(expected.stream)])) {
      const got = sorted(gotStream.get(table) ?? []);
      const want = expected.stream[table] ?? [];
      if (!isDeepStrictEqual(got, want)) streams.push(`${fn.name}: the ${table} table's stream grants ${show(got)}; expected ${show(want)}`);
    }
    // Queues: the on-failure destination of its kind can be sent to (Lambda sends with its role).
    const wantQueues = sorted(expected.queues);
    if (!isDeepStrictEqual(sorted(gotQueues), wantQueues)) queues.push(`${fn.name}: may send to ${show(sorted(gotQueues))}; expected ${show(wantQueues)}`);

    // KMS: exactly the keys it needs, each with exactly the actions of its use.
    for (const key of sorted([...gotKms.keys(), ...Object.keys(expected.kms)]) as KmsKey[]) {
      const got = sorted(gotKms.get(key) ?? []);
      const want = expected.kms[key] ?? [];
      if (!isDeepStrictEqual(got, want)) kms.push(`${fn.name}: KMS key ${key} grants ${show(got)}; expected ${show(want)}`);
    }

    // Public reads: whatever the registry says, no write at all (decisions.md "Limits").
    if (registry.isPublicRead(fn)) {
      for (const [table, actions] of gotTable) {
        const writes = [...actions].filter((a) => registry.WRITE_ACTIONS.has(a));
        if (writes.length) publicReads.push(`${fn.name} (public ${fn.method} ${fn.path}) may write ${table}: ${writes.join(', ')}`);
      }
    }
  }

  const n = fns.length;
  const publicCount = fns.filter((f) => registry.isPublicRead(f)).length;
  const streamCount = fns.filter((f) => f.kind === 'stream').length;
  return [
    { name: 'every function has its own role, assumable by Lambda only', summary: `${n} functions, ${n} roles`, problems: ownRole },
    { name: 'no IAM Allow statement has a wildcard action or resource', summary: 'no * (but X-Ray writes, which take no ARN), no NotAction/NotResource, no managed policies', problems: wildcards },
    { name: 'roles name only logs, dynamodb, kms and sqs actions and X-Ray writes', summary: `${n} roles`, problems: services },
    { name: 'sqs: scheduled and stream functions send exactly to the failure queue of their kind, no other function to any', summary: `${fns.filter((f) => registry.expectedGrants(f).queues.length > 0).length} functions with a failure destination`, problems: queues },
    { name: 'logs: each function writes only its own log group', summary: `${n} log groups`, problems: logs },
    { name: 'dynamodb: each role grants exactly its registry access map', summary: 'tables and index ARNs match infra/functions.json', problems: dynamo },
    { name: 'dynamodb streams: a stream function reads exactly its table\'s stream, no other function any', summary: `${streamCount} stream function${streamCount === 1 ? '' : 's'}: ${registry.STREAM_READ_ACTIONS.join(', ')} on StreamArn`, problems: streams },
    { name: 'kms: each role reaches exactly the keys it needs', summary: 'Sign/GetPublicKey/Decrypt per key as infra/registry.cjs', problems: kms },
    { name: 'public GET functions write no table', summary: `${publicCount} public GET functions`, problems: publicReads },
  ];
}

/** The trust policy lets exactly the Lambda service assume the role. */
function lambdaOnlyTrust(doc: Json | undefined): boolean {
  const statements = isObject(doc) ? asArray(doc.Statement) : [];
  return (
    statements.length > 0 &&
    statements.every(
      (s) =>
        isObject(s) &&
        s.Effect === 'Allow' &&
        isDeepStrictEqual(asArray(s.Action), ['sts:AssumeRole']) &&
        isObject(s.Principal) &&
        Object.keys(s.Principal).length === 1 &&
        isDeepStrictEqual(asArray(s.Principal.Service), ['lambda.amazonaws.com']),
    )
  );
}

function describeTarget(t: ResourceTarget): string {
  switch (t.kind) {
    case 'table':
      return `table ${t.table}`;
    case 'stream':
      return `the ${t.table} table's stream`;
    case 'index':
      return `index ${t.table}/${t.index}`;
    case 'logGroup':
      return `log group ${t.id}`;
    case 'literal':
      return t.value;
    case 'other':
      return t.text;
  }
}

/** Every table of infra/tables.json with its keys, indexes, on-demand billing, PITR, TTL, SSE and Retain. */
export function checkTables(resources: Record<string, CfnResource>): RuleResult {
  const problems: string[] = [];
  const tableIds = new Set<string>();
  for (const [key, def] of Object.entries(registry.TABLES)) {
    const id = registry.naming.table(key);
    tableIds.add(id);
    const res = resources[id];
    if (!res || res.Type !== 'AWS::DynamoDB::Table') {
      problems.push(`${key}: no AWS::DynamoDB::Table ${id}`);
      continue;
    }
    const p = res.Properties ?? {};
    const want: [string, Json | undefined, Json | undefined][] = [
      ['BillingMode', p.BillingMode, 'PAY_PER_REQUEST'],
      ['PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled', isObject(p.PointInTimeRecoverySpecification) ? p.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled : undefined, true],
      ['SSESpecification.SSEEnabled', isObject(p.SSESpecification) ? p.SSESpecification.SSEEnabled : undefined, true],
      ['KeySchema', p.KeySchema, def.KeySchema as Json],
      ['AttributeDefinitions', p.AttributeDefinitions, def.AttributeDefinitions as Json],
      ['GlobalSecondaryIndexes', p.GlobalSecondaryIndexes, def.GlobalSecondaryIndexes as Json | undefined],
      ['TimeToLiveSpecification', p.TimeToLiveSpecification, def.TimeToLiveAttribute ? { AttributeName: def.TimeToLiveAttribute, Enabled: true } : undefined],
      ['StreamSpecification', p.StreamSpecification, def.StreamSpecification ? { StreamViewType: def.StreamSpecification.StreamViewType } : undefined],
      ['DeletionPolicy', res.DeletionPolicy, 'Retain'],
      ['UpdateReplacePolicy', res.UpdateReplacePolicy, 'Retain'],
    ];
    for (const [what, got, expected] of want) {
      if (!isDeepStrictEqual(got, expected)) problems.push(`${key}: ${what} is ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`);
    }
    if (p.ProvisionedThroughput !== undefined) problems.push(`${key}: on-demand tables take no ProvisionedThroughput`);
  }
  for (const [id, res] of Object.entries(resources)) {
    if (res.Type === 'AWS::DynamoDB::Table' && !tableIds.has(id)) problems.push(`${id}: a table that infra/tables.json does not define`);
  }
  return {
    name: 'tables match infra/tables.json: on demand, PITR, TTL, stream, SSE, retained',
    summary: `${tableIds.size} tables`,
    problems,
  };
}

