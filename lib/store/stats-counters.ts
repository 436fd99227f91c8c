import { BatchGetCommand, GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { STAT_FIELDS, type StatsDelta, type StatsEvent, type StatsPort, type StatsSnapshot, type StatTotals } from '../evidence/stats.js';
import { describeError, log } from '../log.js';
import { isConditionalCheckFailed } from './dynamo.js';

/**
 * Public statistics (GET /api/v1/stats) in the counters table, served from counters, never from scans.
 *
 * Two kinds of items:
 * - `stats#total`: the all-time totals (no `expires_at`: it never expires);
 * - `stats#hour#<YYYY-MM-DDTHH>`: the totals of one UTC hour, with `expires_at` (the table's TTL
 *   attribute) 25 hours after the hour started, so DynamoDB removes old buckets by itself.
 * "Last 24 h" is the sum of the current hour's bucket and the 23 before it: at most one hour more
 * coarse than a sliding window, and 24 single-item reads. Readers ignore a bucket whose
 * `expires_at` has passed (DynamoDB deletes late; dynalite never does).
 *
 * Written only from the evidence table's changes (lib/evidence/derived.ts): one ADD per item per
 * batch of changes, whatever the number of events in it, conditional on the item's checkpoint of
 * the batch's shard (`cp#<shard>`, the sequence number of the last change it counted), so that a
 * batch delivered again is counted once. The counters hold numbers only: no account, key, device
 * or hash is ever written here.
 */

/** Prefix of every statistics counter (the quota reset never touches these keys). */
export const STATS_PREFIX = 'stats#';
const HOUR_MS = 3_600_000;
const BUCKET_HOURS = 24;
/** A bucket outlives the window that reads it by one hour. */
const BUCKET_TTL_HOURS = BUCKET_HOURS + 1;
/** A shard's checkpoint on the totals is dropped once its shard has been quiet this long (a stream keeps records 24 h). */
const CHECKPOINT_KEEP_MS = 48 * HOUR_MS;

/** Key of the hourly bucket that contains `at`: `stats#hour#2026-11-22T10`. */
export function hourBucketKey(at: Date, prefix = STATS_PREFIX): string {
  return `${prefix}hour#${at.toISOString().slice(0, 13)}`;
}

const zero = (): StatTotals => ({ registered: 0, anchored: 0, devices: 0, transactions: 0 });

/** Counter-backed statistics over the counters table. */
export class StatsRecorder implements StatsPort {
  private readonly clock: () => Date;
  private readonly prefix: string;
  /** Checkpoints of quiet shards seen on an item, to remove with its next write. */
  private readonly stale = new Map<string, string[]>();

  /** `prefix` keeps separate sets of counters apart (tests); the service uses the default. */
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
    options: { clock?: () => Date; prefix?: string } = {},
  ) {
    this.clock = options.clock ?? (() => new Date());
    this.prefix = options.prefix ?? STATS_PREFIX;
  }

  /**
   * Adds the events of one batch of one shard (in sequence order) to the totals and to their
   * hours' buckets, exactly once: each item is written once, with the events it has not counted
   * yet. Throws when a write fails (the batch is then delivered again).
   */
  async applyStats(shard: string, events: StatsEvent[]): Promise<void> {
    const byHour = new Map<number, StatsEvent[]>();
    for (const e of events) byHour.set(e.hourStartMs, [...(byHour.get(e.hourStartMs) ?? []), e]);
    await Promise.all([
      this.applyTo(`${this.prefix}total`, shard, events),
      ...[...byHour].map(([hourStart, evs]) => this.applyTo(hourBucketKey(new Date(hourStart), this.prefix), shard, evs, Math.floor(hourStart / 1000) + BUCKET_TTL_HOURS * 3600)),
    ]);
  }

  /** One item: ADD the sums of the events after its checkpoint, conditional on that checkpoint. */
  private async applyTo(pk: string, shard: string, events: StatsEvent[], expiresAt?: number): Promise<void> {
    const cp = `cp#${shard}`;
    let after: string | null = null; // the checkpoint as read; null: not read yet
    for (let attempt = 0; attempt < 5; attempt++) {
      const todo = after === null ? events : events.filter((e) => e.seq > (after as string));
      if (todo.length === 0) return; // counted already
      const sums = zero();
      for (const e of todo) for (const f of STAT_FIELDS) sums[f] += e.delta[f] ?? 0;
      const fields = STAT_FIELDS.filter((f) => sums[f] > 0);
      const names: Record<string, string> = { '#cp': cp, '#cpat': `cpat#${shard}` };
      const values: Record<string, unknown> = { ':last': (todo.at(-1) as StatsEvent).seq, ':now': this.clock().getTime() };
      const adds = fields.map((f, i) => {
        names[`#f${i}`] = f;
        values[`:v${i}`] = sums[f];
        return `#f${i} :v${i}`;
      });
      const set = ['#cp = :last', '#cpat = :now'];
      if (expiresAt !== undefined) {
        values[':exp'] = expiresAt;
        set.push('expires_at = :exp');
      }
      const stale = (this.stale.get(pk) ?? []).filter((s) => s !== shard);
      stale.forEach((s, i) => {
        names[`#o${i}`] = `cp#${s}`;
        names[`#oa${i}`] = `cpat#${s}`;
      });
      let condition: string;
      if (after === null || after === '') {
        values[':first'] = (todo[0] as StatsEvent).seq;
        condition = 'attribute_not_exists(#cp) OR #cp < :first';
      } else {
        values[':read'] = after;
        condition = '#cp = :read';
      }
      try {
        const out = await this.db.send(
          new UpdateCommand({
            TableName: this.table,
            Key: { pk },
            UpdateExpression: `SET ${set.join(', ')}${adds.length ? ` ADD ${adds.join(', ')}` : ''}${stale.length ? ` REMOVE ${stale.map((_, i) => `#o${i}, #oa${i}`).join(', ')}` : ''}`,
            ConditionExpression: condition,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
            ReturnValues: 'ALL_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        this.noteStale(pk, out.Attributes ?? {});
        return;
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        // Some of these events were counted (a redelivery): read where this shard's count stands.
        const old = (error as { Item?: Record<string, unknown> }).Item ?? (await this.db.send(new GetCommand({ TableName: this.table, Key: { pk }, ConsistentRead: true }))).Item;
        after = typeof old?.[cp] === 'string' ? (old[cp] as string) : '';
      }
    }
    throw new Error(`statistics ${pk}: the count did not settle after 5 attempts`);
  }

  /** Counts an event of its own once per `id` (StatsPort): a shard of its own, with one change. */
  async recordOnce(id: string, delta: StatsDelta): Promise<void> {
    const now = this.clock().getTime();
    try {
      await this.applyStats(`once#${id}`, [{ seq: '1', hourStartMs: Math.floor(now / HOUR_MS) * HOUR_MS, delta }]);
    } catch (error) {
      log.warn('statistics not recorded', { id, ...describeError(error) });
    }
  }

  /** Remembers the checkpoints of shards quiet for CHECKPOINT_KEEP_MS, for the item's next write to remove. */
  private noteStale(pk: string, item: Record<string, unknown>): void {
    const now = this.clock().getTime();
    const stale = Object.keys(item)
      .filter((k) => k.startsWith('cpat#') && now - Number(item[k]) > CHECKPOINT_KEEP_MS)
      .map((k) => k.slice('cpat#'.length));
    if (stale.length) this.stale.set(pk, stale);
    else this.stale.delete(pk);
  }

  /** The totals and the last 24 hours: one GetItem and one BatchGetItem of 24 keys. */
  async read(): Promise<StatsSnapshot> {
    const now = this.clock();
    const nowSeconds = Math.floor(now.getTime() / 1000);
    const hourStart = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS;
    const keys = Array.from({ length: BUCKET_HOURS }, (_, i) => hourBucketKey(new Date(hourStart - i * HOUR_MS), this.prefix));

    const [total, buckets] = await Promise.all([
      this.db.send(new GetCommand({ TableName: this.table, Key: { pk: `${this.prefix}total` } })).then((r) => r.Item),
      this.batchGet(keys),
    ]);
    const totals = zero();
    for (const f of STAT_FIELDS) totals[f] = Number(total?.[f] ?? 0);
    const last24h = zero();
    for (const bucket of buckets) {
      if (Number(bucket.expires_at ?? 0) <= nowSeconds) continue;
      for (const f of STAT_FIELDS) last24h[f] += Number(bucket[f] ?? 0);
    }
    return {
      totals,
      last_24h: last24h,
      last_24h_since: new Date(hourStart - (BUCKET_HOURS - 1) * HOUR_MS).toISOString(),
      as_of: now.toISOString(),
    };
  }

  private async batchGet(keys: string[]): Promise<Record<string, unknown>[]> {
    const out: Record<string, unknown>[] = [];
    let pending: Record<string, unknown>[] = keys.map((pk) => ({ pk }));
    // BatchGetItem may return part of the keys as UnprocessedKeys (throttling): ask again for those.
    for (let attempt = 0; pending.length > 0 && attempt < 5; attempt++) {
      const r = await this.db.send(new BatchGetCommand({ RequestItems: { [this.table]: { Keys: pending } } }));
      out.push(...((r.Responses?.[this.table] ?? []) as Record<string, unknown>[]));
      pending = (r.UnprocessedKeys?.[this.table]?.Keys ?? []) as Record<string, unknown>[];
    }
    return out;
  }
}
