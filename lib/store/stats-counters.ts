import { BatchGetCommand, GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { STAT_FIELDS, type StatsDelta, type StatsPort, type StatsSnapshot, type StatTotals } from '../evidence/stats.js';
import { describeError, log } from '../log.js';

/**
 * Public statistics (GET /api/v1/stats) in the counters table, served from counters, never from scans.
 *
 * Each event adds to two items of the counters table in one atomic `ADD` each:
 * - `stats#total`: the all-time totals (no `expires_at`: it never expires);
 * - `stats#hour#<YYYY-MM-DDTHH>`: the totals of one UTC hour, with `expires_at` (the table's TTL
 *   attribute) 25 hours after the hour started, so DynamoDB removes old buckets by itself.
 * "Last 24 h" is the sum of the current hour's bucket and the 23 before it: at most one hour more
 * coarse than a sliding window, and 24 single-item reads. Readers ignore a bucket whose
 * `expires_at` has passed (DynamoDB deletes late; dynalite never does).
 *
 * The counters hold numbers only: no account, key, device or hash is ever written here.
 */

/** Prefix of every statistics counter (the quota reset never touches these keys). */
export const STATS_PREFIX = 'stats#';
const HOUR_MS = 3_600_000;
const BUCKET_HOURS = 24;
/** A bucket outlives the window that reads it by one hour. */
const BUCKET_TTL_HOURS = BUCKET_HOURS + 1;

/** Key of the hourly bucket that contains `at`: `stats#hour#2026-11-22T10`. */
export function hourBucketKey(at: Date, prefix = STATS_PREFIX): string {
  return `${prefix}hour#${at.toISOString().slice(0, 13)}`;
}

const zero = (): StatTotals => ({ registered: 0, anchored: 0, devices: 0, transactions: 0 });

/** Events summed per hour bucket, and the promise their callers wait on. */
interface StatsBatch {
  byHour: Map<number, StatTotals>;
  written: Promise<void>;
  resolve: () => void;
}

function newBatch(): StatsBatch {
  let resolve!: () => void;
  const written = new Promise<void>((r) => (resolve = r));
  return { byHour: new Map(), written, resolve };
}

/** Counter-backed statistics over the counters table. */
export class StatsRecorder implements StatsPort {
  private readonly clock: () => Date;
  private readonly prefix: string;

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
   * Adds `delta` to the totals and to the current hour's bucket. Best-effort by design: the event
   * it counts (an anchor, a registration, a transaction) has already happened and must not fail
   * because of a statistic, so a failed write is logged and swallowed.
   *
   * Group commit: while a write is in flight, the events recorded meanwhile are summed and go out
   * together in the next write (one ADD on the totals and one per hour bucket, whatever their
   * number). Each caller still waits for the write that carries its own event, so a Lambda that
   * is frozen after its response has lost nothing; alone, an event is written at once as before.
   */
  record(delta: StatsDelta): Promise<void> {
    const fields = STAT_FIELDS.filter((f) => (delta[f] ?? 0) > 0);
    if (fields.length === 0) return Promise.resolve();
    const batch = (this.next ??= newBatch());
    const hourStart = Math.floor(this.clock().getTime() / HOUR_MS) * HOUR_MS;
    const sums = batch.byHour.get(hourStart) ?? zero();
    for (const f of fields) sums[f] += delta[f] ?? 0;
    batch.byHour.set(hourStart, sums);
    if (!this.flushing) void this.flush();
    return batch.written;
  }

  private next: StatsBatch | null = null;
  private flushing = false;

  /** Writes the waiting batches one after another until none is left. */
  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.next) {
        const batch = this.next;
        this.next = null;
        await this.write(batch.byHour);
        batch.resolve();
      }
    } finally {
      this.flushing = false;
    }
  }

  /** One ADD on the totals and one per hour bucket; never throws. */
  private async write(byHour: Map<number, StatTotals>): Promise<void> {
    const total = zero();
    for (const sums of byHour.values()) for (const f of STAT_FIELDS) total[f] += sums[f];
    try {
      await Promise.all([
        this.add(`${this.prefix}total`, total),
        ...[...byHour].map(([hourStart, sums]) =>
          this.add(hourBucketKey(new Date(hourStart), this.prefix), sums, Math.floor(hourStart / 1000) + BUCKET_TTL_HOURS * 3600),
        ),
      ]);
    } catch (error) {
      log.warn('statistics not recorded', { fields: STAT_FIELDS.filter((f) => total[f] > 0), ...describeError(error) });
    }
  }

  /** `ADD` of the positive fields of `sums` to one counter item (with its expiry, for a bucket). */
  private async add(pk: string, sums: StatTotals, expiresAt?: number): Promise<void> {
    const fields = STAT_FIELDS.filter((f) => sums[f] > 0);
    if (fields.length === 0) return;
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const adds = fields.map((f, i) => {
      names[`#f${i}`] = f;
      values[`:v${i}`] = sums[f];
      return `#f${i} :v${i}`;
    });
    if (expiresAt !== undefined) values[':exp'] = expiresAt;
    await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk },
        UpdateExpression: `ADD ${adds.join(', ')}${expiresAt !== undefined ? ' SET expires_at = :exp' : ''}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
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
