import type { DynamoDBDocumentClient, DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from './dynamo.js';

/** The outcome of a conditional write: a lost condition is an answer, not a fault. */
export type WriteOutcome = { ok: true; attributes: Record<string, unknown> | undefined } | { ok: false; old: Record<string, unknown> | undefined };

/**
 * Sends one conditional single-item write. `ok: false` when its condition did not hold, with the
 * item as it was when DynamoDB provides it (ReturnValuesOnConditionCheckFailure: ALL_OLD; dynalite
 * does not, so callers that need the item read it when `old` is undefined). Any other failure throws.
 */
export async function tryWrite(db: DynamoDBDocumentClient, command: UpdateCommand | PutCommand | DeleteCommand): Promise<WriteOutcome> {
  command.input.ReturnValuesOnConditionCheckFailure ??= 'ALL_OLD';
  try {
    const r = await db.send(command as UpdateCommand);
    return { ok: true, attributes: r.Attributes };
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    return { ok: false, old: (error as { Item?: Record<string, unknown> }).Item };
  }
}

/**
 * Builds `SET #f0 = :v0, …` (with the names and values it needs) for the defined fields of
 * `fields`; undefined fields are skipped. `prefix` keeps the placeholders of two calls apart.
 */
export function setClause(
  fields: Record<string, unknown>,
  prefix = 'f',
): { sets: string[]; names: Record<string, string>; values: Record<string, unknown> } {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  let i = 0;
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    names[`#${prefix}${i}`] = k;
    values[`:${prefix}${i}`] = v;
    sets.push(`#${prefix}${i} = :${prefix}${i}`);
    i++;
  }
  return { sets, names, values };
}
