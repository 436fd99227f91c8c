import { type DynamoDBDocumentClient, ScanCommand, type ScanCommandInput } from '@aws-sdk/lib-dynamodb';

/**
 * A scan in bounded segments (docs/decisions.md "Cost"): each call reads at most `budget` items
 * of the table, from where the previous call stopped (or from the beginning with `restart`), and
 * says whether it reached the end. The cost of one call is fixed by its budget, not by the size of
 * the table; a sweep over the whole table takes ⌈items ÷ budget⌉ calls.
 *
 * It is the local safety net under the sparse indexes: dynalite can lose an index entry when it is
 * killed between an item and its index (DynamoDB does not; there the reconciler reads the indexes
 * only). `npm start` sweeps once at start and once after each restart of the database, and not
 * otherwise. The cursor is this object's memory.
 */
export class SegmentScan {
  private cursor: Record<string, unknown> | undefined;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly input: Omit<ScanCommandInput, 'Limit' | 'ExclusiveStartKey'>,
  ) {}

  /**
   * The items of the next segment that match the scan's filter (at most `budget` items read), and
   * whether this segment reached the end of the table (a sweep begun with `restart` is then complete).
   */
  async next(budget: number, restart = false): Promise<{ items: Record<string, unknown>[]; complete: boolean }> {
    if (restart) this.cursor = undefined;
    const out: Record<string, unknown>[] = [];
    let complete = false;
    let left = Math.floor(budget);
    while (left > 0) {
      const page = await this.db.send(
        new ScanCommand({ ...this.input, Limit: left, ...(this.cursor ? { ExclusiveStartKey: this.cursor } : {}) }),
      );
      out.push(...(page.Items ?? []));
      left -= Math.max(1, page.ScannedCount ?? left);
      this.cursor = page.LastEvaluatedKey;
      if (!this.cursor) {
        complete = true;
        break; // the end of the table: this call stops, the next one starts over
      }
    }
    return { items: out, complete };
  }
}
