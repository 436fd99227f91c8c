import { PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { setClause, tryWrite, type WriteOutcome } from './conditional.js';

/**
 * Claims under a lease, the one way a record is taken by one invocation at a time
 * (docs/state-machines.md, "Claims under a lease"). A claim names its owner (a random token) and
 * the lease's expiry (epoch ms) on the record, in one conditional write; while the lease runs
 * nobody else takes the record, once it lapsed another invocation may take it over; every write
 * the owner makes as the owner is conditional on its token (on a versioned record, on the version
 * it read, which every take-over moves on), so an owner that outlived its lease (it hung, and was
 * taken over) changes nothing. The records that are claimed this way:
 *
 *   evidence item     claim_id, lease_expires_at    versioned (lib/store/versioned.ts): claim, resume
 *   batch seal        sealer_id, lease_expires_at   versioned: claim, takeOver, abandon, seal
 *   pq-key record     claim_id, claim_expires_at    a put (claim or take-over), the owner's update, an early expiry
 *
 * A versioned record's moves pass their {@link LeaseStep} to moveState, which adds its parts to
 * the one conditional UpdateItem of the move (the conditions on state and version stay); a record
 * without a version uses {@link claimLease} and {@link leaseWrite}.
 */

/** The two attributes that hold a record's lease. */
export interface LeaseAttributes {
  /** The owner's token (a claim id, a sealer id). */
  owner: string;
  /** The lease's expiry, epoch ms. */
  expires: string;
}

/** An extra condition of a write, ANDed with the others. */
export interface Condition {
  expression: string;
  names?: Record<string, string>;
  values?: Record<string, unknown>;
}

/** What one write does with the lease, besides its own fields and conditions. */
export type LeaseStep =
  /**
   * Takes the lease for `token` until `expiresAt`: a claim, a resume by the identical request, or
   * (with `ifLapsedBefore`: only when the lease held now expired before that time) a take-over.
   */
  | { take: { token: string; expiresAt: number }; ifLapsedBefore?: number }
  /**
   * Writes as the owner `holder` (conditional on its token), then keeps the lease, ends it (both
   * attributes removed), or expires it at once (expiry 0, the token stays: the next claim may take it).
   */
  | { holder: string; then: 'keep' | 'end' | 'expire' };

/** The parts a lease step adds to an UpdateItem: attributes to set and to remove, and a condition. */
export interface LeaseParts {
  set: Record<string, unknown>;
  remove: string[];
  condition: Condition | undefined;
}

/** The parts of one lease step (placeholders #lo, #le, :lease_now, :lease_owner; no other write of a record uses them). */
export function leaseParts(attributes: LeaseAttributes, step: LeaseStep): LeaseParts {
  if ('take' in step) {
    return {
      set: { [attributes.owner]: step.take.token, [attributes.expires]: step.take.expiresAt },
      remove: [],
      condition:
        step.ifLapsedBefore === undefined
          ? undefined
          : { expression: '#le < :lease_now', names: { '#le': attributes.expires }, values: { ':lease_now': step.ifLapsedBefore } },
    };
  }
  return {
    set: step.then === 'expire' ? { [attributes.expires]: 0 } : {},
    remove: step.then === 'end' ? [attributes.owner, attributes.expires] : [],
    condition: { expression: '#lo = :lease_owner', names: { '#lo': attributes.owner }, values: { ':lease_owner': step.holder } },
  };
}

/** `a AND b` of two optional conditions. */
export function andConditions(a: Condition | undefined, b: Condition | undefined): Condition | undefined {
  if (!a || !b) return a ?? b;
  return { expression: `(${a.expression}) AND (${b.expression})`, names: { ...a.names, ...b.names }, values: { ...a.values, ...b.values } };
}

/**
 * Claims a record that has no version with one conditional put of `item` under a new lease: it
 * lands when the record is `free` (the record's own rule, e.g. absent, or its earlier attempt
 * failed), or when it is `claimed` and the lease it holds expired before `nowMs` (its owner died:
 * taken over). Of any number of concurrent claims exactly one lands. True when this one did.
 */
export async function claimLease(
  db: DynamoDBDocumentClient,
  c: { table: string; item: Record<string, unknown>; attributes: LeaseAttributes; token: string; expiresAt: number; nowMs: number; free: Condition; claimed: Condition },
): Promise<boolean> {
  const r = await tryWrite(
    db,
    new PutCommand({
      TableName: c.table,
      Item: { ...c.item, [c.attributes.owner]: c.token, [c.attributes.expires]: c.expiresAt },
      ConditionExpression: `(${c.free.expression}) OR ((${c.claimed.expression}) AND #le < :lease_now)`,
      ExpressionAttributeNames: { ...c.free.names, ...c.claimed.names, '#le': c.attributes.expires },
      ExpressionAttributeValues: { ...c.free.values, ...c.claimed.values, ':lease_now': c.nowMs },
    }),
  );
  return r.ok;
}

/**
 * One UpdateItem of a record that has no version, as its lease's owner (or taking it): `set`
 * (placeholders #f0…, :f0…) and `remove` besides the lease step's parts, `also` ANDed with its
 * condition. `ok: false` when the condition did not hold (another owner, or the record moved on).
 */
export function leaseWrite(
  db: DynamoDBDocumentClient,
  w: {
    table: string;
    key: Record<string, unknown>;
    attributes: LeaseAttributes;
    step: LeaseStep;
    set?: Record<string, unknown>;
    remove?: readonly string[];
    also?: Condition;
    returnValues?: 'ALL_NEW';
  },
): Promise<WriteOutcome> {
  const lease = leaseParts(w.attributes, w.step);
  const { sets, names, values } = setClause({ ...w.set, ...lease.set });
  const removes = [...(w.remove ?? []), ...lease.remove];
  const condition = andConditions(lease.condition, w.also);
  return tryWrite(
    db,
    new UpdateCommand({
      TableName: w.table,
      Key: w.key,
      UpdateExpression: `${sets.length ? `SET ${sets.join(', ')}` : ''}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`.trim(),
      ...(condition ? { ConditionExpression: condition.expression } : {}),
      ...nonEmpty('ExpressionAttributeNames', { ...names, ...condition?.names } as Record<string, string>),
      ...nonEmpty('ExpressionAttributeValues', { ...values, ...condition?.values }),
      ...(w.returnValues ? { ReturnValues: w.returnValues } : {}),
    }),
  );
}

/** `{ [name]: map }` when the map has entries (DynamoDB refuses an empty one). */
function nonEmpty<K extends string, V>(name: K, map: Record<string, V>): Partial<Record<K, Record<string, V>>> {
  return Object.keys(map).length > 0 ? ({ [name]: map } as Record<K, Record<string, V>>) : {};
}
