import { randomUUID } from 'node:crypto';
import { PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from '../store/dynamo.js';
import { LedgerUnavailableError, sanitizeDetail } from './errors.js';
import type { LedgerNode } from './node.js';
import { BroadcastOrder, type BroadcastState, type BroadcastTicket } from './pipeline.js';
import type { LedgerRecords } from './records.js';
import type { LedgerLog, WalletItem } from './types.js';

/** Most nonces one allocation reserves (one per submit waiting for a nonce). */
const NONCE_BATCH_MAX = 16;

export interface NonceAllocation {
  nonce: number;
  reused: boolean;
  ticket: BroadcastTicket;
}

/**
 * The wallet's nonces (see "Nonces", "Released nonces" and "Allocation in batches" in sender.ts):
 * the counter in DynamoDB, the released set, and the nonces this process lost to a store failure.
 */
export class NonceAllocator {
  /** Which broadcast waits for which (nonces this process holds). */
  readonly order = new BroadcastOrder();
  /** Submits waiting for a nonce: served together by one allocation. */
  private readonly nonceQueue: { resolve: (a: NonceAllocation) => void; reject: (error: unknown) => void }[] = [];
  private allocating = false;
  /**
   * Nonces this process allocated and could neither persist+broadcast nor give back (DynamoDB failed
   * between the allocation and the release), with the transaction signed for them if any. We never
   * broadcast them, so they are released before the next allocation, at once when the store is
   * back, instead of waiting `gapGraceMs` for the re-send job to fill them (a grace meant for gaps
   * of other processes, whose submits may still be in flight).
   */
  readonly lost = new Map<number, string | null>();
  private recovering: Promise<void> | null = null;
  private readonly db: DynamoDBDocumentClient;
  private readonly table: string;

  constructor(
    private readonly records: LedgerRecords,
    private readonly node: LedgerNode,
    private readonly clock: () => Date,
    private readonly log: LedgerLog,
  ) {
    this.db = records.db;
    this.table = records.table;
  }

  /** A nonce for one submit: waiting submits are served together by one allocation. */
  takeNonce(address: string): Promise<NonceAllocation> {
    return new Promise((resolve, reject) => {
      this.nonceQueue.push({ resolve, reject });
      if (!this.allocating) void this.serveNonceQueue(address);
    });
  }

  async serveNonceQueue(address: string): Promise<void> {
    this.allocating = true;
    try {
      while (this.nonceQueue.length > 0) {
        if (this.lost.size > 0) await this.recoverLost(address);
        const batch = this.nonceQueue.splice(0, NONCE_BATCH_MAX);
        const seq = this.order.mark();
        let got: { first: number; count: number; reused: boolean };
        try {
          got = await this.allocateNonces(address, batch.length);
        } catch (error) {
          for (const waiter of batch) waiter.reject(error);
          continue;
        }
        // A released nonce serves one submit; the others wait for the next allocation.
        this.nonceQueue.unshift(...batch.slice(got.count));
        batch.slice(0, got.count).forEach((waiter, i) => {
          const nonce = got.first + i;
          waiter.resolve({ nonce, reused: got.reused, ticket: this.order.open(nonce, seq) });
        });
      }
    } finally {
      this.allocating = false;
    }
  }

  /**
   * Gives back the nonces this process lost (see `lost`), lowest first, so that the allocation
   * right after takes them. releaseNonce is conditional: it only releases a slot that is still
   * missing or holds our own signed, never broadcast, transaction; a slot taken meanwhile (a gap
   * filler, a resume elsewhere that sent it) is simply forgotten. While the store still fails, they
   * stay for the next allocation.
   */
  recoverLost(address: string): Promise<void> {
    this.recovering ??= (async () => {
      try {
        for (const nonce of [...this.lost.keys()].sort((a, b) => a - b)) {
          const outcome = await this.releaseNonce(address, nonce, this.lost.get(nonce) ?? null);
          this.lost.delete(nonce);
          this.log('info', 'ledger: a nonce left by a failed send was recovered', { nonce, outcome });
        }
      } catch (error) {
        this.log('warn', 'ledger: nonces left by failed sends could not be given back yet', { nonces: [...this.lost.keys()], detail: sanitizeDetail(error) });
      } finally {
        this.recovering = null;
      }
    })();
    return this.recovering;
  }

  /**
   * Allocates nonces: the lowest released one if any (count 1), else `count` consecutive ones from
   * the counter. The common case is one UpdateItem (ADD on the counter, conditional on an empty
   * released set).
   */
  async allocateNonces(address: string, count: number): Promise<{ first: number; count: number; reused: boolean }> {
    const key = { pk: `wallet#${address}`, sk: 0 };
    for (let i = 0; i < 50; i++) {
      const now = this.clock().toISOString();
      // The allocation names itself (alloc_token) and keeps where it started (alloc_from): a write
      // the SDK resends after a lost answer (a deadline) finds its own token and is refused, and
      // this call still learns the nonces it got, instead of taking `count` more (a gap that would
      // stop every later transaction of the wallet until the re-send job fills it). SET reads the
      // old values on its right-hand side (in DynamoDB and dynalite alike), so alloc_from is the
      // counter before this allocation.
      const token = randomUUID();
      try {
        const r = await this.records.store(() =>
          this.db.send(
            new UpdateCommand({
              TableName: this.table,
              Key: key,
              UpdateExpression: 'SET next_nonce = next_nonce + :n, alloc_from = next_nonce, alloc_token = :t, allocated_at = :now',
              ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(released) AND (attribute_not_exists(alloc_token) OR alloc_token <> :t)',
              ExpressionAttributeValues: { ':n': count, ':now': now, ':t': token },
              ReturnValues: 'UPDATED_NEW',
            }),
          ),
        );
        return { first: Number(r.Attributes?.alloc_from), count, reused: false };
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
      const wallet = await this.records.getWallet(address);
      if (!wallet) {
        await this.initWallet(address);
        continue;
      }
      // Refused because an earlier attempt of this very write landed: those nonces are ours.
      if (wallet.alloc_token === token && wallet.alloc_from !== undefined) return { first: wallet.alloc_from, count, reused: false };
      const released = [...(wallet.released ?? [])].sort((a, b) => a - b);
      const lowest = released[0];
      if (lowest === undefined) continue;
      try {
        await this.records.store(() =>
          this.db.send(
            new UpdateCommand({
              TableName: this.table,
              Key: key,
              UpdateExpression: 'DELETE released :set SET allocated_at = :now',
              ConditionExpression: 'contains(released, :n)',
              ExpressionAttributeValues: { ':set': new Set([lowest]), ':n': lowest, ':now': now },
            }),
          ),
        );
        return { first: lowest, count: 1, reused: true };
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
    }
    throw new LedgerUnavailableError('No nonce could be allocated for the ledger wallet (too much contention)', 'store');
  }

  /** First use of a wallet: the counter starts at the chain's pending nonce (or after the highest record). */
  async initWallet(address: string): Promise<void> {
    const pending = await this.node.rpc('read the wallet nonce', () => this.node.nonceAt(address, 'pending'));
    const top = await this.records.highestSlotNonce(address);
    const now = this.clock().toISOString();
    const item: WalletItem = {
      pk: `wallet#${address}`,
      sk: 0,
      address,
      next_nonce: Math.max(pending, top + 1),
      created_at: now,
      updated_at: now,
    };
    try {
      await this.records.store(() =>
        this.db.send(new PutCommand({ TableName: this.table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' })),
      );
      this.log('info', 'ledger: nonce counter initialised', { address, nextNonce: item.next_nonce });
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error; // another process initialised it
    }
  }

  /** releaseNonce for a submit that fails before its broadcast; what the next nonce's submit is told. */
  async giveBack(address: string, nonce: number, txHash: string | null): Promise<BroadcastState> {
    const released = await this.releaseNonce(address, nonce, txHash).catch(() => {
      this.lost.set(nonce, txHash);
      return 'failed' as const;
    });
    // 'failed': neither persisted nor released, a missing slot (the rebroadcast job fills it).
    return released === 'released' || released === 'failed' ? 'released' : 'occupied';
  }

  /**
   * Gives a nonce back after a definite broadcast failure: the slot (if it holds `txHash`) becomes
   * 'released' without its raw bytes, then the nonce joins the wallet's released set.
   * 'ours-sent': the slot meanwhile went out (the rebroadcast job sent it), nothing was released.
   * 'taken': another writer holds the slot (a gap filler), nothing to release.
   */
  async releaseNonce(address: string, nonce: number, txHash: string | null): Promise<'released' | 'ours-sent' | 'taken'> {
    if (txHash) {
      const marked = await this.records.setSlotStatus(address, nonce, txHash, 'released', ['signed'], {
        set: { released_at: this.clock().toISOString() },
        remove: ['raw'],
      });
      if (!marked) {
        const slot = await this.records.getSlot(address, nonce);
        if (slot && slot.tx_hash === txHash && slot.status !== 'released') return 'ours-sent';
        if (slot && slot.tx_hash !== txHash && slot.status !== 'released') return 'taken';
      }
    } else {
      const slot = await this.records.getSlot(address, nonce);
      if (slot && slot.status !== 'released') return 'taken';
    }
    await this.records.store(() =>
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: `wallet#${address}`, sk: 0 },
          UpdateExpression: 'ADD released :set SET updated_at = :now',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':set': new Set([nonce]), ':now': this.clock().toISOString() },
        }),
      ),
    );
    this.log('info', 'ledger: nonce released for reuse', { nonce });
    return 'released';
  }

  /**
   * Brings the counter to at least max(chain pending nonce, highest slot + 1) and drops released
   * nonces the chain has already used (by a transaction this service did not sign).
   */
  async resyncCounter(address: string): Promise<void> {
    const [latest, pending, top] = await Promise.all([
      this.node.rpc('read the wallet nonce', () => this.node.nonceAt(address, 'latest')),
      this.node.rpc('read the wallet nonce', () => this.node.nonceAt(address, 'pending')),
      this.records.highestSlotNonce(address),
    ]);
    const target = Math.max(pending, top + 1);
    const key = { pk: `wallet#${address}`, sk: 0 };
    try {
      await this.records.store(() =>
        this.db.send(
          new UpdateCommand({
            TableName: this.table,
            Key: key,
            UpdateExpression: 'SET next_nonce = :t, updated_at = :now',
            ConditionExpression: 'attribute_exists(pk) AND next_nonce < :t',
            ExpressionAttributeValues: { ':t': target, ':now': this.clock().toISOString() },
          }),
        ),
      );
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
    const wallet = await this.records.getWallet(address);
    const stale = [...(wallet?.released ?? [])].filter((n) => n < latest);
    if (stale.length > 0) {
      await this.records.store(() =>
        this.db.send(
          new UpdateCommand({
            TableName: this.table,
            Key: key,
            UpdateExpression: 'DELETE released :set',
            ExpressionAttributeValues: { ':set': new Set(stale) },
          }),
        ),
      );
    }
  }

  async claimReleased(address: string, nonce: number): Promise<boolean> {
    try {
      await this.records.store(() =>
        this.db.send(
          new UpdateCommand({
            TableName: this.table,
            Key: { pk: `wallet#${address}`, sk: 0 },
            UpdateExpression: 'DELETE released :set',
            ConditionExpression: 'contains(released, :n)',
            ExpressionAttributeValues: { ':set': new Set([nonce]), ':n': nonce },
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
