import { applyChanges, type DerivedStores, type ItemChange } from '../evidence/derived.js';
import { itemChangeOf, type StreamRecord } from '../deps/derived.js';
import { getWebhookOutbox } from '../deps/webhooks.js';
import { describeError, log } from '../log.js';

/**
 * The local twin of the evidence-stream Lambda (functions/jobs/evidence-stream.ts): reads the
 * change feed of the embedded dynalite (lib/local/dynalite-store.mjs, the local stand-in for the
 * evidence table's DynamoDB Stream) in order, applies each batch as the Lambda does
 * (lib/evidence/derived.ts: statistics, links' anchored marks) and then trims what it applied.
 * A consumer that dies between applying and trimming reads the same changes again: applying is
 * exactly once (the statistics' checkpoints), so nothing is counted twice or lost. Several
 * consumers on one feed (tests in parallel) are safe for the same reason.
 *
 * The local feed is one shard (`local`) whose sequence numbers never repeat (SQLite AUTOINCREMENT).
 *
 * Each batch also goes to the webhooks' outbox (lib/webhooks/outbox.ts; in AWS its own stream
 * function, functions/jobs/webhook-outbox.ts), in the same pass and before the trim: a webhook
 * event is never trimmed before its deliveries are written, and every drain (a test's too) writes them.
 */
export const LOCAL_SHARD = 'local';
const TARGET = 'LocalChangeFeed.';
const DEADLINE_MS = 3500;

export class LocalChangeFeed {
  private after = 0;
  private running: Promise<number> | null = null;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    /** The dynalite endpoint (DYNAMODB_ENDPOINT). */
    private readonly endpoint: string,
    /** The evidence table's name. */
    private readonly table: string,
    private readonly stores: DerivedStores,
    private readonly batchSize = 500,
    /** Runs each batch's applying (the crash-point sweep arms it: lib/local/fault-hook.ts). */
    private readonly around: <T>(apply: () => Promise<T>) => Promise<T> = (apply) => apply(),
    /** The other consumer of the same changes: the webhooks' outbox. */
    private readonly outbox: (changes: ItemChange[]) => Promise<unknown> = async () => undefined,
  ) {}

  /** Applies every change the feed holds now; how many. One pass at a time (a second call waits for the first, then runs). */
  async drain(): Promise<number> {
    while (this.running) await this.running.catch(() => undefined);
    this.running = this.pass();
    try {
      return await this.running;
    } finally {
      this.running = null;
    }
  }

  private async pass(): Promise<number> {
    let applied = 0;
    for (;;) {
      const page = (await this.call('ReadChanges', { TableName: this.table, After: this.after, Limit: this.batchSize })) as { Records: StreamRecord[]; Last: number };
      if (page.Records.length === 0) return applied;
      const changes = page.Records.map(itemChangeOf);
      // One after the other, not side by side: the k-th call of a batch is then the same call on
      // every run, so the crash-point sweep (EVIDENCE_FAULT_ARM=feed) kills each step where it aims.
      await this.around(async () => {
        await applyChanges(this.stores, LOCAL_SHARD, changes);
        await this.outbox(changes);
      });
      await this.call('TrimChanges', { TableName: this.table, UpTo: page.Last });
      this.after = page.Last;
      applied += page.Records.length;
      if (page.Records.length < this.batchSize) return applied;
    }
  }

  /** Drains every `intervalMs` until stopped (npm start). */
  start(intervalMs: number): void {
    const tick = () =>
      void this.drain()
        .catch((error: unknown) => log.warn('change feed: not applied now; tried again', describeError(error)))
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, intervalMs).unref();
        });
    this.timer = setTimeout(tick, 0).unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async call(operation: string, body: object): Promise<unknown> {
    const res = await fetch(this.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `${TARGET}${operation}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(DEADLINE_MS),
    });
    const out = (await res.json()) as { message?: string };
    if (!res.ok) throw new Error(`change feed ${operation}: ${res.status} ${out.message ?? ''}`);
    return out;
  }
}

/** The change feed of the configured evidence table on the configured (embedded) DynamoDB endpoint. */
export function localChangeFeed(
  config: { aws: { dynamoEndpoint: string | undefined }; tables: { evidence: string } },
  stores: DerivedStores,
  around?: <T>(apply: () => Promise<T>) => Promise<T>,
  outbox: (changes: ItemChange[]) => Promise<unknown> = getWebhookOutbox(),
): LocalChangeFeed {
  if (!config.aws.dynamoEndpoint) throw new Error('the local change feed needs DYNAMODB_ENDPOINT (the embedded dynalite)');
  return new LocalChangeFeed(config.aws.dynamoEndpoint, config.tables.evidence, stores, 500, around, outbox);
}

/**
 * Forgets every change of `table` the feed holds: after a local table was rebuilt (lib/store/tables.ts
 * copies its items into a new table with a new index), its copies are not changes.
 */
export async function forgetLocalChanges(config: { aws: { dynamoEndpoint: string | undefined } }, table: string): Promise<void> {
  if (!config.aws.dynamoEndpoint) return;
  const res = await fetch(config.aws.dynamoEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `${TARGET}TrimChanges` },
    body: JSON.stringify({ TableName: table, UpTo: Number.MAX_SAFE_INTEGER }),
    signal: AbortSignal.timeout(DEADLINE_MS),
  });
  if (!res.ok) throw new Error(`change feed TrimChanges: ${res.status}`);
}
