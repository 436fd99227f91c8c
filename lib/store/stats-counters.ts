import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { STAT_FIELDS, type StatsDelta, type StatsEvent, type StatsPort, type StatsSnapshot, type StatTotals } from '../evidence/stats.js';
import { describeError, log } from '../log.js';
import { isConditionalCheckFailed } from './dynamo.js';

/**
 * Public statistics (GET /api/v1/stats) in the counters table, served from one item, never from scans.
 *
 * One item, `stats#total`: the all-time totals (`registered`, `anchored`, …) and, beside them, the
 * totals of each UTC hour still in the window as attributes of their own
 * (`hour#2026-11-22T10#anchored`). "Last 24 h" is the sum of the current hour and the 23 before it:
 * at most one hour more coarse than a sliding window, read with one GetItem. An hour older than
 * 25 hours is removed by the item's next write; readers ignore hours out of the window.
 *
 * Written only from the evidence table's changes (lib/evidence/derived.ts): one ADD per batch of
 * changes, whatever the number of events and hours in it, conditional on the item's checkpoint of
 * the batch's shard (`cp#<shard>`, the sequence number of the last change it counted), so that a
 * batch delivered again is counted once, totals and hours together. The counters hold numbers
 * only: no account, key, device or hash is ever written here.
 *
 * (Until 2026-11 the hours were items of their own, `stats#hour#<hour>`, one more write per batch
 * and 24 more reads per answer; those items are no longer read, so after that upgrade the last
 * 24 hours counted from the upgrade on, for one day. decisions.md "Derived data".)
 */

/** Prefix of every statistics counter (the quota reset never touches these keys). */
export const STATS_PREFIX = 'stats#';
const HOUR_MS = 3_600_000;
const WINDOW_HOURS = 24;
/** An hour leaves the item this long after it started (one hour after it left the window). */
const HOUR_KEEP_MS = (WINDOW_HOURS + 1) * HOUR_MS;
/** A shard's checkpoint is dropped once its shard has been quiet this long (a stream keeps records 24 h). */
const CHECKPOINT_KEEP_MS = 48 * HOUR_MS;

/** The attribute of one field of one hour: `hour#2026-11-22T10#anchored`. */
export function hourAttribute(hourStartMs: number, field: string): string {
  return `hour#${new Date(hourStartMs).toISOString().slice(0, 13)}#${field}`;
}
const HOUR_ATTRIBUTE = /^hour#(\d{4}-\d{2}-\d{2}T\d{2})#(.+)$/;
const hourStartOf = (attribute: string): number | null => {
  const m = HOUR_ATTRIBUTE.exec(attribute);
  return m ? Date.parse(`${m[1] as string}:00:00.000Z`) : null;
};

const zero = (): StatTotals => ({ registered: 0, anchored: 0, devices: 0, transactions: 0 });

/** Counter-backed statistics over the counters table. */
export class StatsRecorder implements StatsPort {
  private readonly clock: () => Date;
  private readonly pk: string;
  /** Attributes seen on the item that its next write removes: hours out of the window, checkpoints of quiet shards. */
  private stale: string[] = [];

  /** `prefix` keeps separate sets of counters apart (tests); the service uses the default. */
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
    options: { clock?: () => Date; prefix?: string } = {},
  ) {
    this.clock = options.clock ?? (() => new Date());
    this.pk = `${options.prefix ?? STATS_PREFIX}total`;
  }

  /**
   * Adds the events of one batch of one shard (in sequence order) to the totals and to their
   * hours, exactly once: one conditional write with the events the item has not counted yet.
   * Throws when the write fails (the batch is then delivered again).
   */
  async applyStats(shard: string, events: StatsEvent[]): Promise<void> {
    const cp = `cp#${shard}`;
    let after: string | null = null; // the checkpoint as read; null: not read yet
    for (let attempt = 0; attempt < 5; attempt++) {
      const todo = after === null ? events : events.filter((e) => e.seq > (after as string));
      if (todo.length === 0) return; // counted already
      const nowMs = this.clock().getTime();
      const sums = new Map<string, number>();
      const add = (attribute: string, n: number) => n > 0 && sums.set(attribute, (sums.get(attribute) ?? 0) + n);
      for (const e of todo) {
        // An hour already out of the window (a late redelivery) counts in the totals only.
        const inWindow = e.hourStartMs > nowMs - WINDOW_HOURS * HOUR_MS;
        for (const f of STAT_FIELDS) {
          add(f, e.delta[f] ?? 0);
          if (inWindow) add(hourAttribute(e.hourStartMs, f), e.delta[f] ?? 0);
        }
      }
      const names: Record<string, string> = { '#cp': cp, '#cpat': `cpat#${shard}` };
      const values: Record<string, unknown> = { ':last': (todo.at(-1) as StatsEvent).seq, ':now': nowMs };
      const adds = [...sums].map(([attribute, n], i) => {
        names[`#f${i}`] = attribute;
        values[`:v${i}`] = n;
        return `#f${i} :v${i}`;
      });
      const stale = this.stale.filter((a) => a !== cp && a !== `cpat#${shard}` && !sums.has(a));
      stale.forEach((a, i) => (names[`#o${i}`] = a));
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
            Key: { pk: this.pk },
            UpdateExpression: `SET #cp = :last, #cpat = :now${adds.length ? ` ADD ${adds.join(', ')}` : ''}${stale.length ? ` REMOVE ${stale.map((_, i) => `#o${i}`).join(', ')}` : ''}`,
            ConditionExpression: condition,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
            ReturnValues: 'ALL_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        this.noteStale(out.Attributes ?? {});
        return;
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        // Some of these events were counted (a redelivery): read where this shard's count stands.
        const old = (error as { Item?: Record<string, unknown> }).Item ?? (await this.db.send(new GetCommand({ TableName: this.table, Key: { pk: this.pk }, ConsistentRead: true }))).Item;
        after = typeof old?.[cp] === 'string' ? (old[cp] as string) : '';
      }
    }
    throw new Error(`statistics ${this.pk}: the count did not settle after 5 attempts`);
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

  /** Remembers what the item's next write removes: hours out of the window, checkpoints of shards quiet for CHECKPOINT_KEEP_MS. */
  private noteStale(item: Record<string, unknown>): void {
    const now = this.clock().getTime();
    this.stale = Object.keys(item).flatMap((k) => {
      if (k.startsWith('cpat#') && now - Number(item[k]) > CHECKPOINT_KEEP_MS) return [k, `cp#${k.slice('cpat#'.length)}`];
      const hour = hourStartOf(k);
      return hour !== null && hour <= now - HOUR_KEEP_MS ? [k] : [];
    });
  }

  /** The totals and the last 24 hours: one GetItem. */
  async read(): Promise<StatsSnapshot> {
    const now = this.clock();
    const hourStart = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS;
    const since = hourStart - (WINDOW_HOURS - 1) * HOUR_MS;
    const item = (await this.db.send(new GetCommand({ TableName: this.table, Key: { pk: this.pk } }))).Item ?? {};
    const totals = zero();
    const last24h = zero();
    for (const f of STAT_FIELDS) totals[f] = Number(item[f] ?? 0);
    for (const [k, v] of Object.entries(item)) {
      const m = HOUR_ATTRIBUTE.exec(k);
      const hour = hourStartOf(k);
      const field = m?.[2] as keyof StatTotals | undefined;
      if (hour === null || !field || !(field in last24h) || hour < since || hour > hourStart) continue;
      last24h[field] += Number(v ?? 0);
    }
    return { totals, last_24h: last24h, last_24h_since: new Date(since).toISOString(), as_of: now.toISOString() };
  }
}
