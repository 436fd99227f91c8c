/**
 * Spec rules, against the CloudFormation resource specification in @aws-cdk/aws-service-spec:
 * known resource types, known properties, required properties, Ref/GetAtt/Sub/DependsOn targets.
 */
import type { Property, PropertyType, Resource as SpecResource, SpecDatabase } from '@aws-cdk/service-spec-types';
import { type CfnTemplate, type Json, type JsonObject, type RuleResult, asArray, isIntrinsic, isObject, show } from './common.js';

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

