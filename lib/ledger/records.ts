import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from '../store/dynamo.js';
import { LedgerUnavailableError, sanitizeDetail } from './errors.js';
import type { LedgerSlot, LedgerSlotKind, LedgerSlotStatus, WalletItem } from './types.js';

/**
 * The sender's records in the ledger table: the wallet item (pk `wallet#<address>`, sk 0) and one
 * slot per nonce (pk `tx#<address>`, sk = nonce). Every slot write is conditional, so two writers
 * never both believe they hold a nonce. DynamoDB failures become LedgerUnavailableError('store');
 * a lost condition passes through (or is answered false).
 */
export class LedgerRecords {
  constructor(
    readonly db: DynamoDBDocumentClient,
    readonly table: string,
    private readonly chainId: number,
    private readonly clock: () => Date,
  ) {}

  /** Runs a DynamoDB call; a lost condition passes through, anything else becomes LedgerUnavailableError. */
  async store<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (error) {
      if (isConditionalCheckFailed(error) || error instanceof LedgerUnavailableError) throw error;
      throw new LedgerUnavailableError('The ledger records (DynamoDB) could not be read or written', 'store', sanitizeDetail(error));
    }
  }

  async getWallet(address: string): Promise<WalletItem | null> {
    const r = await this.store(() =>
      this.db.send(new GetCommand({ TableName: this.table, Key: { pk: `wallet#${address}`, sk: 0 }, ConsistentRead: true })),
    );
    return (r.Item as WalletItem | undefined) ?? null;
  }

  async getSlot(address: string, nonce: number): Promise<LedgerSlot | null> {
    const r = await this.store(() =>
      this.db.send(new GetCommand({ TableName: this.table, Key: { pk: `tx#${address}`, sk: nonce }, ConsistentRead: true })),
    );
    return (r.Item as LedgerSlot | undefined) ?? null;
  }

  async highestSlotNonce(address: string): Promise<number> {
    const r = await this.store(() =>
      this.db.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': `tx#${address}` },
          ScanIndexForward: false,
          Limit: 1,
          ConsistentRead: true,
        }),
      ),
    );
    const top = r.Items?.[0] as LedgerSlot | undefined;
    return top ? top.sk : -1;
  }

  /** Persisted slots of the wallet from `fromNonce` on, in nonce order. */
  async listSlots(address: string, fromNonce = 0): Promise<LedgerSlot[]> {
    const out: LedgerSlot[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.store(() =>
        this.db.send(
          new QueryCommand({
            TableName: this.table,
            KeyConditionExpression: 'pk = :pk AND sk >= :from',
            ExpressionAttributeValues: { ':pk': `tx#${address}`, ':from': fromNonce },
            ConsistentRead: true,
            ExclusiveStartKey: start,
          }),
        ),
      );
      out.push(...((page.Items ?? []) as LedgerSlot[]));
      start = page.LastEvaluatedKey;
    } while (start);
    return out;
  }

  /**
   * Writes the signed transaction into its slot before anything is broadcast. Only a missing or
   * released slot may be written (a filler may also replace a 'conflict' slot); false when the slot
   * is held by another transaction.
   */
  async persistSlot(
    address: string,
    nonce: number,
    signed: { raw: string; txHash: string },
    kind: LedgerSlotKind,
    ref: string,
    filler: boolean,
  ): Promise<boolean> {
    return this.putSlot(address, nonce, signed, kind, ref, 'signed', filler ? 'filler' : 'missing-or-released');
  }

  /**
   * The conditional put behind persistSlot. resume() writes only into a missing slot (a released
   * one is never revived), also a 'released' slot without raw bytes, so that its 'dead' stays final.
   */
  async putSlot(
    address: string,
    nonce: number,
    signed: { raw?: string; txHash: string },
    kind: LedgerSlotKind,
    ref: string,
    status: 'signed' | 'released',
    over: 'missing' | 'missing-or-released' | 'filler',
  ): Promise<boolean> {
    const now = this.clock().toISOString();
    const item: LedgerSlot = {
      pk: `tx#${address}`,
      sk: nonce,
      nonce,
      tx_hash: signed.txHash,
      ...(signed.raw !== undefined ? { raw: signed.raw } : {}),
      kind,
      ref,
      status,
      chain_id: this.chainId,
      created_at: now,
      updated_at: now,
      ...(status === 'released' ? { released_at: now } : {}),
    };
    try {
      await this.store(() =>
        this.db.send(
          new PutCommand({
            TableName: this.table,
            Item: item,
            ...(over === 'missing'
              ? { ConditionExpression: 'attribute_not_exists(pk)' }
              : {
                  ConditionExpression:
                    over === 'filler' ? 'attribute_not_exists(pk) OR #s = :released OR #s = :conflict' : 'attribute_not_exists(pk) OR #s = :released',
                  ExpressionAttributeNames: { '#s': 'status' },
                  ExpressionAttributeValues: over === 'filler' ? { ':released': 'released', ':conflict': 'conflict' } : { ':released': 'released' },
                }),
          }),
        ),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  /** Conditional status change of a slot (only if it still holds `txHash` in one of `from`); false otherwise. */
  async setSlotStatus(
    address: string,
    nonce: number,
    txHash: string,
    status: LedgerSlotStatus,
    from: LedgerSlotStatus[],
    extra: { set?: Record<string, unknown>; remove?: string[] } = {},
  ): Promise<boolean> {
    const now = this.clock().toISOString();
    const values: Record<string, unknown> = { ':h': txHash, ':s': status, ':now': now };
    const names: Record<string, string> = { '#s': 'status' };
    const sets = ['#s = :s', 'updated_at = :now'];
    if (status === 'sent' && extra.set?.sent_at === undefined) sets.push('sent_at = :now');
    for (const [i, [k, v]] of Object.entries(extra.set ?? {}).entries()) {
      names[`#x${i}`] = k;
      values[`:x${i}`] = v;
      sets.push(`#x${i} = :x${i}`);
    }
    const fromKeys = from.map((s, i) => {
      values[`:f${i}`] = s;
      return `:f${i}`;
    });
    const removed = (extra.remove ?? []).map((k, i) => {
      names[`#r${i}`] = k;
      return `#r${i}`;
    });
    const remove = removed.length ? ` REMOVE ${removed.join(', ')}` : '';
    try {
      await this.store(() =>
        this.db.send(
          new UpdateCommand({
            TableName: this.table,
            Key: { pk: `tx#${address}`, sk: nonce },
            UpdateExpression: `SET ${sets.join(', ')}${remove}`,
            ConditionExpression: `tx_hash = :h AND #s IN (${fromKeys.join(', ')})`,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
          }),
        ),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }
}
