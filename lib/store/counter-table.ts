import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { CounterRepository, SweepStep } from '../accounts/counter-repository.js';
import { isConditionalCheckFailed } from './dynamo.js';
import { HOLD_SHARD, getManyByPk, openHoldKeys } from './open-holds.js';
import { SegmentScan } from './segment-scan.js';

/**
 * Windowed counters in the counters table (infra/tables.json), behind the domain's
 * CounterRepository port (lib/accounts/counter-repository.ts): one item per subject and window,
 * `{ pk, count, expires_at }`, where `pk` names the window (e.g. `quota#<account>#2026-11`) and
 * `expires_at` (epoch seconds, the table's TTL attribute) is the end of the window.
 *
 * DynamoDB deletes expired items late (up to days) and dynalite never: readers therefore treat an
 * item whose `expires_at` has passed as absent. Writers never meet one, because the window is part
 * of the key and a past window's key is never addressed again.
 */
export class CounterTable implements CounterRepository {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /**
   * Adds one to the counter unless it has reached `limit`; the new count, or undefined when the
   * limit was reached (nothing written). Check and increment are one conditional update of one
   * item, which DynamoDB applies atomically: N concurrent calls at `limit - 1` → exactly one succeeds.
   *
   * With `holdId`, the unit is also recorded as held by that id in the item's `inflight` string
   * set, in the same write: the hold is then settled (kept) or refunded exactly once, by the
   * request or, when the request died, by the reconciler (lib/accounts/quota-holds.ts).
   */
  async increment(pk: string, limit: number, expiresAt: number, holdId?: string): Promise<number | undefined> {
    if (limit <= 0) return undefined;
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk },
          // A hold also puts the counter on the sparse index open_holds (hold_shard), in the same
          // write; the reconciler takes it off once no hold is left (listHolds).
          UpdateExpression: `ADD #count :one${holdId ? ', inflight :hold' : ''} SET expires_at = :exp${holdId ? ', hold_shard = :shard' : ''}`,
          // A new window starts at 0 (no item, or no count yet); otherwise the count must be below
          // the limit before this request is added. A hold is added once: the SDK resends a write
          // whose answer was lost (a deadline), and a second ADD would charge the unit twice.
          ConditionExpression: `(attribute_not_exists(#count) OR #count < :limit)${holdId ? ' AND NOT contains(inflight, :id)' : ''}`,
          ExpressionAttributeNames: { '#count': 'count' },
          ExpressionAttributeValues: { ':one': 1, ':limit': limit, ':exp': expiresAt, ...(holdId ? { ':hold': new Set([holdId]), ':id': holdId, ':shard': HOLD_SHARD } : {}) },
          ReturnValues: 'UPDATED_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return Number(out.Attributes?.count ?? 1);
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
      if (!holdId) return undefined;
      // Refused: the limit, or this very hold already landed (an earlier attempt of this call
      // whose answer was lost). The item as it was tells which (DynamoDB returns it with the
      // refusal; dynalite does not, so it is read).
      const old = ((error as { Item?: Record<string, unknown> }).Item ?? (await this.get(pk))) as { count?: unknown; inflight?: unknown } | undefined;
      return old?.inflight instanceof Set && old.inflight.has(holdId) ? Number(old.count ?? 1) : undefined;
    }
  }

  /** The counter item, read strongly consistent. */
  private async get(pk: string): Promise<Record<string, unknown> | undefined> {
    const r = await this.db.send(new GetCommand({ TableName: this.table, Key: { pk }, ConsistentRead: true }));
    return r.Item;
  }

  /**
   * Takes one off the counter (never below zero): the slot of an attempt that turned out not to
   * count (a right password after a reserved failure slot). A missing counter stays missing.
   */
  async decrement(pk: string): Promise<void> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk },
          UpdateExpression: 'ADD #count :minus',
          ConditionExpression: '#count > :zero',
          ExpressionAttributeNames: { '#count': 'count' },
          ExpressionAttributeValues: { ':minus': -1, ':zero': 0 },
        }),
      );
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }

  /**
   * Ends the hold `holdId`: `refund` gives its unit back, otherwise the unit stays counted. The
   * condition `contains(inflight, :id)` makes each hold end once: a second settle or refund, or a
   * refund after a settle, changes nothing (false). A counter deleted meanwhile (an operator's
   * reset) has no hold left either.
   */
  async endHold(pk: string, holdId: string, refund: boolean): Promise<boolean> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk },
          UpdateExpression: refund ? 'ADD #count :minus DELETE inflight :hold' : 'DELETE inflight :hold',
          ConditionExpression: 'contains(inflight, :id)',
          ...(refund ? { ExpressionAttributeNames: { '#count': 'count' } } : {}),
          ExpressionAttributeValues: { ':hold': new Set([holdId]), ':id': holdId, ...(refund ? { ':minus': -1 } : {}) },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  /**
   * Counters under `prefix` that have holds not yet ended: their keys and hold ids. Read from the
   * sparse index open_holds, so the cost follows the counters with holds, not the table: one
   * Query page per 1,000 of them, then one strongly consistent BatchGetItem per 100 (the index is
   * eventually consistent and carries keys only). A counter on the index without a hold left is
   * taken off it with one conditional write (`attribute_not_exists(inflight)`: a hold added
   * meanwhile keeps it on). With `sweep`, a bounded segment of the table is read as well
   * (lib/store/segment-scan.ts): the local net for an index entry dynalite lost.
   */
  async listHolds(prefix: string, sweep?: SweepStep): Promise<{ holds: { pk: string; holds: string[] }[]; swept?: boolean }> {
    const keys = await openHoldKeys(this.db, this.table, prefix);
    let swept: boolean | undefined;
    if (sweep && sweep.items > 0) {
      const segment = await this.safetyScan(prefix).next(sweep.items, sweep.restart);
      for (const item of segment.items) keys.add(String(item.pk));
      swept = segment.complete;
    }
    const out: { pk: string; holds: string[] }[] = [];
    for (const item of await getManyByPk(this.db, this.table, [...keys])) {
      const holds = item.inflight instanceof Set ? [...(item.inflight as Set<string>)] : [];
      if (holds.length > 0) out.push({ pk: String(item.pk), holds });
      else if (item.hold_shard !== undefined) await this.leaveHoldIndex(String(item.pk));
    }
    return { holds: out.sort((a, b) => (a.pk < b.pk ? -1 : 1)), ...(swept !== undefined ? { swept } : {}) };
  }

  private scans = new Map<string, SegmentScan>();

  private safetyScan(prefix: string): SegmentScan {
    let scan = this.scans.get(prefix);
    if (!scan) {
      scan = new SegmentScan(this.db, {
        TableName: this.table,
        ProjectionExpression: 'pk',
        FilterExpression: 'begins_with(pk, :p) AND attribute_exists(inflight)',
        ExpressionAttributeValues: { ':p': prefix },
        ConsistentRead: true,
      });
      this.scans.set(prefix, scan);
    }
    return scan;
  }

  /** Takes a counter without holds off the open_holds index; a hold added meanwhile keeps it on. */
  private async leaveHoldIndex(pk: string): Promise<void> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk },
          UpdateExpression: 'REMOVE hold_shard',
          ConditionExpression: 'attribute_exists(hold_shard) AND attribute_not_exists(inflight)',
        }),
      );
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }

  /** The current count (strongly consistent); 0 for a missing item or one whose window has ended. */
  async read(pk: string, nowEpochSeconds: number): Promise<number> {
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: { pk }, ConsistentRead: true }));
    const item = out.Item;
    if (!item || Number(item.expires_at ?? 0) <= nowEpochSeconds) return 0;
    return Number(item.count ?? 0);
  }

  /** Deletes one counter (whatever its state). */
  async remove(pk: string): Promise<void> {
    await this.db.send(new DeleteCommand({ TableName: this.table, Key: { pk } }));
  }

  /**
   * Deletes every counter whose key starts with one of `prefixes` and whose window ended at or
   * before `nowEpochSeconds`; returns how many it deleted. Other counters in the table (e.g.
   * statistics) are never touched. Safe to run again and concurrently.
   */
  async removeExpired(prefixes: readonly string[], nowEpochSeconds: number): Promise<number> {
    const values: Record<string, unknown> = { ':now': nowEpochSeconds };
    const prefixTests = prefixes.map((p, i) => {
      values[`:p${i}`] = p;
      return `begins_with(pk, :p${i})`;
    });
    let deleted = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new ScanCommand({
          TableName: this.table,
          ProjectionExpression: 'pk',
          FilterExpression: `expires_at <= :now AND (${prefixTests.join(' OR ')})`,
          ExpressionAttributeValues: values,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      const keys = (page.Items ?? []).map((i) => String(i.pk));
      for (let i = 0; i < keys.length; i += 16) {
        const results = await Promise.all(keys.slice(i, i + 16).map((pk) => this.removeIfExpired(pk, nowEpochSeconds)));
        deleted += results.filter(Boolean).length;
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return deleted;
  }

  private async removeIfExpired(pk: string, nowEpochSeconds: number): Promise<boolean> {
    try {
      await this.db.send(
        new DeleteCommand({
          TableName: this.table,
          Key: { pk },
          // expires_at <= :now: re-checked at delete time, so a scan result that went stale can
          // never remove a counter of a window that is still running.
          ConditionExpression: 'expires_at <= :now',
          ExpressionAttributeValues: { ':now': nowEpochSeconds },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }
}
