/**
 * What every rule of infra/template-rules.ts shares: the template's JSON types, the result of a
 * rule, and small helpers over JSON values.
 */
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

export const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
export const asArray = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
export const sorted = (xs: Iterable<string>): string[] => [...new Set(xs)].sort();
export const show = (xs: string[]): string => (xs.length ? xs.join(', ') : '(none)');

/** `{ Ref }`, `{ Fn::* }` or `{ Condition }`: a value CloudFormation computes, not checkable offline. */
export function isIntrinsic(v: unknown): boolean {
  if (!isObject(v)) return false;
  const keys = Object.keys(v);
  return keys.length === 1 && (keys[0] === 'Ref' || keys[0] === 'Condition' || (keys[0] ?? '').startsWith('Fn::'));
}
