import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { JsonRpcProvider, Network, Transaction, type TransactionRequest, type Wallet } from 'ethers';
import { encodeAnchorData } from '../../lib/ledger/anchor-data.js';
import { LedgerUnavailableError } from '../../lib/ledger/errors.js';
import { RpcReader } from '../../lib/ledger/rpc-reader.js';
import type { LedgerSender, LedgerSigner, LedgerSlot, SubmitResult } from '../../lib/ledger/sender.js';
import { startLocalChain, type LocalChain } from '../../lib/local/chain.js';
import { CHAIN_ID, FUNDS, freePort, makeSender, newWallet, randomHash, startStore, tempLog, type Store } from './helpers.js';

/**
 * The submit pipeline on a Hardhat node with automine (a nonce above the next one is refused, so a
 * gap is visible at once): nonces allocated in batches, signed and persisted side by side,
 * broadcast in nonce order; failures release nonces without leaving later transactions behind a
 * gap; a process that dies with reserved nonces leaves gaps the rebroadcast job fills.
 */

const wallets = Array.from({ length: 7 }, () => newWallet());
let store: Store;
let chain: LocalChain;
let port: number;
let reader: RpcReader;
const providers: JsonRpcProvider[] = [];

const chainOptions = () => ({
  port,
  blockTimeMs: 0,
  chainId: CHAIN_ID,
  accounts: wallets.map((w) => ({ privateKey: w.privateKey, balanceWei: FUNDS })),
  logFile: tempLog('pipelined'),
});

before(async () => {
  store = await startStore();
  port = await freePort();
  chain = await startLocalChain(chainOptions());
  reader = new RpcReader(chain.url);
});

after(async () => {
  for (const p of providers) p.destroy();
  await chain?.stop();
  await store?.stop();
});

/** A provider that logs broadcasts (by nonce) and nonce reads, keeps the node's refusals, and can interfere with a broadcast. */
class WatchedProvider extends JsonRpcProvider {
  /** Nonces of eth_sendRawTransaction calls, in call order. */
  readonly sends: number[] = [];
  /** `send <nonce>` and `count` (eth_getTransactionCount), in call order. */
  readonly events: string[] = [];
  /** Error messages of the node's refusals. */
  readonly refusals: string[] = [];
  /** Runs before the n-th broadcast (1-based) reaches the node; may throw instead. */
  beforeSend?: (call: number) => Promise<void> | void;

  override async send(method: string, params: unknown[] | Record<string, unknown>): Promise<unknown> {
    if (method === 'eth_getTransactionCount') this.events.push('count');
    if (method !== 'eth_sendRawTransaction') return super.send(method, params);
    const nonce = Transaction.from((params as string[])[0] as string).nonce;
    const call = this.sends.push(nonce);
    this.events.push(`send ${nonce}`);
    await this.beforeSend?.(call);
    try {
      return await super.send(method, params);
    } catch (error) {
      const e = error as { info?: { error?: { message?: unknown } } };
      this.refusals.push(String(e.info?.error?.message ?? error));
      throw error;
    }
  }
}

function watched(): WatchedProvider {
  const network = Network.from(CHAIN_ID);
  const p = new WatchedProvider(chain.url, network, { staticNetwork: network, pollingInterval: 50 });
  providers.push(p);
  return p;
}

/** The ledger table's client, counting the nonce reservations (ADD on the counter) sent through it. */
function countingDb(): { db: DynamoDBDocumentClient; reservations: () => number } {
  let count = 0;
  const db = {
    send(command: { input: { UpdateExpression?: string } }) {
      if (command.input.UpdateExpression?.startsWith('SET next_nonce')) count++;
      return store.db.send(command as never);
    },
  } as unknown as DynamoDBDocumentClient;
  return { db, reservations: () => count };
}

/** Signs its first `lives` transactions; every later signature never comes (the process died). */
class DyingSigner implements LedgerSigner {
  private calls = 0;
  constructor(
    private readonly wallet: Wallet,
    private readonly lives: number,
  ) {}
  getAddress(): Promise<string> {
    return this.wallet.getAddress();
  }
  signTransaction(tx: TransactionRequest): Promise<string> {
    if (++this.calls > this.lives) return new Promise<string>(() => undefined);
    return this.wallet.signTransaction(tx);
  }
}

const data = () => encodeAnchorData(randomHash(), randomHash());
const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
const sorted = (nonces: number[]) => [...nonces].sort((a, b) => a - b);

async function slot(wallet: Wallet, nonce: number): Promise<LedgerSlot | undefined> {
  const r = await store.db.send(
    new GetCommand({ TableName: store.tables.ledger, Key: { pk: `tx#${wallet.address.toLowerCase()}`, sk: nonce }, ConsistentRead: true }),
  );
  return r.Item as LedgerSlot | undefined;
}

async function counter(wallet: Wallet): Promise<number | undefined> {
  const r = await store.db.send(
    new GetCommand({ TableName: store.tables.ledger, Key: { pk: `wallet#${wallet.address.toLowerCase()}`, sk: 0 }, ConsistentRead: true }),
  );
  return r.Item?.next_nonce as number | undefined;
}

async function allConfirmed(sender: LedgerSender, results: SubmitResult[]): Promise<void> {
  const receipts = await Promise.all(results.map((r) => sender.waitForReceipt(r.txHash, 30_000)));
  assert.deepEqual(
    receipts.map((r) => r?.status),
    results.map(() => 'confirmed'),
    'every accepted transaction is mined (none waits behind a gap)',
  );
}

describe('pipelined submits (automine)', () => {
  it('gives 100 concurrent submits contiguous nonces from batched allocations, broadcasts them in nonce order, and all are mined', async () => {
    const wallet = wallets[0] as Wallet;
    const provider = watched();
    const { db, reservations } = countingDb();
    const sender = makeSender(store, provider, wallet, { db });
    const results = await Promise.all(range(0, 100).map((i) => sender.submit(data(), { kind: 'anchor', ref: `burst-${i}` })));

    assert.ok(results.every((r) => r.broadcast === 'accepted' && !r.reusedNonce));
    assert.deepEqual(sorted(results.map((r) => r.nonce)), range(0, 100), 'nonces 0…99, each once');
    assert.equal(new Set(results.map((r) => r.txHash)).size, 100);
    assert.deepEqual(provider.sends, range(0, 100), 'each nonce broadcast once, in nonce order');
    assert.deepEqual(provider.refusals, []);
    assert.ok(reservations() <= 25, `nonces were reserved in batches (${reservations()} reservations for 100 submits)`);
    assert.equal(await counter(wallet), 100, 'nothing reserved beyond the submits');

    await allConfirmed(sender, results);
    for (const r of results) {
      const item = await slot(wallet, r.nonce);
      assert.equal(item?.tx_hash, r.txHash, `slot ${r.nonce} holds the transaction its submit was told about`);
      assert.equal(item?.status, 'confirmed');
    }
    // The hash the sender computed without parsing (local key) is the transaction's hash.
    const first = results[0] as SubmitResult;
    const parsed = Transaction.from((await slot(wallet, first.nonce))?.raw as string);
    assert.equal(parsed.hash, first.txHash);
    assert.equal(parsed.from?.toLowerCase(), wallet.address.toLowerCase());

    const status = await sender.walletStatus();
    assert.equal(status.nonceLatest, 100);
    assert.equal(status.nextNonce, 100);
    assert.equal(status.pendingTxs, 0);
    assert.deepEqual(status.releasedNonces, []);
  });

  it('after a refused broadcast in the middle of a burst, that transaction keeps its nonce and goes out before the next one: all are mined, none twice, no nonce reused', async () => {
    const wallet = wallets[1] as Wallet;
    const provider = watched();
    provider.beforeSend = (call) => {
      if (call === 5) {
        throw Object.assign(new Error('could not coalesce error'), {
          code: 'UNKNOWN_ERROR',
          info: { error: { code: -32000, message: 'transaction rejected: injected fault' } },
        });
      }
    };
    const sender = makeSender(store, provider, wallet);
    const payloads = range(0, 20).map(() => data());
    const results = await Promise.all(payloads.map((d, i) => sender.submit(d, { kind: 'anchor', ref: `mid-${i}` })));

    const failed = results.filter((r) => r.broadcast === 'failed');
    assert.equal(failed.length, 1, 'the refused broadcast is reported, not thrown: its transaction is persisted and kept');
    assert.deepEqual(sorted(results.map((r) => r.nonce)), range(0, 20), 'nonces 0…19, each once');
    assert.ok(results.every((r) => !r.reusedNonce));
    // The next broadcast of this process sent the kept one first (in nonce order): every transaction is mined.
    await allConfirmed(sender, results);
    const status = await sender.walletStatus();
    assert.equal(status.nonceLatest, 20);
    assert.equal(status.nextNonce, 20);
    assert.deepEqual(status.releasedNonces, []);
    assert.equal(status.pendingTxs, 0);
    const kept = failed[0] as SubmitResult;
    assert.equal((await slot(wallet, kept.nonce))?.tx_hash, kept.txHash, 'the refused transaction itself was mined at its nonce');
  });

  it('lets two senders sharing the table and the wallet (two processes) interleave their allocations without ever sharing a nonce', async () => {
    const wallet = wallets[2] as Wallet;
    const a = makeSender(store, watched(), wallet);
    const b = makeSender(store, watched(), wallet);
    const mine = new Map<LedgerSender, SubmitResult[]>([
      [a, []],
      [b, []],
    ]);
    for (let wave = 0; wave < 3; wave++) {
      await Promise.all(
        [a, b].flatMap((s) =>
          range(0, 40).map(async (i) => {
            const r = await s.submit(data(), { kind: 'anchor', ref: `pair-${wave}-${i}` });
            mine.get(s)?.push(r);
          }),
        ),
      );
    }
    const all = [...(mine.get(a) ?? []), ...(mine.get(b) ?? [])];
    assert.equal(all.length, 240);
    assert.deepEqual(all.filter((r) => r.broadcast !== 'accepted' || r.reusedNonce).map((r) => ({ nonce: r.nonce, broadcast: r.broadcast, reused: r.reusedNonce })), []);
    assert.deepEqual(sorted(all.map((r) => r.nonce)), range(0, 240), 'every nonce used once, no gap');
    const runs = (rs: SubmitResult[]) => sorted(rs.map((r) => r.nonce)).filter((n, i, ns) => i === 0 || ns[i - 1] !== n - 1).length;
    assert.ok(runs(mine.get(a) ?? []) > 1 && runs(mine.get(b) ?? []) > 1, 'the two senders’ batches interleaved');

    await allConfirmed(a, all);
    for (const r of all) {
      assert.equal((await slot(wallet, r.nonce))?.tx_hash, r.txHash, `slot ${r.nonce}`);
      assert.equal((await reader.getTransaction(r.txHash))?.nonce, r.nonce, `on chain at ${r.nonce}`);
    }
    assert.equal(await reader.getTransactionCount(wallet.address.toLowerCase()), 240);
  });

  it('fills the nonces a dead process reserved and never used, so that later transactions get mined', async () => {
    const wallet = wallets[3] as Wallet;
    const dying = makeSender(store, watched(), new DyingSigner(wallet, 3));
    // 16 submits reserve nonces 0…15; the process signs three of them, then dies.
    const burst = range(0, 16).map((i) => dying.submit(data(), { kind: 'anchor', ref: `dying-${i}` }));
    const used = await Promise.all(burst.slice(0, 3));
    assert.deepEqual(used.map((r) => r.nonce), [0, 1, 2]);
    await allConfirmed(dying, used);
    assert.equal(await counter(wallet), 16, 'nonces 3…15 are reserved and will never be persisted');
    for (const n of range(3, 13)) assert.equal(await slot(wallet, n), undefined);

    // Another process: its transaction (nonce 16) cannot be mined behind the gap; it stays persisted.
    const other = makeSender(store, watched(), wallet, { nonceRetryMs: 300 });
    const behind = await other.submit(data(), { kind: 'anchor', ref: 'behind-the-gap' });
    assert.equal(behind.nonce, 16);
    assert.equal(behind.broadcast, 'failed');
    assert.equal(await reader.getTransactionCount(wallet.address.toLowerCase()), 3);
    assert.equal((await slot(wallet, 16))?.status, 'signed', 'kept for the re-send job: its nonce is its own');

    // The job leaves young gaps alone (their submits may still be running)…
    const early = await other.rebroadcastPending({ receiptTimeoutMs: 2000 });
    assert.equal(early.filled, 0);
    assert.equal(await reader.getTransactionCount(wallet.address.toLowerCase()), 3);

    // …and fills them once they are older than the grace period, sending the fillers and then the
    // kept transaction in the same run.
    const job = makeSender(store, watched(), wallet, { clock: () => new Date(Date.now() + 3 * 60_000) });
    const report = await job.rebroadcastPending({ receiptTimeoutMs: 10_000 });
    assert.equal(report.filled, 13);
    assert.equal(report.resent, 14);
    assert.equal(report.confirmed, 14);
    assert.equal(report.rejected + report.blocked + report.pending, 0);
    for (const n of range(3, 13)) {
      const filler = await slot(wallet, n);
      assert.equal(filler?.kind, 'filler');
      assert.equal(filler?.status, 'confirmed');
    }
    assert.equal((await other.waitForReceipt(behind.txHash, 10_000))?.status, 'confirmed', 'the transaction behind the gap is mined with its own hash');
    const status = await other.walletStatus();
    assert.equal(status.nonceLatest, 17);
    assert.equal(status.nextNonce, 17);
    assert.deepEqual(status.releasedNonces, []);
    assert.equal(status.pendingTxs, 0);
  });

  it('runs rebroadcastPending after the submits in flight have broadcast and before later ones do', async () => {
    const wallet = wallets[4] as Wallet;
    const provider = watched();
    const sender = makeSender(store, provider, wallet);
    await allConfirmed(sender, [await sender.submit(data(), { kind: 'anchor', ref: 'warm' })]);

    let job: Promise<unknown> | undefined;
    let later: Promise<SubmitResult[]> | undefined;
    let queuedAt = -1;
    provider.beforeSend = (call) => {
      if (call === 10) {
        // Queued while submits are between allocation and broadcast; more submits arrive just after it.
        queuedAt = provider.events.length;
        job = sender.rebroadcastPending({ receiptTimeoutMs: 5000 });
        later = new Promise((resolve) => setImmediate(resolve)).then(() =>
          Promise.all(range(0, 20).map((i) => sender.submit(data(), { kind: 'anchor', ref: `later-${i}` }))),
        );
      }
    };
    const first = await Promise.all(range(0, 30).map((i) => sender.submit(data(), { kind: 'anchor', ref: `first-${i}` })));
    assert.ok(job && later);
    const [report, second] = await Promise.all([job, later]);
    provider.beforeSend = undefined;

    assert.deepEqual(sorted(first.map((r) => r.nonce)), range(1, 30));
    assert.deepEqual(sorted(second.map((r) => r.nonce)), range(31, 20));
    const jobStart = provider.events.indexOf('count', queuedAt);
    assert.ok(queuedAt > 0 && jobStart > queuedAt, 'the job read the chain nonce');
    for (const n of range(0, 31)) assert.ok(provider.events.indexOf(`send ${n}`) < jobStart, `nonce ${n} was broadcast before the job ran`);
    for (const n of range(31, 20)) assert.ok(provider.events.indexOf(`send ${n}`) > jobStart, `nonce ${n} was broadcast after the job started`);
    assert.equal((report as { rejected: number }).rejected, 0);
    assert.deepEqual(provider.refusals, []);
    await allConfirmed(sender, [...first, ...second]);
  });

  it('checks a non-local signer’s output: a signature from another key is refused and its nonce reused', async () => {
    const wallet = wallets[5] as Wallet;
    const provider = watched();
    const impostor = newWallet();
    const wrongKey: LedgerSigner = { getAddress: () => wallet.getAddress(), signTransaction: (tx) => impostor.signTransaction(tx) };
    const bad = makeSender(store, provider, wrongKey);
    await assert.rejects(
      bad.submit(data(), { kind: 'anchor', ref: 'impostor' }),
      (e: unknown) => e instanceof LedgerUnavailableError && e.reason === 'misconfigured',
    );
    assert.deepEqual(provider.sends, [], 'nothing was broadcast');
    const good = makeSender(store, provider, wallet);
    const sent = await good.submit(data(), { kind: 'anchor', ref: 'genuine' });
    assert.equal(sent.nonce, 0);
    assert.equal(sent.reusedNonce, true);
    await allConfirmed(good, [sent]);
  });

  it('when the node stops in the middle of a burst, keeps every transaction not sent, and a fresh node + replay mines them all with their nonces and hashes', async () => {
    const wallet = wallets[6] as Wallet;
    const provider = watched();
    const sender = makeSender(store, provider, wallet, { feeCacheMs: 600_000 });
    await allConfirmed(sender, [await sender.submit(data(), { kind: 'anchor', ref: 'warm' })]);

    const warmSends = provider.sends.length;
    provider.beforeSend = async (call) => {
      if (call === warmSends + 5) await chain.stop(); // four broadcasts of the burst went through, the fifth finds the node gone
    };
    const payloads = range(0, 12).map(() => data());
    const results = await Promise.all(payloads.map((d, i) => sender.submit(d, { kind: 'anchor', ref: `down-${i}` })));
    provider.beforeSend = undefined;
    assert.deepEqual(sorted(results.filter((r) => r.broadcast === 'accepted').map((r) => r.nonce)), [1, 2, 3, 4]);
    const kept = results.filter((r) => r.broadcast === 'failed');
    assert.deepEqual(sorted(kept.map((r) => r.nonce)), range(5, 8), 'the eight not sent keep nonces 5…12');
    for (const r of kept) {
      const item = await slot(wallet, r.nonce);
      assert.equal(item?.status, 'signed', `slot ${r.nonce}`);
      assert.equal(item?.tx_hash, r.txHash);
    }
    assert.deepEqual((await sender.walletStatus().catch(() => null))?.releasedNonces ?? [], []);

    chain = await startLocalChain(chainOptions());
    const replayed = await sender.replay({ receiptTimeoutMs: 30_000 });
    assert.equal(replayed.resent, 13, 'the warm one, the four sent and the eight kept');
    assert.equal(replayed.confirmed, 13);
    assert.equal(replayed.filled + replayed.rejected + replayed.pending, 0);
    for (const r of kept) assert.equal((await sender.waitForReceipt(r.txHash, 10_000))?.status, 'confirmed');
    const status = await sender.walletStatus();
    assert.equal(status.nonceLatest, 13);
    assert.equal(status.nextNonce, 13);
    assert.deepEqual(status.releasedNonces, []);
    assert.equal(status.pendingTxs, 0);
  });
});
