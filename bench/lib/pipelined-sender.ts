/**
 * A prototype of the ledger sender with a shorter serial section, to measure the design the
 * benchmark recommends for lib/ledger/sender.ts. Same records as LedgerSender (wallet item
 * `wallet#<address>`/0 with `next_nonce`, one slot `tx#<address>`/nonce written with the raw
 * bytes before the broadcast, then marked sent, then confirmed), same checks on the signed bytes;
 * what changes is what runs one at a time:
 *
 *   LedgerSender:  [nonce UpdateItem → sign → recover/check → slot PutItem → eth_sendRawTransaction]  serial
 *   prototype:     nonce from a block reserved by one UpdateItem (ADD 16) → sign, check and slot
 *                  PutItem in parallel → eth_sendRawTransaction in nonce order (each waits only for
 *                  the broadcast of the nonce before it)                                       serial: the broadcast only
 *
 * Nonces of a reserved block that a crashed process never used are gaps below the counter:
 * LedgerSender.rebroadcastPending() already fills such missing slots with empty transactions
 * (fillGaps), so the block reservation needs no new recovery path. Not prototyped here: the
 * released-nonce reuse and the error classification of LedgerSender (the benchmark has no failures).
 */
import { PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { getAddress, Transaction, type JsonRpcProvider, type TransactionRequest } from 'ethers';
import { gasLimitFor, type LedgerSigner } from '../../lib/ledger/sender.js';

interface Gate {
  done: Promise<void>;
  open(): void;
}
function gate(): Gate {
  let open!: () => void;
  const done = new Promise<void>((resolve) => (open = resolve));
  return { done, open };
}

export class PipelinedSenderPrototype {
  private block: { next: number; end: number } | null = null;
  private refill: Promise<void> | null = null;
  private readonly gates = new Map<number, Gate>();
  private fees: Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> | null = null;
  private address: Promise<string> | null = null;
  private readonly nonceByHash = new Map<string, number>();

  constructor(
    private readonly o: {
      provider: JsonRpcProvider;
      signer: LedgerSigner;
      db: DynamoDBDocumentClient;
      table: string;
      chainId: number;
      blockSize?: number;
      pollingIntervalMs?: number;
    },
  ) {}

  private wallet(): Promise<string> {
    this.address ??= this.o.signer.getAddress().then((a) => a.toLowerCase());
    return this.address;
  }

  private async allocate(address: string): Promise<number> {
    for (;;) {
      if (this.block && this.block.next < this.block.end) {
        const nonce = this.block.next++;
        this.gates.set(nonce, gate());
        return nonce;
      }
      this.refill ??= this.reserve(address).finally(() => (this.refill = null));
      await this.refill;
    }
  }

  private async reserve(address: string): Promise<void> {
    const size = this.o.blockSize ?? 16;
    const key = { pk: `wallet#${address}`, sk: 0 };
    try {
      const r = await this.o.db.send(
        new UpdateCommand({
          TableName: this.o.table,
          Key: key,
          UpdateExpression: 'ADD next_nonce :n SET allocated_at = :now',
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(released)',
          ExpressionAttributeValues: { ':n': size, ':now': new Date().toISOString() },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      const end = Number(r.Attributes?.next_nonce);
      this.block = { next: end - size, end };
    } catch (error) {
      if ((error as { name?: string }).name !== 'ConditionalCheckFailedException') throw error;
      // First use of the wallet: the counter starts at the chain's pending nonce.
      const pending = Number(BigInt((await this.o.provider.send('eth_getTransactionCount', [address, 'pending'])) as string));
      const now = new Date().toISOString();
      await this.o.db
        .send(
          new PutCommand({
            TableName: this.o.table,
            Item: { ...key, address, next_nonce: pending, created_at: now, updated_at: now },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        )
        .catch(() => undefined);
    }
  }

  private feeData() {
    this.fees ??= this.o.provider.getBlock('latest').then((b) => {
      const priority = 1_000_000_000n;
      return { maxFeePerGas: 2n * (b?.baseFeePerGas ?? 0n) + priority, maxPriorityFeePerGas: priority };
    });
    return this.fees;
  }

  async submit(data: Uint8Array, meta: { kind: 'anchor'; ref: string }): Promise<{ txHash: string; nonce: number }> {
    const address = await this.wallet();
    const fees = await this.feeData();
    const nonce = await this.allocate(address);
    const myGate = this.gates.get(nonce) as Gate;
    try {
      const hex = `0x${Buffer.from(data).toString('hex')}`;
      const request: TransactionRequest = {
        type: 2,
        chainId: BigInt(this.o.chainId),
        nonce,
        to: getAddress(address),
        value: 0n,
        data: hex,
        gasLimit: gasLimitFor(hex),
        ...fees,
      };
      const raw = await this.o.signer.signTransaction(request);
      const tx = Transaction.from(raw);
      if (tx.from?.toLowerCase() !== address || tx.nonce !== nonce || !tx.hash) throw new Error('signer produced another transaction');
      const txHash = tx.hash.toLowerCase();
      this.nonceByHash.set(txHash, nonce);
      const now = new Date().toISOString();
      await this.o.db.send(
        new PutCommand({
          TableName: this.o.table,
          Item: { pk: `tx#${address}`, sk: nonce, nonce, tx_hash: txHash, raw, kind: meta.kind, ref: meta.ref, status: 'signed', chain_id: this.o.chainId, created_at: now, updated_at: now },
          ConditionExpression: 'attribute_not_exists(pk) OR #s = :released',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: { ':released': 'released' },
        }),
      );
      // Only the broadcast is ordered: wait for the previous nonce's (when this process owns it).
      await this.gates.get(nonce - 1)?.done;
      await this.o.provider.send('eth_sendRawTransaction', [raw]);
      myGate.open();
      this.gates.delete(nonce - 1);
      await this.setStatus(address, nonce, txHash, 'sent');
      return { txHash, nonce };
    } finally {
      myGate.open();
    }
  }

  async waitForReceipt(txHash: string, timeoutMs: number): Promise<{ status: 'confirmed' | 'failed'; blockNumber: number } | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await this.o.provider.getTransactionReceipt(txHash);
      if (r && r.blockNumber !== null) {
        const status = r.status === 1 ? ('confirmed' as const) : ('failed' as const);
        const nonce = this.nonceByHash.get(txHash);
        if (nonce !== undefined) await this.setStatus(await this.wallet(), nonce, txHash, status, { block_number: r.blockNumber });
        this.nonceByHash.delete(txHash);
        return { status, blockNumber: r.blockNumber };
      }
      if (Date.now() >= deadline) return null;
      await new Promise((resolve) => setTimeout(resolve, this.o.pollingIntervalMs ?? 100));
    }
  }

  private async setStatus(address: string, nonce: number, txHash: string, status: string, extra: Record<string, unknown> = {}): Promise<void> {
    const names: Record<string, string> = { '#s': 'status' };
    const values: Record<string, unknown> = { ':s': status, ':h': txHash, ':now': new Date().toISOString() };
    const sets = ['#s = :s', 'updated_at = :now'];
    Object.entries(extra).forEach(([k, v], i) => {
      names[`#x${i}`] = k;
      values[`:x${i}`] = v;
      sets.push(`#x${i} = :x${i}`);
    });
    await this.o.db.send(
      new UpdateCommand({
        TableName: this.o.table,
        Key: { pk: `tx#${address}`, sk: nonce },
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: 'tx_hash = :h',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
  }
}
