import { type DynamoDBDocumentClient, ScanCommand, type ScanCommandInput } from '@aws-sdk/lib-dynamodb';

/**
 * A scan in bounded segments (docs/decisions.md "Cost"): each call reads at most
 * `budget` items of the table, from where the previous call stopped, and starts over at the
 * beginning once it reached the end. The cost of one call is therefore fixed by its budget, not by
 * the size of the table; the whole table is covered once every ⌈items ÷ budget⌉ calls.
 *
 * It is the local safety net under the sparse indexes: dynalite can lose an index entry when it is
 * killed between an item and its index (DynamoDB does not; there the reconciler reads the indexes
 * only). The cursor is this object's memory: a restarted process starts again at the beginning,
 * which is when a lost entry is most likely.
 */
export class SegmentScan {
  private cursor: Record<string, unknown> | undefined;
  /** Completed passes over the whole table (for tests and logs). */
  passes = 0;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly input: Omit<ScanCommandInput, 'Limit' | 'ExclusiveStartKey'>,
  ) {}

  /** The items of the next segment that match the scan's filter (at most `budget` items read). */
  async next(budget: number): Promise<Record<string, unknown>[]> {
    const out: Record<string, unknown>[] = [];
    let left = Math.floor(budget);
    while (left > 0) {
      const page = await this.db.send(
        new ScanCommand({ ...this.input, Limit: left, ...(this.cursor ? { ExclusiveStartKey: this.cursor } : {}) }),
      );
      out.push(...(page.Items ?? []));
      left -= Math.max(1, page.ScannedCount ?? left);
      this.cursor = page.LastEvaluatedKey;
      if (!this.cursor) {
        this.passes++;
        break; // the end of the table: this call stops, the next one starts over
      }
    }
    return out;
  }
}
