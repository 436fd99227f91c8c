import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { setClause, tryWrite, type WriteOutcome } from './conditional.js';
import { type LeaseAttributes, leaseParts, type LeaseStep } from './lease.js';

/**
 * One move of a record's state machine (docs/state-machines.md) as a single conditional
 * UpdateItem: "from the state and version I read, to the next state, version + 1". A writer whose
 * condition fails re-reads and decides again; it never overwrites what another writer moved on.
 * The version makes the condition exact: two moves computed from the same read cannot both land,
 * even when they would write the same values (a transaction re-signed at the same nonce has the
 * same hash, so a condition on the hash alone cannot tell the two apart).
 */
export interface VersionedMove {
  table: string;
  key: Record<string, unknown>;
  /** The attributes holding the state and the version (e.g. anchor_state / anchor_v). */
  stateAttribute: string;
  versionAttribute: string;
  /** The state as read: a string, or null for "no state" (the attribute is absent). */
  from: string | null;
  /**
   * The version as read; undefined when the record had none yet (its first move). 'unread': the
   * move is made without reading first (a claim: its condition is the absent state alone), and
   * the version counts on from whatever the record holds, so a record released and claimed again
   * never repeats a version.
   */
  version: number | undefined | 'unread';
  /** The next state; null removes the state attribute (an undo back to "no state"). */
  to: string | null;
  set?: Record<string, unknown>;
  remove?: readonly string[];
  /** An extra condition, ANDed (its placeholders must not collide with #s, #v, :from, :to, :v, :v1, :zero, :one, nor the lease's). */
  also?: { expression: string; names?: Record<string, string>; values?: Record<string, unknown> };
  /** What the move does with the record's lease (lib/store/lease.ts), if it is claimed under one. */
  lease?: { attributes: LeaseAttributes; step: LeaseStep };
  /** What the write returns: the whole new item, or the attributes it set (e.g. the version of a claim). */
  returnValues?: 'ALL_NEW' | 'UPDATED_NEW';
}

/** Builds and sends the conditional update of a {@link VersionedMove}. */
export function moveState(db: DynamoDBDocumentClient, m: VersionedMove): Promise<WriteOutcome> {
  const lease = m.lease ? leaseParts(m.lease.attributes, m.lease.step) : undefined;
  const { sets, names, values } = setClause({ ...m.set, ...lease?.set });
  names['#s'] = m.stateAttribute;
  names['#v'] = m.versionAttribute;
  const conditions: string[] = [];
  if (m.from === null) conditions.push('attribute_not_exists(#s)');
  else {
    conditions.push('#s = :from');
    values[':from'] = m.from;
  }
  if (m.version === undefined) conditions.push('attribute_not_exists(#v)');
  else if (m.version !== 'unread') {
    conditions.push('#v = :v');
    values[':v'] = m.version;
  }
  for (const also of [m.also, lease?.condition]) {
    if (!also) continue;
    conditions.push(`(${also.expression})`);
    Object.assign(names, also.names ?? {});
    Object.assign(values, also.values ?? {});
  }
  if (m.version === 'unread') {
    values[':zero'] = 0;
    values[':one'] = 1;
    sets.push('#v = if_not_exists(#v, :zero) + :one');
  } else {
    values[':v1'] = (m.version ?? 0) + 1;
    sets.push('#v = :v1');
  }
  const removes = [...(m.remove ?? []), ...(lease?.remove ?? [])];
  if (m.to === null) removes.push('#s');
  else {
    sets.push('#s = :to');
    values[':to'] = m.to;
  }
  return tryWrite(
    db,
    new UpdateCommand({
      TableName: m.table,
      Key: m.key,
      UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ...(m.returnValues ? { ReturnValues: m.returnValues } : {}),
    }),
  );
}
