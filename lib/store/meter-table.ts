import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SweepStep } from '../accounts/counter-repository.js';
import type { MeterCharge, MeterOutcome, MeterRepository } from '../accounts/meter-repository.js';
import { isConditionalCheckFailed } from './dynamo.js';
import { HOLD_SHARD, getManyByPk, openHoldKeys } from './open-holds.js';
import { SegmentScan } from './segment-scan.js';

/** Key prefix of the meter items in the counters table. */
export const METER_PREFIX = 'meter#';
/** A hold's attribute: `h#<hold id>` (its value: the epoch ms it was taken). */
const HOLD_ATTR = 'h#';
/** At most this many settles ride on one write (each is a REMOVE of one attribute). */
const MAX_SETTLES_PER_WRITE = 40;
/** At most this many charges go out in one write (each hold is one attribute and one condition). */
const MAX_GROUP = 50;

type Item = Record<string, unknown>;

/** The hold ids an item holds open. */
function holdsOf(item: Item): string[] {
  return Object.keys(item)
    .filter((k) => k.startsWith(HOLD_ATTR))
    .map((k) => k.slice(HOLD_ATTR.length));
}

/** A charge waiting for its meter's next write, and how to answer it. */
interface Waiting {
  c: MeterCharge;
  resolve: (outcome: MeterOutcome) => void;
  reject: (error: unknown) => void;
}

/** What one charge of a group asks for, and (once decided) what it gets. */
interface Part {
  w: Waiting;
  rate: boolean;
  hold: string | undefined;
  /** Decided before the write: refused by the rate (nothing charged), or by the quota (its rate unit only). */
  refused?: 'rate' | 'quota';
}

/**
 * The account meters (lib/accounts/meter-repository.ts) in the counters table. A charge is one
 * UpdateItem, conditional on the minute, the minute's count, the month's units and the hold's
 * absence.
 *
 * Group commit: charges of one meter that arrive while a write of it is in flight go out together
 * in the next write (up to 50), `ADD n :k, used :q` with one `h#<id>` per hold, conditional on
 * there being room for all of them (`n <= rate − k`, `used <= quota − q`). An account whose
 * phones send at once thus costs one write per group, not per request, and no request waits for
 * another's lock on the item. When the group does not fit, the item as it is tells how many
 * units are left, and they go to the group's charges in arrival order; the rest are refused, each
 * as it would have been alone (rate first, then quota). A Lambda instance serves one request at a
 * time: there every group has one charge.
 *
 * The minute is moved on in two forms of the write, because an update expression cannot choose
 * between "count on" and "start a new minute" by itself: `ADD n` when the item counts this minute
 * already (its `m` is this minute, or later on another instance's clock), `SET m, n` when it counts
 * an earlier one. The first charge says which to try first (the minute it last saw); a wrong guess
 * costs one refused write, and on DynamoDB no read (the refusal returns the item), on dynalite one.
 */
export class MeterTable implements MeterRepository {
  private readonly queues = new Map<string, { waiting: Waiting[]; running: boolean }>();

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  charge(c: MeterCharge): Promise<MeterOutcome> {
    return new Promise<MeterOutcome>((resolve, reject) => {
      let q = this.queues.get(c.pk);
      if (!q) this.queues.set(c.pk, (q = { waiting: [], running: false }));
      q.waiting.push({ c, resolve, reject });
      if (!q.running) void this.drain(c.pk, q);
    });
  }

  /** Writes the waiting charges of one meter, a group per write, until none is left. */
  private async drain(pk: string, q: { waiting: Waiting[]; running: boolean }): Promise<void> {
    q.running = true;
    try {
      while (q.waiting.length > 0) {
        const first = q.waiting[0] as Waiting;
        // One group: the charges with the same limits and window as the first (a tier change or a
        // new minute among them waits for the next write), at most 50.
        const same = (w: Waiting) => w.c.minute === first.c.minute && w.c.rateLimit === first.c.rateLimit && w.c.hold?.quotaLimit === first.c.hold?.quotaLimit && w.c.expiresAt === first.c.expiresAt;
        const group = q.waiting.filter(same).slice(0, MAX_GROUP);
        q.waiting = q.waiting.filter((w) => !group.includes(w));
        try {
          await this.chargeGroup(group);
        } catch (error) {
          for (const w of group) w.reject(error);
        }
      }
    } finally {
      q.running = false;
      this.queues.delete(pk);
    }
  }

  private async chargeGroup(group: Waiting[]): Promise<void> {
    const c = (group[0] as Waiting).c;
    const rateLimit = c.rateLimit;
    const quotaLimit = c.hold?.quotaLimit ?? 0;
    let parts: Part[] = group.map((w) => ({ w, rate: w.c.rateLimit !== null, hold: w.c.hold?.id }));
    // A limit of zero refuses everything (the first write of a window would otherwise pass it).
    for (const p of parts) {
      if (p.rate && (rateLimit ?? 0) <= 0) p.refused = 'rate';
      else if (p.hold && quotaLimit <= 0) p.refused = 'quota';
    }
    const settle = [...new Set(group.flatMap((w) => w.c.settle))].filter((id) => !group.some((w) => w.c.hold?.id === id)).slice(0, MAX_SETTLES_PER_WRITE);
    let newMinute = c.newMinute;
    let old: Item | undefined;
    for (let attempt = 0; attempt < 6; attempt++) {
      const rateUnits = parts.filter((p) => p.rate && p.refused !== 'rate');
      const holds = parts.filter((p) => p.hold && !p.refused);
      if (rateUnits.length === 0 && holds.length === 0) return this.answer(parts, old ?? {}, c.minute, false);
      const names: Record<string, string> = {};
      const values: Record<string, unknown> = { ':exp': c.expiresAt };
      const set = ['expires_at = :exp'];
      const add: string[] = [];
      const cond: string[] = [];
      if (rateUnits.length > 0) {
        values[':m'] = c.minute;
        values[':k'] = rateUnits.length;
        if (newMinute) {
          set.push('m = :m', 'n = :k');
          cond.push('(attribute_not_exists(m) OR m < :m)');
        } else {
          values[':nmax'] = (rateLimit ?? 0) - rateUnits.length;
          add.push('n :k');
          cond.push('m >= :m', 'n <= :nmax');
        }
      }
      if (holds.length > 0) {
        Object.assign(values, { ':q': holds.length, ':umax': quotaLimit - holds.length, ':t': (group[0] as Waiting).c.hold?.atMs ?? 0, ':shard': HOLD_SHARD });
        add.push('used :q');
        set.push('hold_shard = :shard');
        // A new month starts at 0; otherwise there must be room for every hold. Each hold is taken
        // once: an attempt that finds it landed already is answered from the item (below).
        cond.push('(attribute_not_exists(used) OR used <= :umax)');
        holds.forEach((p, i) => {
          names[`#h${i}`] = `${HOLD_ATTR}${p.hold}`;
          set.push(`#h${i} = :t`);
          cond.push(`attribute_not_exists(#h${i})`);
        });
      }
      settle.forEach((id, i) => (names[`#s${i}`] = `${HOLD_ATTR}${id}`));
      const expression = [`SET ${set.join(', ')}`, add.length ? `ADD ${add.join(', ')}` : '', settle.length ? `REMOVE ${settle.map((_, i) => `#s${i}`).join(', ')}` : '']
        .filter(Boolean)
        .join(' ');
      try {
        const out = await this.db.send(
          new UpdateCommand({
            TableName: this.table,
            Key: { pk: c.pk },
            UpdateExpression: expression,
            ConditionExpression: cond.join(' AND '),
            ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
            ExpressionAttributeValues: values,
            ReturnValues: 'ALL_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return this.answer(parts, out.Attributes ?? {}, c.minute, true, { rate: rateUnits, holds });
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        // The item as it was: DynamoDB returns it with the refusal; dynalite does not, so it is read.
        old = (error as { Item?: Item }).Item ?? (await this.get(c.pk)) ?? {};
        const item = old;
        // Holds that landed already (an earlier attempt whose answer was lost): those charges are done.
        const landed = parts.filter((p) => p.hold && !p.refused && item[`${HOLD_ATTR}${p.hold}`] !== undefined);
        for (const p of landed) p.w.resolve({ rate: { allowed: true, count: Number(item.n ?? 1) }, quota: { allowed: true, used: Number(item.used ?? 1) }, minute: String(item.m ?? c.minute), settled: false });
        parts = parts.filter((p) => !landed.includes(p));
        const sameMinute = typeof item.m === 'string' && item.m >= c.minute;
        if (rateUnits.length > 0 && sameMinute === newMinute) {
          newMinute = !sameMinute; // the other form
          continue;
        }
        newMinute = !sameMinute;
        // The units left, given to the charges in arrival order; the rest refused as each would be alone.
        let rateLeft = rateLimit === null ? Infinity : sameMinute ? rateLimit - Number(item.n ?? 0) : rateLimit;
        let quotaLeft = quotaLimit - Number(item.used ?? 0);
        for (const p of parts) {
          if (p.refused) continue;
          if (p.rate) {
            if (rateLeft <= 0) {
              p.refused = 'rate';
              continue;
            }
            rateLeft--;
          }
          if (p.hold) {
            if (quotaLeft <= 0) p.refused = 'quota';
            else quotaLeft--;
          }
        }
      }
    }
    throw new Error(`meter ${c.pk}: the charge did not settle after 6 attempts`);
  }

  /** Answers each charge of a group from the item as written (or as read, when nothing was written). */
  private answer(parts: Part[], item: Item, minute: string, written: boolean, charged: { rate: Part[]; holds: Part[] } = { rate: [], holds: [] }): void {
    const n = Number(item.n ?? 0);
    const used = Number(item.used ?? 0);
    for (const p of parts) {
      const r = charged.rate.indexOf(p);
      const h = charged.holds.indexOf(p);
      // Each charge's own count: the item's, less the units of the group written after it.
      const rate = p.refused === 'rate' ? { allowed: false, count: n } : { allowed: true, count: r >= 0 ? n - (charged.rate.length - 1 - r) : n };
      const quota = p.hold === undefined ? undefined : p.refused ? { allowed: false, used } : { allowed: true, used: h >= 0 ? used - (charged.holds.length - 1 - h) : used };
      p.w.resolve({ rate, ...(quota ? { quota } : {}), minute: String(item.m ?? minute), settled: written });
    }
  }

  async endHold(pk: string, holdId: string, refund: boolean): Promise<boolean> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk },
          UpdateExpression: refund ? 'ADD used :minus REMOVE #h' : 'REMOVE #h',
          // Each hold ends once: a second settle or refund, or a refund after a settle, finds no
          // hold and changes nothing. A meter deleted meanwhile (an operator's reset) has none either.
          ConditionExpression: 'attribute_exists(#h)',
          ExpressionAttributeNames: { '#h': `${HOLD_ATTR}${holdId}` },
          ...(refund ? { ExpressionAttributeValues: { ':minus': -1 } } : {}),
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  async settle(pk: string, holdIds: readonly string[]): Promise<void> {
    for (let i = 0; i < holdIds.length; i += MAX_SETTLES_PER_WRITE) {
      const ids = holdIds.slice(i, i + MAX_SETTLES_PER_WRITE);
      try {
        await this.db.send(
          new UpdateCommand({
            TableName: this.table,
            Key: { pk },
            // Removing an attribute that is gone changes nothing (a hold refunded meanwhile stays refunded).
            UpdateExpression: `REMOVE ${ids.map((_, j) => `#s${j}`).join(', ')}`,
            // Never a stub item for a meter an operator deleted.
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: Object.fromEntries(ids.map((id, j) => [`#s${j}`, `${HOLD_ATTR}${id}`])),
          }),
        );
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
    }
  }

  async listHolds(sweep?: SweepStep): Promise<{ holds: { pk: string; holds: string[] }[]; swept?: boolean }> {
    const keys = await openHoldKeys(this.db, this.table, METER_PREFIX);
    let swept: boolean | undefined;
    if (sweep && sweep.items > 0) {
      this.scan ??= new SegmentScan(this.db, {
        TableName: this.table,
        FilterExpression: 'begins_with(pk, :p)',
        ExpressionAttributeValues: { ':p': METER_PREFIX },
        ConsistentRead: true,
      });
      const segment = await this.scan.next(sweep.items, sweep.restart);
      for (const item of segment.items) if (holdsOf(item).length > 0) keys.add(String(item.pk));
      swept = segment.complete;
    }
    const out: { pk: string; holds: string[] }[] = [];
    for (const item of await getManyByPk(this.db, this.table, [...keys])) {
      const holds = holdsOf(item);
      if (holds.length > 0) out.push({ pk: String(item.pk), holds });
      else if (item.hold_shard !== undefined) await this.leaveHoldIndex(String(item.pk), item);
    }
    return { holds: out.sort((a, b) => (a.pk < b.pk ? -1 : 1)), ...(swept !== undefined ? { swept } : {}) };
  }

  private scan: SegmentScan | undefined;

  async used(pk: string): Promise<number> {
    return Number((await this.get(pk))?.used ?? 0);
  }

  async remove(pk: string): Promise<void> {
    await this.db.send(new DeleteCommand({ TableName: this.table, Key: { pk } }));
  }

  private async get(pk: string): Promise<Item | undefined> {
    return (await this.db.send(new GetCommand({ TableName: this.table, Key: { pk }, ConsistentRead: true }))).Item;
  }

  /**
   * Takes a meter without holds off the open_holds index, conditional on its having none still: a
   * hold taken meanwhile is a new attribute, so the condition names the count of units as read
   * (every hold adds one) and the minute's count (every charge moves one of the two).
   */
  private async leaveHoldIndex(pk: string, read: Item): Promise<void> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk },
          UpdateExpression: 'REMOVE hold_shard',
          ConditionExpression: 'attribute_exists(hold_shard) AND used = :used AND n = :n AND m = :m',
          ExpressionAttributeValues: { ':used': read.used ?? 0, ':n': read.n ?? 0, ':m': read.m ?? '' },
        }),
      );
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }
}
