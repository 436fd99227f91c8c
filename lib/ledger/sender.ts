import { Transaction, type JsonRpcProvider } from 'ethers';
import { lazy } from '../memo.js';
import { LedgerUnavailableError, sanitizeDetail } from './errors.js';
import { FeeOracle, gwei } from './fees.js';
import { LedgerNode } from './node.js';
import { NonceAllocator } from './nonces.js';
import { SharedExclusiveLock } from './pipeline.js';
import { ReceiptBook } from './receipts.js';
import { LedgerRecords } from './records.js';
import { Replacer } from './replacement.js';
import { ResendJob } from './resend.js';
import { Resumer } from './resume.js';
import { TxSigner } from './signing.js';
import { type SubmitParts, fillNonce, submitInOrder } from './submit.js';
import type {
  LedgerLog,
  LedgerReceipt,
  LedgerSenderOptions,
  LedgerSigner,
  LedgerSlot,
  LedgerTxKind,
  ResendReport,
  ResumableLedgerTx,
  ResumeResult,
  SubmitOptions,
  SubmitResult,
  Unsettled,
  WalletStatus,
} from './types.js';

export { createLedgerProvider } from './node.js';
export { gasLimitFor } from './fees.js';
export type {
  LedgerReceipt,
  LedgerSenderOptions,
  LedgerSigner,
  LedgerSlot,
  LedgerSlotKind,
  LedgerSlotStatus,
  LedgerTxKind,
  ReplacedTransaction,
  ResendReport,
  ResumableLedgerTx,
  ResumeResult,
  SignedLedgerTx,
  SubmitOptions,
  SubmitResult,
  WalletStatus,
} from './types.js';

/**
 * Sends the service's ledger transactions: one EIP-1559 (type 2) transaction per record, 0 value,
 * from the service wallet to itself, the record in the input data (see anchor-data.ts).
 *
 * Nonces. Every Lambda (and the local server) shares one wallet, so the nonce counter lives in
 * DynamoDB: the wallet item (pk `wallet#<address>`, sk 0) holds `next_nonce`, and one item per
 * signed transaction (pk `tx#<address>`, sk = nonce) keeps the raw signed bytes, written BEFORE the
 * broadcast, so that a transaction the node may have seen is never lost (the rebroadcast job and
 * the local replay re-send it byte for byte, hence with the same hash).
 *
 * Released nonces (no stuck gap). A transaction whose broadcast definitely failed (node
 * unreachable, or the node refused it) never entered any mempool; if its nonce were simply
 * abandoned, every later transaction of the wallet would wait behind the gap forever. So the
 * sender marks that slot `released` (dropping its raw bytes) and adds the nonce to the number set
 * `released` on the wallet item; the next allocation anywhere takes the LOWEST released nonce
 * (conditional DELETE from the set: exactly one claimant wins) before it touches the counter, and
 * overwrites the released slot (a conditional put that only replaces a missing or released slot).
 * A process that dies between allocating and persisting leaves a slot missing (or `released` but
 * out of the set); rebroadcastPending() fills such old gaps below the counter with an empty
 * "filler" self-transaction. Every slot write is conditional, so whoever loses a race for a slot
 * just allocates again: two transactions never share a nonce in our records.
 * An ambiguous failure (timeout, connection reset after the request went out) keeps the slot as
 * `signed` for rebroadcastPending(); submit() then returns with `broadcast: 'ambiguous'`.
 *
 * Allocation in batches. Submits of one sender that wait for a nonce at the same time share one
 * allocation: `SET next_nonce = next_nonce + :k` reserves k consecutive nonces for the k waiting submits (at most
 * 16). Nonces are never reserved ahead of demand: a nonce reserved and left unused is a gap that
 * stops every later transaction of the wallet, in every process, until the rebroadcast job fills
 * it (after `gapGraceMs`); a Lambda instance is frozen between requests and may never run again.
 * So a process that dies with reserved nonces it had not persisted leaves at most the nonces of
 * the submits it was running — the "missing slots" fillGaps fills, as for one nonce before.
 *
 * Ordering. Only the broadcast is serialised: signing, checking and persisting run side by side,
 * and a submit broadcasts once the submit holding the nonce below (when this process holds it)
 * has broadcast it or given it up (pipeline.ts), so the node sees this process's nonces in order
 * (Hardhat's automine refuses a nonce above the next one: "nonce too high"); receipts are awaited
 * in parallel. When the nonce below was given up (its broadcast definitely failed, so it is back in
 * the released set), the submit does not broadcast into that gap: it releases its own nonce and
 * takes the lowest released one instead. Between processes nonces can still arrive out of order by
 * a few milliseconds: "nonce too high" is retried with backoff for a short while.
 * rebroadcastPending() and replay() run alone: after the submits in flight have left the broadcast
 * stage, and before later ones enter it. Create one sender per wallet per process.
 *
 * Signature check. A KMS-backed signer's output is checked (signer recovered from the signature,
 * nonce, chain id); a local ethers wallet signs exactly the request it is given with the wallet's
 * own key, so recovering the signer (2–3 ms of CPU) is skipped for it.
 *
 * Fees (real networks). EIP-1559: the priority fee is max(configured floor, the node's
 * eth_maxPriorityFeePerGas) — Polygon PoS refuses tips under its minimum (the presets' 25 gwei) —
 * and maxFeePerGas = min(2 × base fee + priority fee, cap). Nothing is ever signed above the cap.
 *
 * Stuck transactions (rebroadcastPending with `replaceAfterMs`). A slot sent and still unmined
 * after that long is re-signed at the SAME nonce with the same data and both maxFeePerGas and
 * maxPriorityFeePerGas raised by at least `feeBumpPercent` (10 %: the txpool's replacement rule in
 * geth and Bor, which refuse a replacement that raises only one of them or by less). The slot keeps
 * every version: `tx_hash`/`raw` name the newest, `tx_hashes`/`raws` list all of them, oldest
 * first; the new version is written BEFORE its broadcast, like every transaction here. If the node
 * refuses the replacement, the slot goes back to the version it replaced. When the bump would cross
 * the cap, nothing is signed and a warn line with `alert: "ledger_fee_cap"` is logged.
 * Only one version can be mined (one nonce), but it may be ANY of them: the original can still land
 * after its replacement was broadcast. So receipts are looked up across the slot's versions
 * (waitForReceipt with the nonce), the slot then names the version that was mined, and
 * `onReplaced` lets the record naming the transaction (the evidence item) follow each replacement.
 */

const MAX_DATA_BYTES = 4096;

/**
 * The façade over the sender's modules (imports point downwards): records.ts (DynamoDB slots and
 * wallet item), node.ts (RPC, broadcast outcomes, receipts), fees.ts, signing.ts, nonces.ts
 * (allocation, release, resync), receipts.ts, replacement.ts, resend.ts (the re-send job and the
 * replay), resume.ts, submit.ts (the submit pipeline: sign → persist → broadcast in nonce order).
 */
export class LedgerSender {
  private readonly provider: JsonRpcProvider;
  private readonly signer: LedgerSigner;
  private readonly chainId: number;
  private readonly gapGraceMs: number;
  private readonly lowBalanceWei: bigint;
  private readonly replaceAfterMs: number | undefined;
  private readonly log: LedgerLog;

  private readonly records: LedgerRecords;
  private readonly node: LedgerNode;
  private readonly feeOracle: FeeOracle;
  private readonly txSigner: TxSigner;
  private readonly receipts: ReceiptBook;
  private readonly nonces: NonceAllocator;
  private readonly resendJob: ResendJob;
  private readonly resumer: Resumer;
  private readonly parts: SubmitParts;

  /** Submits shared, rebroadcastPending/replay/resume exclusive. */
  private readonly lock = new SharedExclusiveLock();
  private readonly unsettled: Unsettled = new Map();

  constructor(options: LedgerSenderOptions) {
    this.provider = options.provider;
    this.signer = options.signer;
    this.chainId = options.chainId;
    const priorityFee = gwei(options.priorityFeeGwei);
    const maxFeeCap = gwei(options.maxFeeGwei);
    if (maxFeeCap < priorityFee) throw new Error('maxFeeGwei must not be below priorityFeeGwei');
    const clock = options.clock ?? (() => new Date());
    this.gapGraceMs = options.gapGraceMs ?? 120_000;
    this.lowBalanceWei = options.lowBalanceWei ?? 10n ** 17n;
    this.replaceAfterMs = options.replaceAfterMs;
    const bump = options.feeBumpPercent ?? 10;
    if (!Number.isInteger(bump) || bump < 10) throw new Error('feeBumpPercent must be an integer ≥ 10 (nodes refuse smaller replacement bumps)');
    this.log = options.log ?? (() => undefined);
    const confirmationTag = options.confirmationTag ?? 'latest';

    this.records = new LedgerRecords(options.db, options.table, options.chainId, clock);
    this.node = new LedgerNode(options.provider, options.nonceRetryMs ?? 3000, confirmationTag);
    this.feeOracle = new FeeOracle(this.node, priorityFee, maxFeeCap, options.feeCacheMs ?? 5000, BigInt(bump), this.log);
    this.txSigner = new TxSigner(options.signer, options.chainId);
    const address = () => this.address();
    this.receipts = new ReceiptBook(this.node, this.records, address, options.pollingIntervalMs ?? options.provider.pollingInterval, this.log);
    this.nonces = new NonceAllocator(this.records, this.node, clock, this.log, (a, n) => fillNonce(this.parts, a, n));
    const { records, node, feeOracle, txSigner, receipts, nonces, unsettled, log } = this;
    this.parts = { records, node, feeOracle, txSigner, receipts, nonces, unsettled, log };
    const replacer = new Replacer(this.records, this.node, this.feeOracle, this.txSigner, this.receipts, clock, options.onReplaced, this.log);
    this.resendJob = new ResendJob(
      this.records,
      this.node,
      this.feeOracle,
      this.txSigner,
      this.nonces,
      this.receipts,
      replacer,
      this.lock,
      this.unsettled,
      { ready: () => this.ready(), address, chainId: options.chainId, lowBalanceWei: this.lowBalanceWei },
      clock,
      this.log,
    );
    this.resumer = new Resumer(this.records, this.node, this.nonces, this.receipts, this.unsettled, confirmationTag, this.log);
  }

  // ---------------------------------------------------------------- public API

  /** Lower-case address of the wallet (asks the signer once). */
  async address(): Promise<string> {
    return (await this.signer.getAddress()).toLowerCase();
  }

  /**
   * Signs, persists and broadcasts one transaction carrying `data` (0x hex or bytes).
   * Throws LedgerUnavailableError when nothing could be sent (the nonce is then released), or
   * whatever `options.beforePersist` threw.
   */
  async submit(data: string | Uint8Array, meta: { kind: LedgerTxKind; ref: string }, options: SubmitOptions = {}): Promise<SubmitResult> {
    if (meta.kind !== 'anchor' && meta.kind !== 'pq-key' && meta.kind !== 'wallet-funding') throw new TypeError(`unknown ledger transaction kind "${String(meta.kind)}"`);
    const transfer = options.transfer;
    if ((meta.kind === 'wallet-funding') !== (transfer !== undefined)) throw new TypeError('a value transfer is the kind wallet-funding, and only it');
    if (transfer && (!/^0x[0-9a-fA-F]{40}$/.test(transfer.to) || transfer.valueWei <= 0n)) throw new TypeError('a value transfer needs an address and a positive value');
    if (typeof meta.ref !== 'string' || meta.ref.length > 512) throw new TypeError('ref must be a string of at most 512 characters');
    const hex = typeof data === 'string' ? data.toLowerCase() : `0x${Buffer.from(data).toString('hex')}`;
    if (!/^0x([0-9a-f]{2})*$/.test(hex)) throw new TypeError('transaction data must be 0x-prefixed hex of whole bytes');
    if ((hex.length - 2) / 2 > MAX_DATA_BYTES) throw new TypeError(`transaction data is limited to ${MAX_DATA_BYTES} bytes`);

    const address = await this.ready();
    const fees = await this.feeOracle.fees(); // before taking a nonce: a node that is down costs no nonce here
    // A slot the node took stays `signed` until its receipt is recorded (signed → confirmed): no
    // write of its own for `sent` on the request path (decisions.md "Cost"). The re-send job sends
    // what is still unmined after gapGraceMs again (the node answers "already known") and marks it
    // `sent` then, which is what a fee bump measures from.
    return this.lock.runShared(() => submitInOrder(this.parts, address, hex, meta, fees, options.beforePersist, transfer));
  }

  /**
   * Finishes a transaction signed earlier (announced by submit's `beforePersist`) whose submit may
   * have died at any line, without ever signing another one. A raw transaction is only broadcast
   * while the slot of its nonce holds it:
   * - a version of it (the slot's tx_hashes after a replacement) has a receipt → 'mined';
   * - the slot holds it and is live → its current raw is re-sent → 'sent';
   * - the slot is missing (the submit died between beforePersist and the slot write) → written as
   *   submit would (conditional put), then broadcast → 'sent';
   * - the slot is released, holds another transaction or a conflict, or the chain's confirmed
   *   nonce passed it with no version mined → 'dead' (a new transaction may be signed; every 'dead'
   *   is final: the slot then never holds this transaction again).
   * Broadcasts run like the re-send job, alone (no submit of this process broadcasts meanwhile),
   * so this process's nonces still reach the node in order. "Nonce too high", "already known" and
   * unknown outcomes are 'sent': the slot is persisted and the re-send job finishes it.
   * Throws LedgerUnavailableError when the node or DynamoDB cannot be reached (never 'dead' then).
   */
  async resume(signed: ResumableLedgerTx): Promise<ResumeResult> {
    if (signed.kind !== 'anchor' && signed.kind !== 'pq-key') throw new TypeError(`unknown ledger transaction kind "${String(signed.kind)}"`);
    const address = await this.ready();
    const hash = signed.txHash.toLowerCase();
    let tx: Transaction;
    try {
      tx = Transaction.from(signed.raw);
    } catch {
      throw new TypeError('raw is not a signed transaction');
    }
    if (tx.hash?.toLowerCase() !== hash || tx.nonce !== signed.nonce || !tx.from || tx.chainId !== BigInt(this.chainId)) {
      throw new TypeError('raw is not the transaction named by txHash and nonce, on this chain');
    }
    // A transaction of a wallet this sender no longer is (signed before a wallet rotation, its
    // owner left unfinished) is decided on that wallet's slot and nonce: it is re-sent as the raw
    // bytes it is, or found mined, or dead; nothing is ever signed for it.
    const from = tx.from.toLowerCase();
    const tx1 = { nonce: signed.nonce, hash, raw: signed.raw.toLowerCase(), kind: signed.kind, ref: signed.ref };
    return this.lock.runExclusive(async () => {
      for (let round = 0; round < 5; round++) {
        const decided = await this.resumer.resumeOnce(from, tx1, from === address);
        if (decided) return decided;
      }
      throw new LedgerUnavailableError('The ledger transaction could not be resumed: its slot keeps changing', 'store');
    });
  }

  /**
   * Waits for the receipt of `txHash` (polling), updates its slot, and returns it; null when still
   * pending after `timeoutMs`. Transient RPC errors count as "not yet".
   *
   * With `nonce` (the record's tx_nonce), every version of that slot counts: a stuck transaction may
   * have been replaced, and whichever version was mined is returned (`receipt.txHash`). Without it
   * only `txHash` itself is polled (one DynamoDB read less: fine right after a submit).
   */
  async waitForReceipt(txHash: string, timeoutMs: number, nonce?: number): Promise<LedgerReceipt | null> {
    return this.receipts.waitForReceipt(txHash, timeoutMs, nonce);
  }


  /**
   * The job for pending or ambiguous transactions: fills abandoned nonce gaps, re-sends every slot
   * from the chain's confirmed nonce on in nonce order (raw bytes, so the same hashes), waits for
   * the receipts and brings the DynamoDB counter in line with the chain. Slots signed less than
   * `gapGraceMs` ago belong to submits still in flight and are left to them.
   */
  async rebroadcastPending(options: { receiptTimeoutMs?: number; gapGraceMs?: number; replaceAfterMs?: number } = {}): Promise<ResendReport> {
    const report = await this.resendJob.resend(options.gapGraceMs ?? this.gapGraceMs, options.receiptTimeoutMs ?? 30_000, options.replaceAfterMs ?? this.replaceAfterMs);
    await this.resendJob.logHealth().catch((error: unknown) => this.log('warn', 'ledger: health could not be read', { detail: sanitizeDetail(error) }));
    return report;
  }

  /**
   * For a fresh local node (Hardhat keeps nothing on disk): re-sends every persisted transaction
   * in nonce order into the node behind the provider and waits for them; the hashes are unchanged
   * because the signed bytes are. Run it at start, before serving submits.
   */
  async replay(options: { receiptTimeoutMs?: number } = {}): Promise<ResendReport> {
    return this.resendJob.resend(0, options.receiptTimeoutMs ?? 60_000);
  }

  /** Address, balance, nonces (chain and DynamoDB) and the number of transactions not yet mined. */
  async walletStatus(): Promise<WalletStatus> {
    const address = await this.address();
    const [balanceWei, nonceLatest, noncePending, wallet] = await Promise.all([
      this.node.rpc('read the wallet balance', () => this.provider.getBalance(address)),
      this.node.rpc('read the wallet nonce', () => this.node.nonceAt(address, 'latest')),
      this.node.rpc('read the wallet nonce', () => this.node.nonceAt(address, 'pending')),
      this.records.getWallet(address),
    ]);
    const slots = await this.records.listSlots(address, nonceLatest);
    return {
      address,
      chainId: this.chainId,
      balanceWei,
      lowBalance: balanceWei < this.lowBalanceWei,
      nonceLatest,
      noncePending,
      nextNonce: wallet?.next_nonce ?? null,
      releasedNonces: [...(wallet?.released ?? [])].sort((a, b) => a - b),
      pendingTxs: slots.filter((s) => s.status === 'signed' || s.status === 'sent').length,
    };
  }

  /** Persisted slots of the wallet from `fromNonce` on, in nonce order. */
  async listSlots(fromNonce = 0): Promise<LedgerSlot[]> {
    return this.records.listSlots(await this.address(), fromNonce);
  }

  // ---------------------------------------------------------------- internals

  /** The wallet address, after checking once that the node serves the configured chain (a failed check is tried again). */
  private readonly ready = lazy(async () => {
    const address = await this.address();
    const network = await this.node.rpc('read the chain id', () => this.provider.send('eth_chainId', []) as Promise<string>);
    if (Number(BigInt(network)) !== this.chainId) {
      throw new LedgerUnavailableError(
        `The ledger node serves chain ${Number(BigInt(network))}, the service is configured for chain ${this.chainId}`,
        'misconfigured',
      );
    }
    return address;
  });
}
