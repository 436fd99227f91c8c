import { randomUUID } from 'node:crypto';
import { PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from '../store/dynamo.js';
import { LedgerUnavailableError, sanitizeDetail } from './errors.js';
import type { LedgerNode } from './node.js';
import { BroadcastOrder, type BroadcastTicket } from './pipeline.js';
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
   * Nonces this process took and gave up while the store (or the node) failed, with what they
   * still need (LedgerSender.giveUpNonce): `release` (no transaction of them exists anywhere) or
   * `fill` (a transaction was announced to its owner and may be stored there: never released, an
   * empty filler takes the slot if it is still empty). Done before the next allocation, at once
   * when the store is back, instead of waiting `gapGraceMs` for the re-send job (a grace meant for
   * gaps of other processes, whose submits may still be in flight).
   */
  readonly lost = new Map<number, 'release' | 'fill'>();
  /**
   * Counter allocations whose answer never came (the store did not answer in time): the write may
   * have landed anyway (a frozen database applies it when it wakes), taking `count` nonces that
   * nobody will use, a gap every later transaction waits behind. Before the next allocation the
   * wallet item is read: if it still carries this allocation's token, nothing was allocated since
   * and those nonces are this process's to give back (`lost`, `release`). If another allocation
   * came after it, the re-send job's gap filling covers them (fillGaps, after its grace).
   */
  private readonly unanswered: { token: string; count: number }[] = [];
  /** The settling under way, shared by the allocations meanwhile: a job run again each time, not a cached value. */
  private recovering: Promise<void> | null = null;
  private readonly db: DynamoDBDocumentClient;
  private readonly table: string;

  constructor(
    private readonly records: LedgerRecords,
    private readonly node: LedgerNode,
    private readonly clock: () => Date,
    private readonly log: LedgerLog,
    /** Puts an empty filler transaction into the slot of `nonce` if it is empty (LedgerSender.fillNonce). */
    private readonly fill: (address: string, nonce: number) => Promise<boolean> = async () => false,
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
        if (this.unanswered.length > 0) await this.recoverUnanswered(address);
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
   * Settles the nonces this process lost (see `lost`), lowest first, so that the allocation right
   * after does not wait behind them. While the store still fails, they stay for the next allocation.
   */
  recoverLost(address: string): Promise<void> {
    this.recovering ??= (async () => {
      try {
        for (const nonce of [...this.lost.keys()].sort((a, b) => a - b)) {
          const need = this.lost.get(nonce);
          const outcome = need === 'fill' ? ((await this.fill(address, nonce)) ? 'filled' : 'held by its owner\'s transaction') : await this.releaseNonce(address, nonce);
          this.lost.delete(nonce);
          this.log('info', 'ledger: a nonce left by a failed send was settled', { nonce, outcome });
        }
      } catch (error) {
        this.log('warn', 'ledger: nonces left by failed sends could not be settled yet', { nonces: [...this.lost.keys()], detail: sanitizeDetail(error) });
      } finally {
        this.recovering = null;
      }
    })();
    return this.recovering;
  }

  /** See `unanswered`: an allocation that landed unanswered gives its nonces back. */
  private async recoverUnanswered(address: string): Promise<void> {
    let wallet;
    try {
      wallet = await this.records.getWallet(address);
    } catch {
      return; // the store still fails: next time
    }
    const landed = this.unanswered.find((a) => a.token === wallet?.alloc_token);
    if (landed && wallet?.alloc_from !== undefined) {
      for (let n = wallet.alloc_from; n < wallet.alloc_from + landed.count; n++) this.lost.set(n, 'release');
      this.log('warn', 'ledger: an allocation answered too late took nonces nobody uses; they are given back', { from: wallet.alloc_from, count: landed.count });
    }
    this.unanswered.length = 0;
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
        if (!isConditionalCheckFailed(error)) {
          this.unanswered.push({ token, count });
          throw error;
        }
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

  /**
   * Gives a nonce back to the wallet (the released set, taken first by the next allocation): only
   * a nonce whose slot was never written and never will be (no transaction of it was announced to
   * an owner, or the owner refused it). A written slot is never given back (LEDGER_SLOT): 'taken'.
   */
  async releaseNonce(address: string, nonce: number): Promise<'released' | 'taken'> {
    const slot = await this.records.getSlot(address, nonce);
    if (slot && slot.status !== 'released') return 'taken';
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
