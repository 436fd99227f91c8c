/**
 * Offline rules for the CloudFormation template that `osls package` writes, shared by
 * infra/check-template.ts (the packaged template) and test/infra/template.test.ts (the generator
 * output, without osls). Each rule returns a list of problems; an empty list means it holds.
 *
 * Two families:
 *  - spec rules, against the CloudFormation resource specification in @aws-cdk/aws-service-spec:
 *    known resource types, known properties, required properties, Ref/GetAtt/Sub/DependsOn targets;
 *  - deployment rules, against infra/functions.json and infra/tables.json (via infra/registry.cjs):
 *    one role per function, no wildcards, DynamoDB and KMS grants exactly as the registry says,
 *    public reads write nothing, every route and schedule, every stream consumer's event source
 *    mapping, every table's settings, the edge.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Property, PropertyType, Resource as SpecResource, SpecDatabase } from '@aws-cdk/service-spec-types';
import edgeWaf from './edge-waf.cjs';
import registry from './registry.cjs';
import type { KmsKey, RegistryFunction } from './registry.cjs';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface CfnResource {
  Type: string;
  Properties?: JsonObject;
  DependsOn?: string | string[];
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
  Condition?: string;
  Metadata?: Json;
}

export interface CfnTemplate {
  AWSTemplateFormatVersion?: string;
  Description?: string;
  Parameters?: Record<string, Json>;
  Conditions?: Record<string, Json>;
  Mappings?: Record<string, Json>;
  Resources: Record<string, CfnResource>;
  Outputs?: Record<string, Json>;
}

export interface RuleResult {
  /** What the rule asserts, one line. */
  name: string;
  /** What holds when it passes (counts), for the report. */
  summary: string;
  problems: string[];
}

const PSEUDO_PARAMETERS = new Set([
  'AWS::AccountId',
  'AWS::NotificationARNs',
  'AWS::NoValue',
  'AWS::Partition',
  'AWS::Region',
  'AWS::StackId',
  'AWS::StackName',
  'AWS::URLSuffix',
]);

const TEMPLATE_SECTIONS = new Set([
  'AWSTemplateFormatVersion',
  'Description',
  'Metadata',
  'Parameters',
  'Rules',
  'Mappings',
  'Conditions',
  'Transform',
  'Resources',
  'Outputs',
]);
const RESOURCE_KEYS = new Set(['Type', 'Properties', 'DependsOn', 'DeletionPolicy', 'UpdateReplacePolicy', 'Condition', 'Metadata', 'CreationPolicy', 'UpdatePolicy']);
const POLICIES = new Set(['Delete', 'Retain', 'Snapshot', 'RetainExceptOnCreate']);

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

/** Services a function role may name at all. */
const ALLOWED_SERVICES = new Set(['logs', 'dynamodb', 'kms', 'xray', 'sqs']);
/** Active tracing: the only X-Ray actions a role needs (they take no resource ARN). */
const XRAY_WRITE_ACTIONS = new Set(['xray:PutTraceSegments', 'xray:PutTelemetryRecords']);
const LOG_ACTIONS = ['logs:CreateLogStream', 'logs:PutLogEvents'];

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const asArray = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const sorted = (xs: Iterable<string>): string[] => [...new Set(xs)].sort();
const show = (xs: string[]): string => (xs.length ? xs.join(', ') : '(none)');

/** `{ Ref }`, `{ Fn::* }` or `{ Condition }`: a value CloudFormation computes, not checkable offline. */
function isIntrinsic(v: unknown): boolean {
  if (!isObject(v)) return false;
  const keys = Object.keys(v);
  return keys.length === 1 && (keys[0] === 'Ref' || keys[0] === 'Condition' || (keys[0] ?? '').startsWith('Fn::'));
}

// ---------------------------------------------------------------------------------------------
// Spec rules
// ---------------------------------------------------------------------------------------------

function specResource(db: SpecDatabase, type: string): SpecResource | undefined {
  return db.lookup('resource', 'cloudFormationType', 'equals', type)[0];
}

/** Every resource type exists in the CloudFormation specification; resource-level keys are valid. */
export function checkResourceTypes(template: CfnTemplate, db: SpecDatabase): RuleResult {
  const problems: string[] = [];
  for (const key of Object.keys(template)) if (!TEMPLATE_SECTIONS.has(key)) problems.push(`unknown template section "${key}"`);
  const types = new Set<string>();
  for (const [id, res] of Object.entries(template.Resources)) {
    types.add(res.Type);
    if (!specResource(db, res.Type)) problems.push(`${id}: unknown resource type ${res.Type}`);
    for (const key of Object.keys(res)) if (!RESOURCE_KEYS.has(key)) problems.push(`${id}: unknown resource attribute "${key}"`);
    for (const policy of [res.DeletionPolicy, res.UpdateReplacePolicy]) {
      if (policy !== undefined && !POLICIES.has(policy)) problems.push(`${id}: unknown deletion/replace policy "${policy}"`);
    }
  }
  return {
    name: 'resource types are known to the CloudFormation spec',
    summary: `${Object.keys(template.Resources).length} resources of ${types.size} types`,
    problems,
  };
}

/** Every property is known (at every depth), has the right shape, and every required property is set. */
export function checkProperties(template: CfnTemplate, db: SpecDatabase): RuleResult {
  const problems: string[] = [];
  let checked = 0;
  for (const [id, res] of Object.entries(template.Resources)) {
    const spec = specResource(db, res.Type);
    if (!spec) continue;
    checked += checkObjectProperties(db, spec.properties, res.Properties ?? {}, id, problems);
  }
  return { name: 'properties are known, well-shaped and required ones present', summary: `${checked} property values checked`, problems };
}

function checkObjectProperties(db: SpecDatabase, props: Record<string, Property>, value: JsonObject, path: string, problems: string[]): number {
  let checked = 0;
  for (const [name, prop] of Object.entries(props)) {
    if (prop.required && !(name in value)) problems.push(`${path}: required property ${name} is missing`);
  }
  for (const [name, v] of Object.entries(value)) {
    const prop = props[name];
    if (!prop) {
      problems.push(`${path}: unknown property ${name}`);
      continue;
    }
    checked += 1 + checkValue(db, prop.type, v, `${path}.${name}`, problems);
  }
  return checked;
}

function checkValue(db: SpecDatabase, type: PropertyType, value: Json, path: string, problems: string[]): number {
  if (isIntrinsic(value)) return 0;
  switch (type.type) {
    case 'json':
      return 0;
    case 'string':
    case 'date-time':
      if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') problems.push(`${path}: expected a string`);
      else if (type.type === 'string' && type.allowedValues && !type.allowedValues.includes(String(value))) {
        problems.push(`${path}: "${String(value)}" is not one of ${type.allowedValues.join(', ')}`);
      }
      return 0;
    case 'number':
    case 'integer':
      if (typeof value !== 'number' && !(typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))) {
        problems.push(`${path}: expected a number`);
      }
      return 0;
    case 'boolean':
      if (typeof value !== 'boolean' && value !== 'true' && value !== 'false') problems.push(`${path}: expected a boolean`);
      return 0;
    case 'null':
      return 0;
    case 'tag':
      if (!isObject(value) || !('Key' in value) || !('Value' in value)) problems.push(`${path}: expected a tag { Key, Value }`);
      return 0;
    case 'array': {
      if (!Array.isArray(value)) {
        problems.push(`${path}: expected a list`);
        return 0;
      }
      return value.reduce<number>((n, el, i) => n + checkValue(db, type.element, el, `${path}[${i}]`, problems), 0);
    }
    case 'map': {
      if (!isObject(value)) {
        problems.push(`${path}: expected a map`);
        return 0;
      }
      return Object.entries(value).reduce<number>((n, [k, el]) => n + checkValue(db, type.element, el, `${path}.${k}`, problems), 0);
    }
    case 'ref': {
      if (!isObject(value)) {
        problems.push(`${path}: expected an object`);
        return 0;
      }
      const def = db.get('typeDefinition', type.reference);
      return checkObjectProperties(db, def.properties, value, path, problems);
    }
    case 'union': {
      // Older spec versions typed many structures as plain `json`; the union keeps both. Check
      // against the structured alternative of the same shape and fall back to `json` only when
      // none has that shape, so that a typo inside a structure is still caught.
      const structured = type.types.filter((t) => t.type !== 'json' && shapeMatches(t, value));
      if (structured.length === 0) {
        if (type.types.some((t) => t.type === 'json')) return 0;
        problems.push(`${path}: value matches none of the allowed types`);
        return 0;
      }
      let best: string[] | undefined;
      let bestCount = 0;
      for (const t of structured) {
        const local: string[] = [];
        const count = checkValue(db, t, value, path, local);
        if (!best || local.length < best.length) {
          best = local;
          bestCount = count;
        }
        if (local.length === 0) break;
      }
      problems.push(...(best ?? []));
      return bestCount;
    }
    default:
      return 0;
  }
}

function shapeMatches(type: PropertyType, value: Json): boolean {
  switch (type.type) {
    case 'array':
      return Array.isArray(value);
    case 'map':
    case 'ref':
    case 'tag':
      return isObject(value);
    case 'string':
    case 'date-time':
      return typeof value === 'string';
    case 'number':
    case 'integer':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
    case 'union':
      return type.types.some((t) => shapeMatches(t, value));
    default:
      return false;
  }
}

/** Every Ref, GetAtt (with an attribute the type has), Sub variable, DependsOn and Condition resolves. */
export function checkReferences(template: CfnTemplate, db: SpecDatabase): RuleResult {
  const problems: string[] = [];
  const resources = template.Resources;
  const parameters = new Set(Object.keys(template.Parameters ?? {}));
  const conditions = new Set(Object.keys(template.Conditions ?? {}));
  let count = 0;

  const checkRef = (name: string, where: string) => {
    count++;
    if (!resources[name] && !parameters.has(name) && !PSEUDO_PARAMETERS.has(name)) problems.push(`${where}: Ref ${name} names nothing`);
  };
  const checkGetAtt = (id: string, attr: string, where: string) => {
    count++;
    const res = resources[id];
    if (!res) return void problems.push(`${where}: GetAtt ${id}.${attr}: no resource ${id}`);
    const spec = specResource(db, res.Type);
    if (spec && !(attr in spec.attributes)) {
      problems.push(`${where}: GetAtt ${id}.${attr}: ${res.Type} has no attribute ${attr} (has ${show(Object.keys(spec.attributes))})`);
    }
  };
  const walk = (v: Json, where: string): void => {
    if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${where}[${i}]`));
    if (!isObject(v)) return;
    for (const [key, arg] of Object.entries(v)) {
      if (key === 'Ref' && typeof arg === 'string') checkRef(arg, where);
      else if (key === 'Fn::GetAtt') {
        const [id, ...attr] = typeof arg === 'string' ? arg.split('.') : Array.isArray(arg) ? arg.map(String) : [];
        if (id === undefined || attr.length === 0) problems.push(`${where}: malformed Fn::GetAtt`);
        else checkGetAtt(id, attr.join('.'), where);
      } else if (key === 'Fn::Sub') {
        const [text, vars] = typeof arg === 'string' ? [arg, {}] : Array.isArray(arg) ? [arg[0], arg[1]] : [undefined, undefined];
        if (typeof text !== 'string') problems.push(`${where}: malformed Fn::Sub`);
        else {
          const local = new Set(Object.keys(isObject(vars) ? vars : {}));
          for (const m of text.matchAll(/\$\{([^}!][^}]*)\}/g)) {
            const name = (m[1] ?? '').trim();
            if (local.has(name)) continue;
            const dot = name.indexOf('.');
            if (dot > 0) checkGetAtt(name.slice(0, dot), name.slice(dot + 1), `${where} (Fn::Sub)`);
            else checkRef(name, `${where} (Fn::Sub)`);
          }
        }
        if (Array.isArray(arg) && arg[1] !== undefined) walk(arg[1], where);
        continue;
      } else if ((key === 'Condition' || key === 'Fn::If') && !conditions.has(String(Array.isArray(arg) ? arg[0] : arg))) {
        if (typeof arg === 'string' || Array.isArray(arg)) problems.push(`${where}: condition ${String(Array.isArray(arg) ? arg[0] : arg)} is not defined`);
      }
      walk(arg, where);
    }
  };

  for (const [id, res] of Object.entries(resources)) {
    for (const dep of asArray(res.DependsOn)) {
      count++;
      if (!resources[dep]) problems.push(`${id}: DependsOn ${dep} names no resource`);
    }
    if (res.Condition !== undefined && !conditions.has(res.Condition)) problems.push(`${id}: condition ${res.Condition} is not defined`);
    if (res.Properties) walk(res.Properties, id);
  }
  for (const [id, out] of Object.entries(template.Outputs ?? {})) walk(out, `Outputs.${id}`);
  return { name: 'every Ref, GetAtt, Sub and DependsOn target exists', summary: `${count} references resolved`, problems };
}

// ---------------------------------------------------------------------------------------------
// Deployment rules (registry)
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Packaged template only (osls compiled functions, routes and schedules)
// ---------------------------------------------------------------------------------------------

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
  return { name: 'functions: handler, nodejs24.x arm64, table names, no reserved or stray secrets', summary: `${fns.length} functions`, problems };
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
export interface EdgeWafTemplate {
  Resources: Record<string, CfnResource>;
}

/** Headers a cached answer may depend on: when the origin gets one, the cache key must hold it. */
const KEYED_HEADERS = ['authorization', 'x-api-key', 'accept-encoding'];
/** What CloudFront's managed policies (fixed ids) put in the cache key and pass to the origin. */
const MANAGED_CACHE_POLICIES: Record<string, { headers: string[]; ttl: { min: number; def: number; max: number } } | undefined> = {
  [edgeWaf.CACHING_DISABLED]: { headers: [], ttl: { min: 0, def: 0, max: 0 } },
};
const MANAGED_ORIGIN_REQUEST_POLICIES: Record<string, { all: boolean; headers: string[]; cookies: boolean } | undefined> = {
  [edgeWaf.ALL_VIEWER_EXCEPT_HOST]: { all: true, headers: [], cookies: true },
};

/** A behaviour's cache policy, resolved: from the template (Ref) or a managed one (id). */
function cachePolicyOf(resources: Record<string, CfnResource>, id: Json | undefined) {
  if (typeof id === 'string') return MANAGED_CACHE_POLICIES[id];
  const res = isObject(id) && typeof id.Ref === 'string' ? resources[id.Ref] : undefined;
  const config = res?.Type === 'AWS::CloudFront::CachePolicy' && isObject(res.Properties?.CachePolicyConfig) ? res.Properties.CachePolicyConfig : undefined;
  if (!config) return undefined;
  const key = isObject(config.ParametersInCacheKeyAndForwardedToOrigin) ? config.ParametersInCacheKeyAndForwardedToOrigin : {};
  const headersConfig = isObject(key.HeadersConfig) ? key.HeadersConfig : {};
  const headers = headersConfig.HeaderBehavior === 'whitelist' ? asArray(headersConfig.Headers).map((h) => String(h).toLowerCase()) : [];
  if (key.EnableAcceptEncodingGzip === true || key.EnableAcceptEncodingBrotli === true) headers.push('accept-encoding');
  const cookies = isObject(key.CookiesConfig) ? key.CookiesConfig.CookieBehavior : undefined;
  const query = isObject(key.QueryStringsConfig) ? key.QueryStringsConfig.QueryStringBehavior : undefined;
  return { headers, cookies, query, ttl: { min: Number(config.MinTTL), def: Number(config.DefaultTTL), max: Number(config.MaxTTL) } };
}

/** What a behaviour's origin request policy passes on: every viewer header (but a list), or a list. */
function originRequestOf(resources: Record<string, CfnResource>, id: Json | undefined) {
  if (id === undefined) return { all: false, headers: [] as string[], cookies: false };
  if (typeof id === 'string') return MANAGED_ORIGIN_REQUEST_POLICIES[id];
  const res = isObject(id) && typeof id.Ref === 'string' ? resources[id.Ref] : undefined;
  const config = res?.Type === 'AWS::CloudFront::OriginRequestPolicy' && isObject(res.Properties?.OriginRequestPolicyConfig) ? res.Properties.OriginRequestPolicyConfig : undefined;
  if (!config) return undefined;
  const h = isObject(config.HeadersConfig) ? config.HeadersConfig : {};
  const listed = asArray(h.Headers).map((x) => String(x).toLowerCase());
  const behavior = String(h.HeaderBehavior);
  const all = behavior === 'allViewer' || behavior === 'allViewerAndWhitelistCloudFront' || behavior === 'allExcept';
  const excluded = behavior === 'allExcept' ? listed : [];
  const c = isObject(config.CookiesConfig) ? config.CookiesConfig.CookieBehavior : 'none';
  return { all, headers: behavior === 'whitelist' || behavior === 'allViewerAndWhitelistCloudFront' ? listed : [], excluded, cookies: c !== 'none' };
}

/**
 * The edge (infra/edge-waf.cjs, docs/decisions.md "Deploying"). With the edge on: the public reads
 * are limited per client address by a WAF rate-based rule in front of every function, and nothing
 * goes around it: a CloudFront distribution with a WebACL from us-east-1 whose one origin is the
 * HTTP API's own custom domain, which requires mutual TLS with the client certificate CloudFront
 * presents, the execute-api endpoint disabled, the secret origin header equal
 * to every function's EDGE_ORIGIN_SECRET and PUBLIC_RATE_LIMIT=edge. Caching: the default
 * behaviour caches nothing; a cached behaviour (every `edgeCache` path of infra/functions.json has
 * one) follows the origin's Cache-Control (no default TTL, a year at most), keys on the query
 * string, and any credential or encoding header the origin receives is part of its key, with no
 * cookies. Every behaviour answers with HSTS and nosniff. With the edge off (dev only): no
 * distribution, the functions count in process and need no secret, execute-api stays on. In the
 * WebACL's template: scope CLOUDFRONT and a rate-based rule per IP over GET and HEAD, a 60-second
 * window, the limit the functions are configured with (PUBLIC_RATE_PER_MINUTE), answering 429 with
 * Retry-After.
 */
export function checkEdge(template: CfnTemplate, waf: EdgeWafTemplate, stage = 'dev'): RuleResult {
  const problems: string[] = [];
  const resources = template.Resources;
  const dist = resources.EdgeDistribution;
  const config = isObject(dist?.Properties?.DistributionConfig) ? dist.Properties.DistributionConfig : undefined;
  const api = resources.HttpApi?.Properties ?? {};
  const httpFunctions = registry.allFunctions().filter((f) => f.kind === 'http');
  const envOf = (fn: RegistryFunction) => {
    const vars = resources[registry.naming.lambda(fn.name)]?.Properties?.Environment;
    return isObject(vars) && isObject(vars.Variables) ? vars.Variables : {};
  };
  let limit: number | undefined;
  for (const fn of httpFunctions) {
    const rate = Number(envOf(fn).PUBLIC_RATE_PER_MINUTE);
    if (Number.isInteger(rate)) limit ??= rate;
  }

  if (!dist) {
    if (stage !== 'dev') problems.push(`EdgeDistribution: no CloudFront distribution in front of the API (the edge is required on stage ${stage})`);
    else {
      if (api.DisableExecuteApiEndpoint === true) problems.push('HttpApi: the execute-api endpoint is disabled with no edge in front: nothing could reach the API');
      for (const fn of httpFunctions) {
        const env = envOf(fn);
        if (env.PUBLIC_RATE_LIMIT !== 'process') problems.push(`${fn.name}: PUBLIC_RATE_LIMIT is ${JSON.stringify(env.PUBLIC_RATE_LIMIT)} with no edge, not process`);
        if (typeof env.EDGE_ORIGIN_SECRET === 'string' && env.EDGE_ORIGIN_SECRET !== '') problems.push(`${fn.name}: EDGE_ORIGIN_SECRET is set with no edge to send it (every request would be refused)`);
      }
    }
  } else if (dist.Type !== 'AWS::CloudFront::Distribution' || !config) problems.push('EdgeDistribution: not a CloudFront distribution');
  else {
    const acl = config.WebACLId;
    if (typeof acl !== 'string' || !acl.startsWith('arn:aws:wafv2:us-east-1:') || !acl.includes(':global/webacl/')) problems.push(`EdgeDistribution: WebACLId is not a CLOUDFRONT WebACL ARN (${JSON.stringify(acl)})`);

    // The one way in: the API's custom domain, mapped to the HTTP API; execute-api disabled.
    if (api.DisableExecuteApiEndpoint !== true) problems.push('HttpApi: the execute-api endpoint is enabled behind the edge (DisableExecuteApiEndpoint is not true): the WAF can be gone around');
    const domainRes = resources.EdgeOriginDomainName;
    const domain = domainRes?.Type === 'AWS::ApiGatewayV2::DomainName' ? domainRes.Properties?.DomainName : undefined;
    const configs = asArray(domainRes?.Properties?.DomainNameConfigurations).filter(isObject);
    if (domain === undefined) problems.push('EdgeOriginDomainName: no AWS::ApiGatewayV2::DomainName for the origin');
    else if (!configs.some((c) => c.EndpointType === 'REGIONAL' && c.CertificateArn !== undefined)) problems.push('EdgeOriginDomainName: no REGIONAL endpoint with a certificate');
    const mapped = Object.values(resources).some(
      (r) => r.Type === 'AWS::ApiGatewayV2::ApiMapping' && isDeepStrictEqual(r.Properties?.ApiId, { Ref: 'HttpApi' }) && isDeepStrictEqual(r.Properties?.DomainName, { Ref: 'EdgeOriginDomainName' }),
    );
    if (!mapped) problems.push('EdgeOriginApiMapping: the origin domain is not mapped to the HTTP API');
    // The custom domain is on the internet too: mutual TLS makes CloudFront its only client.
    const mtls = domainRes?.Properties?.MutualTlsAuthentication;
    const truststore = isObject(mtls) ? mtls.TruststoreUri : undefined;
    if (domain !== undefined && (truststore === undefined || truststore === '')) problems.push('EdgeOriginDomainName: no MutualTlsAuthentication truststore: the origin domain answers any client, around the edge');
    const origins = Array.isArray(config.Origins) ? config.Origins.filter(isObject) : [];
    const origin = origins[0];
    if (origins.length !== 1 || !origin || domain === undefined || !isDeepStrictEqual(origin.DomainName, domain)) problems.push('EdgeDistribution: the one origin must be the API\'s custom domain (EdgeOriginDomainName)');
    const originConfig = origin && isObject(origin.CustomOriginConfig) ? origin.CustomOriginConfig : {};
    const clientCert = isObject(originConfig.OriginMtlsConfig) ? originConfig.OriginMtlsConfig.ClientCertificateArn : undefined;
    if (typeof clientCert !== 'string' || !clientCert.startsWith('arn:aws:acm:us-east-1:')) problems.push('EdgeDistribution: the origin presents no client certificate (CustomOriginConfig.OriginMtlsConfig, ACM us-east-1): the mutual-TLS origin would refuse CloudFront');
    const headers = origin && Array.isArray(origin.OriginCustomHeaders) ? origin.OriginCustomHeaders.filter(isObject) : [];
    const secret = headers.find((h) => h.HeaderName === edgeWaf.EDGE_ORIGIN_HEADER);
    if (!secret || typeof secret.HeaderValue !== 'string' || secret.HeaderValue.length < 32) problems.push(`EdgeDistribution: no ${edgeWaf.EDGE_ORIGIN_HEADER} secret header (32 characters or more) on the origin`);
    for (const fn of httpFunctions) {
      const env = envOf(fn);
      if (env.PUBLIC_RATE_LIMIT !== 'edge') problems.push(`${fn.name}: PUBLIC_RATE_LIMIT is ${JSON.stringify(env.PUBLIC_RATE_LIMIT)}, not edge`);
      if (env.EDGE_ORIGIN_SECRET === undefined || env.EDGE_ORIGIN_SECRET === '') problems.push(`${fn.name}: no EDGE_ORIGIN_SECRET`);
      else if (secret && !isDeepStrictEqual(env.EDGE_ORIGIN_SECRET, secret.HeaderValue)) problems.push(`${fn.name}: EDGE_ORIGIN_SECRET is not the secret the edge sends`);
    }

    const defaultBehavior = isObject(config.DefaultCacheBehavior) ? config.DefaultCacheBehavior : {};
    const behaviors = [{ where: 'the default behaviour', b: defaultBehavior }, ...asArray(config.CacheBehaviors).filter(isObject).map((b) => ({ where: `behaviour ${String(b.PathPattern)}`, b }))];
    if (defaultBehavior.CachePolicyId !== edgeWaf.CACHING_DISABLED) problems.push('EdgeDistribution: the default behaviour must cache nothing (managed CachingDisabled policy): only the edgeCache paths are cached');
    const methods = Array.isArray(defaultBehavior.AllowedMethods) ? defaultBehavior.AllowedMethods : [];
    if (methods.length !== 7) problems.push(`EdgeDistribution: every method must pass (allowed: ${methods.join(', ')})`);
    for (const { where, b } of behaviors) {
      const policy = isObject(b.ResponseHeadersPolicyId) && typeof b.ResponseHeadersPolicyId.Ref === 'string' ? resources[b.ResponseHeadersPolicyId.Ref] : undefined;
      const cfg = policy?.Type === 'AWS::CloudFront::ResponseHeadersPolicy' && isObject(policy.Properties?.ResponseHeadersPolicyConfig) ? policy.Properties.ResponseHeadersPolicyConfig : {};
      const sec = isObject(cfg.SecurityHeadersConfig) ? cfg.SecurityHeadersConfig : {};
      const hsts = isObject(sec.StrictTransportSecurity) ? sec.StrictTransportSecurity : undefined;
      if (!hsts || Number(hsts.AccessControlMaxAgeSec) < 31536000 || hsts.Override !== true) problems.push(`EdgeDistribution: ${where} has no HSTS of a year or more (a response headers policy of the stack)`);
      if (!isObject(sec.ContentTypeOptions) || sec.ContentTypeOptions.Override !== true) problems.push(`EdgeDistribution: ${where} does not set X-Content-Type-Options: nosniff`);

      const cache = cachePolicyOf(resources, b.CachePolicyId);
      const forward = originRequestOf(resources, b.OriginRequestPolicyId);
      if (!cache || !forward) {
        problems.push(`EdgeDistribution: ${where} names a cache or origin request policy this check does not know`);
        continue;
      }
      if (cache.ttl.max === 0) continue; // caches nothing
      if (cache.ttl.def !== 0 || cache.ttl.min !== 0) problems.push(`EdgeDistribution: ${where} caches answers the origin did not mark (MinTTL/DefaultTTL must be 0: the origin's Cache-Control decides)`);
      if (cache.ttl.max < 31536000) problems.push(`EdgeDistribution: ${where} keeps an immutable answer less than the year the origin allows (MaxTTL ${cache.ttl.max})`);
      if ('query' in cache && cache.query !== 'all') problems.push(`EdgeDistribution: ${where} leaves query strings out of the cache key (?recheck=1 would get the cached answer)`);
      if (('cookies' in cache && cache.cookies !== 'none') || forward.cookies) problems.push(`EdgeDistribution: ${where} passes cookies to a cached answer`);
      for (const h of KEYED_HEADERS) {
        const excluded = 'excluded' in forward && (forward.excluded ?? []).includes(h);
        const forwarded = (forward.all && !excluded) || forward.headers.includes(h);
        if (forwarded && !cache.headers.includes(h)) problems.push(`EdgeDistribution: ${where} passes ${h} to the origin but caches without it in the key (one viewer's answer could reach another)`);
      }
    }
    const patterns = new Set(behaviors.map(({ b }) => b.PathPattern));
    for (const p of edgeWaf.cachedPathPatterns()) {
      const b = behaviors.find(({ b: x }) => x.PathPattern === p)?.b;
      if (!patterns.has(p) || !b || (cachePolicyOf(resources, b.CachePolicyId)?.ttl.max ?? 0) === 0) problems.push(`EdgeDistribution: ${p} (edgeCache in infra/functions.json) is not cached at the edge`);
    }
  }

  problems.push(...checkEdgeWebAcl(waf, limit));
  if (!dist && stage === 'dev') {
    return { name: 'edge: off on dev (no WebACL given): the functions limit public reads in process; the WebACL template holds', summary: 'no distribution, execute-api on', problems };
  }
  return {
    name: 'edge: a WAF rate rule in front of every function, execute-api disabled, only public answers cached, HSTS and nosniff',
    summary: `CloudFront + WebACL, ${limit ?? '?'} requests per minute and IP`,
    problems,
  };
}

/**
 * The edge WebACL's own template (us-east-1): scope CLOUDFRONT, a rate-based rule per client IP
 * over GET and HEAD in a 60-second window, `limit` requests (the functions' PUBLIC_RATE_PER_MINUTE,
 * when known), blocking with 429 and Retry-After.
 */
export function checkEdgeWebAcl(waf: EdgeWafTemplate, limit: number | undefined): string[] {
  const problems: string[] = [];
  const acls = Object.values(waf.Resources).filter((r) => r.Type === 'AWS::WAFv2::WebACL');
  const acl = acls[0]?.Properties;
  if (acls.length !== 1 || !acl) problems.push('edge WebACL template: exactly one AWS::WAFv2::WebACL expected');
  else {
    if (acl.Scope !== 'CLOUDFRONT') problems.push(`edge WebACL: scope ${String(acl.Scope)}, expected CLOUDFRONT`);
    const rules = Array.isArray(acl.Rules) ? acl.Rules.filter(isObject) : [];
    const rated = rules.find((r) => isObject(r.Statement) && isObject(r.Statement.RateBasedStatement));
    const rbs = rated && isObject(rated.Statement) && isObject(rated.Statement.RateBasedStatement) ? rated.Statement.RateBasedStatement : undefined;
    if (!rated || !rbs) problems.push('edge WebACL: no rate-based rule');
    else {
      if (rbs.AggregateKeyType !== 'IP') problems.push(`edge WebACL: the rate is per ${String(rbs.AggregateKeyType)}, not per client IP`);
      if (rbs.EvaluationWindowSec !== 60) problems.push(`edge WebACL: window ${String(rbs.EvaluationWindowSec)} s, expected 60 (a per-minute limit)`);
      if (limit !== undefined && rbs.Limit !== limit) problems.push(`edge WebACL: limit ${String(rbs.Limit)}, the functions say PUBLIC_RATE_PER_MINUTE=${limit}`);
      if (!JSON.stringify(rbs.ScopeDownStatement ?? {}).includes('"SearchString":"GET"')) problems.push('edge WebACL: the rule does not count GET requests (the public reads)');
      const block = isObject(rated.Action) && isObject(rated.Action.Block) ? rated.Action.Block : undefined;
      const response = block && isObject(block.CustomResponse) ? block.CustomResponse : undefined;
      if (!response || response.ResponseCode !== 429) problems.push('edge WebACL: over the limit the rule must block with 429');
      else if (!JSON.stringify(response.ResponseHeaders ?? []).includes('"Retry-After"')) problems.push('edge WebACL: the 429 must carry Retry-After');
    }
  }
  return problems;
}
