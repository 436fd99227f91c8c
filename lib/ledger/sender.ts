import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  BaseWallet,
  FetchRequest,
  JsonRpcProvider,
  Network,
  Transaction,
  formatEther,
  getAddress,
  keccak256,
  parseUnits,
  type TransactionRequest,
} from 'ethers';
import { isConditionalCheckFailed } from '../store/dynamo.js';
import { LedgerUnavailableError, sanitizeDetail } from './errors.js';
import { BroadcastOrder, SharedExclusiveLock, type BroadcastState, type BroadcastTicket } from './pipeline.js';

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
 * allocation: `ADD next_nonce :k` reserves k consecutive nonces for the k waiting submits (at most
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

/** What the sender needs from a signer: a local ethers Wallet, or a KMS-backed AbstractSigner. */
export interface LedgerSigner {
  getAddress(): Promise<string>;
  signTransaction(tx: TransactionRequest): Promise<string>;
}

export type LedgerTxKind = 'anchor' | 'pq-key';
export type LedgerSlotKind = LedgerTxKind | 'filler';
export type LedgerSlotStatus = 'signed' | 'sent' | 'confirmed' | 'failed' | 'released' | 'conflict';

/** One persisted transaction slot (pk `tx#<address>`, sk = nonce). */
export interface LedgerSlot {
  pk: string;
  sk: number;
  nonce: number;
  tx_hash: string;
  /** The signed transaction, 0x hex; removed when the slot is released. */
  raw?: string;
  kind: LedgerSlotKind;
  ref: string;
  status: LedgerSlotStatus;
  chain_id: number;
  created_at: string;
  updated_at: string;
  sent_at?: string;
  released_at?: string;
  block_number?: number;
  block_hash?: string;
  gas_used?: number;
  /** After a replacement: every transaction signed for this nonce, oldest first (tx_hash is one of them). */
  tx_hashes?: string[];
  /** Their raw bytes, in the same order (the one mined may be an earlier version). */
  raws?: string[];
  /** When the last replacement was signed (the age of a replaced slot counts from here). */
  replaced_at?: string;
}

/** What `onReplaced` hears after a stuck transaction was re-signed with higher fees and broadcast. */
export interface ReplacedTransaction {
  kind: LedgerSlotKind;
  ref: string;
  nonce: number;
  /** The version the record named so far. */
  previousTxHash: string;
  /** The new version. */
  txHash: string;
  /** Every version, oldest first. */
  txHashes: string[];
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

interface WalletItem {
  pk: string;
  sk: 0;
  address: string;
  next_nonce: number;
  released?: Set<number>;
  allocated_at?: string;
  created_at: string;
  updated_at: string;
}

export interface LedgerSenderOptions {
  /** An ethers JsonRpcProvider with a static network (see createLedgerProvider). */
  provider: JsonRpcProvider;
  signer: LedgerSigner;
  db: DynamoDBDocumentClient;
  /** The ledger table's name. */
  table: string;
  chainId: number;
  priorityFeeGwei: number;
  /** Cap of maxFeePerGas. */
  maxFeeGwei: number;
  clock?: () => Date;
  /** How long fee data (the latest base fee) is reused; default 5000 ms. */
  feeCacheMs?: number;
  /** Receipt polling; default the provider's pollingInterval. */
  pollingIntervalMs?: number;
  /** 'finalized': a receipt counts once its block is finalized (Polygon); default 'latest'. */
  confirmationTag?: 'latest' | 'finalized';
  /** How long "nonce too high" (another process's lower nonce not there yet) is retried; default 3000 ms. */
  nonceRetryMs?: number;
  /** Age after which rebroadcastPending() treats a missing or orphaned slot as abandoned; default 120 s. */
  gapGraceMs?: number;
  /** walletStatus().lowBalance is true below this; default 0.1 native coin. */
  lowBalanceWei?: bigint;
  /**
   * rebroadcastPending() replaces a slot sent (or last replaced) at least this long ago and still
   * unmined; default undefined: never.
   */
  replaceAfterMs?: number;
  /** Minimum raise of both fees of a replacement, percent; default (and minimum) 10. */
  feeBumpPercent?: number;
  /** Called after a replacement was broadcast (failures are logged, never thrown). */
  onReplaced?: (replaced: ReplacedTransaction) => Promise<void>;
  /** Operational events (never secrets). */
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
}

export interface SubmitResult {
  txHash: string;
  nonce: number;
  /** Lower-case address of the wallet. */
  from: string;
  /** 'accepted': the node took it. 'ambiguous': it may have; the slot stays for rebroadcastPending(). */
  broadcast: 'accepted' | 'ambiguous';
  /** True when the nonce was a released one, reused. */
  reusedNonce: boolean;
}

/** A transaction as signed by submit(), announced to `beforePersist` (and later given to resume()). */
export interface SignedLedgerTx {
  nonce: number;
  /** Lower-case 0x hash. */
  txHash: string;
  /** The signed transaction, 0x hex. */
  raw: string;
  /** Lower-case address of the wallet. */
  from: string;
}

export interface SubmitOptions {
  /**
   * Called after each signature and BEFORE its slot is persisted and broadcast (submit may sign
   * again at another nonce after giving one back: each new signature is announced again). Lets the
   * caller store the raw transaction first, so that a crash at any later line can be finished with
   * resume() instead of signing a second transaction. If it throws, the nonce is given back (nothing
   * persisted, nothing broadcast) and submit rethrows that error unchanged.
   */
  beforePersist?: (signed: SignedLedgerTx) => Promise<void>;
}

/** What resume() needs: a transaction signed earlier by submit() (see SubmitOptions.beforePersist). */
export interface ResumableLedgerTx {
  nonce: number;
  txHash: string;
  raw: string;
  kind: LedgerTxKind;
  ref: string;
}

/**
 * What resume() found. 'mined': a version of the transaction has a (settled) receipt. 'sent': the
 * slot holds it and it is with the node, or may be (the re-send job finishes it); `txHash` is the
 * version the slot names now. 'dead': it can never be mined; a new transaction may be signed.
 */
export type ResumeResult = { outcome: 'mined'; receipt: LedgerReceipt } | { outcome: 'sent'; txHash: string } | { outcome: 'dead' };

export interface LedgerReceipt {
  status: 'confirmed' | 'failed';
  blockNumber: number;
  blockHash: string;
  gasUsed: bigint;
  /**
   * The transaction mined: the one asked for or, for a replaced slot, another version of it.
   * Always set by LedgerSender (optional only for stand-in senders written before replacements).
   */
  txHash?: string;
  /** Every version of a replaced slot, oldest first (absent when it was never replaced). */
  txHashes?: string[];
}

/** What rebroadcastPending() and replay() did. */
export interface ResendReport {
  /** The chain's confirmed nonce of the wallet when the run started: slots from here on were examined. */
  fromNonce: number;
  /** Slots at or above fromNonce. */
  slots: number;
  /** Gaps filled with an empty self-transaction. */
  filled: number;
  /** Raw transactions the node accepted now. */
  resent: number;
  /** Raw transactions the node already had. */
  alreadyKnown: number;
  /** Sends whose outcome is unknown (timeout). */
  ambiguous: number;
  /** Refused by the node (the first refusal stops the run: later nonces could not be mined). */
  rejected: number;
  /** Not sent because an earlier nonce was refused. */
  blocked: number;
  confirmed: number;
  failed: number;
  /** Still without a receipt after the timeout. */
  pending: number;
  /** Stuck transactions re-signed with higher fees and broadcast. */
  replaced: number;
  /** Stuck transactions that could not be replaced: the bump would cross the fee cap, or the node refused it. */
  notReplaced: number;
  /** The DynamoDB counter after the run. */
  nextNonce: number | null;
}

export interface WalletStatus {
  address: string;
  chainId: number;
  balanceWei: bigint;
  lowBalance: boolean;
  /** Transactions of the wallet mined so far (= next nonce the chain will mine). */
  nonceLatest: number;
  /** Including the node's mempool. */
  noncePending: number;
  /** The DynamoDB counter (null before the first transaction). */
  nextNonce: number | null;
  releasedNonces: number[];
  /** Slots signed or sent and not yet mined. */
  pendingTxs: number;
}

/** A JsonRpcProvider that never probes the network (no endless retry when the node is down), with a request timeout. */
export function createLedgerProvider(options: {
  rpcUrl: string;
  chainId: number;
  pollingIntervalMs: number;
  requestTimeoutMs?: number;
}): JsonRpcProvider {
  const request = new FetchRequest(options.rpcUrl);
  request.timeout = options.requestTimeoutMs ?? 10_000;
  const network = Network.from(options.chainId);
  return new JsonRpcProvider(request, network, {
    staticNetwork: network,
    pollingInterval: options.pollingIntervalMs,
    batchStallTime: 2,
  });
}

/**
 * Gas limit of a 0-value transaction carrying `data`: 21000 plus calldata, where calldata costs the
 * larger of the classic price (4 per zero byte, 16 per other byte) and the EIP-7623 floor
 * (10 per token, a token being a zero byte or a quarter of another byte), plus 10 %.
 */
export function gasLimitFor(data: string): bigint {
  const bytes = Buffer.from(data.startsWith('0x') ? data.slice(2) : data, 'hex');
  let zero = 0;
  for (const b of bytes) if (b === 0) zero++;
  const nonZero = bytes.length - zero;
  const standard = 21_000 + 4 * zero + 16 * nonZero;
  const floor = 21_000 + 10 * (zero + 4 * nonZero);
  return BigInt(Math.ceil(Math.max(standard, floor) * 1.1));
}

const LIVE: ReadonlySet<LedgerSlotStatus> = new Set(['signed', 'sent', 'confirmed', 'failed']);
const MAX_DATA_BYTES = 4096;
/** Most nonces one allocation reserves (one per submit waiting for a nonce). */
const NONCE_BATCH_MAX = 16;

interface NonceAllocation {
  nonce: number;
  reused: boolean;
  ticket: BroadcastTicket;
}

function gwei(value: number): bigint {
  return parseUnits(value.toFixed(9), 'gwei');
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

type BroadcastOutcome =
  | { kind: 'accepted'; known: boolean }
  | { kind: 'ambiguous'; detail: string }
  | { kind: 'conflict'; detail: string }
  | { kind: 'unreachable'; detail: string }
  | { kind: 'rejected'; detail: string; tooHigh?: boolean };

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

/** Sorts a failed eth_sendRawTransaction into what it means for the slot. */
function classifySendError(error: unknown): 'nonce_too_high' | 'nonce_too_low' | 'known' | 'rejected' | 'unreachable' | 'ambiguous' {
  const e = error as { code?: unknown; info?: { error?: { message?: unknown } }; error?: { message?: unknown }; cause?: { code?: unknown } };
  const rpcMessage = [e.info?.error?.message, e.error?.message].find((m): m is string => typeof m === 'string') ?? '';
  const code = typeof e.code === 'string' ? e.code : '';
  if (/nonce too high/i.test(rpcMessage)) return 'nonce_too_high';
  if (/already known|known transaction|already imported|already in (the )?mempool/i.test(rpcMessage)) return 'known';
  if (code === 'NONCE_EXPIRED' || /nonce too low|nonce has already been used/i.test(rpcMessage)) return 'nonce_too_low';
  if (rpcMessage !== '' || code === 'INSUFFICIENT_FUNDS' || code === 'REPLACEMENT_UNDERPRICED') return 'rejected';
  const sysCode = code || (typeof e.cause?.code === 'string' ? e.cause.code : '');
  if (UNREACHABLE_CODES.has(sysCode)) return 'unreachable';
  return 'ambiguous';
}

export class LedgerSender {
  private readonly provider: JsonRpcProvider;
  private readonly signer: LedgerSigner;
  private readonly db: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly chainId: number;
  private readonly priorityFee: bigint;
  private readonly maxFeeCap: bigint;
  private readonly clock: () => Date;
  private readonly feeCacheMs: number;
  private readonly pollingIntervalMs: number;
  private readonly confirmationTag: 'latest' | 'finalized';
  private readonly nonceRetryMs: number;
  private readonly gapGraceMs: number;
  private readonly lowBalanceWei: bigint;
  private readonly replaceAfterMs: number | undefined;
  private readonly feeBumpPercent: bigint;
  private readonly onReplaced: LedgerSenderOptions['onReplaced'];
  private readonly log: NonNullable<LedgerSenderOptions['log']>;

  /** Submits shared, rebroadcastPending/replay exclusive. */
  private readonly lock = new SharedExclusiveLock();
  /** Which broadcast waits for which (nonces this process holds). */
  private readonly order = new BroadcastOrder();
  /** Submits waiting for a nonce: served together by one allocation. */
  private readonly nonceQueue: { resolve: (a: NonceAllocation) => void; reject: (error: unknown) => void }[] = [];
  private allocating = false;
  /** True for a local ethers wallet whose signatures need no recovery check (see the class comment). */
  private readonly localKey: boolean;
  private checksummed: string | null = null;
  private readyPromise: Promise<string> | null = null;
  private feeCache: { at: number; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | null = null;
  private feeInFlight: Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> | null = null;
  /** txHash → nonce of transactions this sender signed and not yet settled (to update the slot on a receipt). */
  private readonly nonceByHash = new Map<string, number>();
  /** This sender's ambiguous broadcasts, by nonce: re-sent before its next broadcast so they cannot block it. */
  private readonly unsettled = new Map<number, { raw: string; txHash: string }>();
  /**
   * Nonces this process allocated and could neither persist+broadcast nor give back (DynamoDB failed
   * between the allocation and the release), with the transaction signed for them if any. We never
   * broadcast them, so they are released before the next allocation, at once when the store is
   * back, instead of waiting `gapGraceMs` for the re-send job to fill them (a grace meant for gaps
   * of other processes, whose submits may still be in flight).
   */
  private readonly lost = new Map<number, string | null>();
  private recovering: Promise<void> | null = null;

  constructor(options: LedgerSenderOptions) {
    this.provider = options.provider;
    this.signer = options.signer;
    this.db = options.db;
    this.table = options.table;
    this.chainId = options.chainId;
    this.priorityFee = gwei(options.priorityFeeGwei);
    this.maxFeeCap = gwei(options.maxFeeGwei);
    if (this.maxFeeCap < this.priorityFee) throw new Error('maxFeeGwei must not be below priorityFeeGwei');
    this.clock = options.clock ?? (() => new Date());
    this.feeCacheMs = options.feeCacheMs ?? 5000;
    this.pollingIntervalMs = options.pollingIntervalMs ?? options.provider.pollingInterval;
    this.confirmationTag = options.confirmationTag ?? 'latest';
    this.nonceRetryMs = options.nonceRetryMs ?? 3000;
    this.gapGraceMs = options.gapGraceMs ?? 120_000;
    this.lowBalanceWei = options.lowBalanceWei ?? 10n ** 17n;
    this.replaceAfterMs = options.replaceAfterMs;
    const bump = options.feeBumpPercent ?? 10;
    if (!Number.isInteger(bump) || bump < 10) throw new Error('feeBumpPercent must be an integer ≥ 10 (nodes refuse smaller replacement bumps)');
    this.feeBumpPercent = BigInt(bump);
    this.onReplaced = options.onReplaced;
    this.log = options.log ?? (() => undefined);
    // Only ethers' own signTransaction: it signs the request as given, with the wallet's key.
    this.localKey = this.signer instanceof BaseWallet && this.signer.signTransaction === BaseWallet.prototype.signTransaction;
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
    if (meta.kind !== 'anchor' && meta.kind !== 'pq-key') throw new TypeError(`unknown ledger transaction kind "${String(meta.kind)}"`);
    if (typeof meta.ref !== 'string' || meta.ref.length > 512) throw new TypeError('ref must be a string of at most 512 characters');
    const hex = typeof data === 'string' ? data.toLowerCase() : `0x${Buffer.from(data).toString('hex')}`;
    if (!/^0x([0-9a-f]{2})*$/.test(hex)) throw new TypeError('transaction data must be 0x-prefixed hex of whole bytes');
    if ((hex.length - 2) / 2 > MAX_DATA_BYTES) throw new TypeError(`transaction data is limited to ${MAX_DATA_BYTES} bytes`);

    const address = await this.ready();
    const fees = await this.fees(); // before taking a nonce: a node that is down costs no nonce here
    const result = await this.lock.runShared(() => this.submitInOrder(address, hex, meta, fees, options.beforePersist));
    if (result.broadcast === 'accepted') {
      await this.markSent(result.nonce, result.txHash).catch((error: unknown) =>
        this.log('warn', 'ledger: could not mark a slot as sent (the rebroadcast job will)', { nonce: result.nonce, detail: sanitizeDetail(error) }),
      );
    }
    return result;
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
    if (tx.hash?.toLowerCase() !== hash || tx.nonce !== signed.nonce || tx.from?.toLowerCase() !== address || tx.chainId !== BigInt(this.chainId)) {
      throw new TypeError('raw is not the transaction named by txHash and nonce, from this wallet on this chain');
    }
    const tx1 = { nonce: signed.nonce, hash, raw: signed.raw.toLowerCase(), kind: signed.kind, ref: signed.ref };
    return this.lock.runExclusive(async () => {
      for (let round = 0; round < 5; round++) {
        const decided = await this.resumeOnce(address, tx1);
        if (decided) return decided;
      }
      throw new LedgerUnavailableError('The ledger transaction could not be resumed: its slot keeps changing', 'store');
    });
  }

  /** One decision of resume() from a fresh read; null when a conditional write lost and it must read again. */
  private async resumeOnce(
    address: string,
    tx: { nonce: number; hash: string; raw: string; kind: LedgerTxKind; ref: string },
  ): Promise<ResumeResult | null> {
    // The chain's nonce BEFORE the receipts: a version mined after this read still shows its receipt
    // below, so "nonce passed and no receipt" can only mean another transaction took the nonce.
    const latest = await this.rpc('read the wallet nonce', () => this.nonceAt(address, 'latest'));
    const slot = await this.getSlot(address, tx.nonce);
    const ours = slot !== null && (slot.tx_hash === tx.hash || (slot.tx_hashes?.includes(tx.hash) ?? false));
    const hashes = ours && slot ? [...new Set([tx.hash, slot.tx_hash, ...(slot.tx_hashes ?? [])])] : [tx.hash];
    const settled = await this.settledOrMined(hashes, ours ? slot : null);
    if (settled) return settled;
    if (latest > tx.nonce) {
      if (ours && slot && LIVE.has(slot.status)) await this.setSlotStatus(address, tx.nonce, slot.tx_hash, 'conflict', [...LIVE]);
      return { outcome: 'dead' };
    }

    if (!slot) {
      const wallet = await this.getWallet(address);
      if (wallet?.released?.has(tx.nonce)) {
        // Given back by its submit (beforePersist or the slot write failed): never broadcast by us.
        // A released slot naming it keeps that answer final (an allocation may overwrite it).
        const tombstone = await this.putSlot(address, tx.nonce, { txHash: tx.hash }, tx.kind, tx.ref, 'released', 'missing');
        return tombstone ? { outcome: 'dead' } : null;
      }
      if (!(await this.putSlot(address, tx.nonce, { txHash: tx.hash, raw: tx.raw }, tx.kind, tx.ref, 'signed', 'missing'))) return null;
      return this.resumeBroadcast(address, tx.nonce, { tx_hash: tx.hash, raw: tx.raw, status: 'signed' }, hashes);
    }
    if (!ours || !LIVE.has(slot.status) || !slot.raw) return { outcome: 'dead' };
    return this.resumeBroadcast(address, tx.nonce, { tx_hash: slot.tx_hash, raw: slot.raw, status: slot.status }, hashes);
  }

  /** 'mined' when a version has a settled receipt (recorded on the slot), 'sent' when one is mined but not yet settled. */
  private async settledOrMined(hashes: string[], slot: LedgerSlot | null): Promise<ResumeResult | null> {
    const found = await this.rpc('read a receipt', () => this.firstSettled(hashes));
    if (found) {
      const txHashes = slot?.tx_hashes;
      const receipt: LedgerReceipt = { ...found.receipt, ...(txHashes && txHashes.length > 1 ? { txHashes: [...txHashes] } : {}) };
      await this.recordReceipt(found.hash, receipt, slot).catch((error: unknown) =>
        this.log('warn', 'ledger: could not record a receipt', { txHash: found.hash, detail: sanitizeDetail(error) }),
      );
      return { outcome: 'mined', receipt };
    }
    if (this.confirmationTag === 'latest') return null;
    // 'finalized': mined but not final yet is not dead.
    const receipts = await this.rpc('read a receipt', () => Promise.all(hashes.map((h) => this.provider.getTransactionReceipt(h))));
    const i = receipts.findIndex((r) => r !== null && r.blockNumber !== null);
    return i >= 0 ? { outcome: 'sent', txHash: hashes[i] as string } : null;
  }

  /** The broadcast step of resume(): the slot holds `current` (a version of the transaction). */
  private async resumeBroadcast(
    address: string,
    nonce: number,
    current: { tx_hash: string; raw: string; status: LedgerSlotStatus },
    hashes: string[],
  ): Promise<ResumeResult | null> {
    const sent: ResumeResult = { outcome: 'sent', txHash: current.tx_hash };
    const outcome = await this.broadcast(current.raw, current.tx_hash);
    switch (outcome.kind) {
      case 'accepted':
        this.nonceByHash.set(current.tx_hash, nonce);
        this.unsettled.delete(nonce);
        if (current.status === 'signed') await this.setSlotStatus(address, nonce, current.tx_hash, 'sent', ['signed']);
        return sent;
      case 'ambiguous':
        this.nonceByHash.set(current.tx_hash, nonce);
        return sent;
      case 'unreachable':
        throw new LedgerUnavailableError('The ledger node is unreachable: the transaction was not re-sent', 'unreachable', outcome.detail);
      case 'conflict': {
        // Nonce too low and the node does not know any version: mined already, or never minable.
        const settled = await this.settledOrMined(hashes, null);
        if (settled) return settled;
        await this.setSlotStatus(address, nonce, current.tx_hash, 'conflict', [...LIVE]);
        this.log('warn', 'ledger: a resumed transaction lost its nonce to a transaction this service did not sign', { nonce, txHash: current.tx_hash });
        return { outcome: 'dead' };
      }
      case 'rejected': {
        if (outcome.tooHigh) return sent; // a lower nonce is not there yet: the re-send job sends it in order
        // Refused: it never entered a mempool. Given back as submit gives back a refused transaction.
        const released = await this.releaseNonce(address, nonce, current.tx_hash);
        if (released === 'ours-sent') return sent;
        return released === 'released' ? { outcome: 'dead' } : null;
      }
    }
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
    const hash = txHash.toLowerCase();
    const deadline = Date.now() + timeoutMs;
    let versions: { hashes: string[]; slot: LedgerSlot | null } | null = nonce === undefined ? { hashes: [hash], slot: null } : null;
    for (;;) {
      versions ??= await this.versionsOf(hash, nonce ?? -1).catch(() => null);
      const found = await this.firstSettled(versions?.hashes ?? [hash]).catch(() => null);
      if (found) {
        const txHashes = versions?.slot?.tx_hashes;
        const receipt: LedgerReceipt = { ...found.receipt, ...(txHashes && txHashes.length > 1 ? { txHashes: [...txHashes] } : {}) };
        await this.recordReceipt(found.hash, receipt, versions?.slot ?? null).catch((error: unknown) =>
          this.log('warn', 'ledger: could not record a receipt', { txHash: found.hash, detail: sanitizeDetail(error) }),
        );
        return receipt;
      }
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await sleep(Math.min(this.pollingIntervalMs, left));
    }
  }

  /**
   * The job for pending or ambiguous transactions: fills abandoned nonce gaps, re-sends every slot
   * from the chain's confirmed nonce on in nonce order (raw bytes, so the same hashes), waits for
   * the receipts and brings the DynamoDB counter in line with the chain. Slots signed less than
   * `gapGraceMs` ago belong to submits still in flight and are left to them.
   */
  async rebroadcastPending(options: { receiptTimeoutMs?: number; gapGraceMs?: number; replaceAfterMs?: number } = {}): Promise<ResendReport> {
    const report = await this.resend(options.gapGraceMs ?? this.gapGraceMs, options.receiptTimeoutMs ?? 30_000, options.replaceAfterMs ?? this.replaceAfterMs);
    await this.logHealth().catch((error: unknown) => this.log('warn', 'ledger: health could not be read', { detail: sanitizeDetail(error) }));
    return report;
  }

  /**
   * For a fresh local node (Hardhat keeps nothing on disk): re-sends every persisted transaction
   * in nonce order into the node behind the provider and waits for them; the hashes are unchanged
   * because the signed bytes are. Run it at start, before serving submits.
   */
  async replay(options: { receiptTimeoutMs?: number } = {}): Promise<ResendReport> {
    return this.resend(0, options.receiptTimeoutMs ?? 60_000);
  }

  /** Address, balance, nonces (chain and DynamoDB) and the number of transactions not yet mined. */
  async walletStatus(): Promise<WalletStatus> {
    const address = await this.address();
    const [balanceWei, nonceLatest, noncePending, wallet] = await Promise.all([
      this.rpc('read the wallet balance', () => this.provider.getBalance(address)),
      this.rpc('read the wallet nonce', () => this.nonceAt(address, 'latest')),
      this.rpc('read the wallet nonce', () => this.nonceAt(address, 'pending')),
      this.getWallet(address),
    ]);
    const slots = await this.listSlots(nonceLatest);
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
    const address = await this.address();
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

  // ---------------------------------------------------------------- submit internals

  /** The wallet address, after checking once that the node serves the configured chain. */
  private ready(): Promise<string> {
    this.readyPromise ??= (async () => {
      const address = await this.address();
      const network = await this.rpc('read the chain id', () => this.provider.send('eth_chainId', []) as Promise<string>);
      if (Number(BigInt(network)) !== this.chainId) {
        throw new LedgerUnavailableError(
          `The ledger node serves chain ${Number(BigInt(network))}, the service is configured for chain ${this.chainId}`,
          'misconfigured',
        );
      }
      return address;
    })();
    const p = this.readyPromise;
    p.catch(() => {
      if (this.readyPromise === p) this.readyPromise = null;
    });
    return p;
  }

  /** maxFeePerGas = min(2 × base fee + priority fee, cap), cached for feeCacheMs. */
  private async fees(): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> {
    const now = Date.now();
    if (this.feeCache && now - this.feeCache.at < this.feeCacheMs) return this.feeCache;
    this.feeInFlight ??= (async () => {
      try {
        const [block, suggested] = await Promise.all([
          this.rpc('read the base fee', () => this.provider.getBlock('latest')),
          // The node's suggestion; nodes without the method (or failing) leave the floor alone.
          (this.provider.send('eth_maxPriorityFeePerGas', []) as Promise<string>).then((hex) => BigInt(hex)).catch(() => 0n),
        ]);
        const baseFee = block?.baseFeePerGas ?? 0n;
        // The configured priority fee is a floor (Polygon refuses tips under its minimum); under
        // congestion the node suggests more, and a tip below that waits.
        const priorityFee = suggested > this.priorityFee ? suggested : this.priorityFee;
        let maxFeePerGas = 2n * baseFee + priorityFee;
        if (maxFeePerGas > this.maxFeeCap) maxFeePerGas = this.maxFeeCap;
        if (baseFee > this.maxFeeCap) {
          this.log('warn', 'ledger: base fee above the configured cap; the transaction waits until it falls', {
            baseFeeWei: baseFee.toString(),
            capWei: this.maxFeeCap.toString(),
          });
        }
        const maxPriorityFeePerGas = priorityFee < maxFeePerGas ? priorityFee : maxFeePerGas;
        this.feeCache = { at: Date.now(), maxFeePerGas, maxPriorityFeePerGas };
        return this.feeCache;
      } finally {
        this.feeInFlight = null;
      }
    })();
    return this.feeInFlight;
  }

  private async submitInOrder(
    address: string,
    data: string,
    meta: { kind: LedgerTxKind; ref: string },
    fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint },
    beforePersist?: SubmitOptions['beforePersist'],
  ): Promise<SubmitResult> {
    for (let attempt = 1; ; attempt++) {
      const { nonce, reused, ticket } = await this.takeNonce(address);
      // What the submit of the next nonce finds when this one leaves without saying otherwise:
      // nothing was broadcast at this nonce.
      let left: BroadcastState = 'released';
      try {
        let signed: { raw: string; txHash: string };
        try {
          signed = await this.sign(address, nonce, data, fees);
        } catch (error) {
          left = await this.giveBack(address, nonce, null);
          throw error;
        }
        if (beforePersist) {
          try {
            await beforePersist({ nonce, txHash: signed.txHash, raw: signed.raw, from: address });
          } catch (error) {
            // Nothing persisted, nothing broadcast: given back exactly as after a failed slot write.
            left = await this.giveBack(address, nonce, signed.txHash);
            throw error;
          }
        }
        let persisted: boolean;
        try {
          persisted = await this.persistSlot(address, nonce, signed, meta.kind, meta.ref, false);
          // resume() (another process finishing the transaction the caller stored in beforePersist)
          // may have written this very transaction into the slot first: it is ours, go on.
          if (!persisted && beforePersist) persisted = (await this.getSlot(address, nonce))?.tx_hash === signed.txHash;
        } catch (error) {
          // The put may or may not have landed: release marks it released if it did.
          left = await this.giveBack(address, nonce, signed.txHash);
          throw error;
        }
        if (!persisted) {
          // The slot is held by a live transaction: the counter is behind the records. Resync, retry.
          left = 'occupied';
          this.log('warn', 'ledger: nonce slot already taken, resynchronising the counter', { nonce });
          await this.resyncCounter(address);
          if (attempt >= 5) throw new LedgerUnavailableError('No free nonce could be allocated for the ledger wallet', 'store');
          continue;
        }
        this.nonceByHash.set(signed.txHash, nonce);

        if ((await this.order.before(ticket)) === 'released' && attempt < 5) {
          // The nonce below was given up after a failed broadcast and is back in the released set:
          // this transaction would wait behind that gap. Give this nonce back and take the lowest
          // released one instead (most likely that very nonce). If it cannot be given back, it is
          // sent where it is, as before.
          const released = await this.releaseNonce(address, nonce, signed.txHash).catch(() => null);
          if (released === 'ours-sent') {
            left = 'occupied';
            return { txHash: signed.txHash, nonce, from: address, broadcast: 'ambiguous', reusedNonce: reused };
          }
          if (released !== null) {
            this.nonceByHash.delete(signed.txHash);
            left = released === 'released' ? 'released' : 'occupied';
            continue;
          }
        }
        await this.flushUnsettled(address, nonce);
        const outcome = await this.broadcast(signed.raw, signed.txHash);
        const result: SubmitResult = { txHash: signed.txHash, nonce, from: address, broadcast: 'accepted', reusedNonce: reused };
        switch (outcome.kind) {
          case 'accepted':
            left = 'occupied';
            return result;
          case 'ambiguous':
            left = 'occupied';
            this.log('warn', 'ledger: broadcast outcome unknown; the slot is kept for rebroadcast', { nonce, txHash: signed.txHash, detail: outcome.detail });
            this.unsettled.set(nonce, signed);
            return { ...result, broadcast: 'ambiguous' };
          case 'conflict': {
            left = 'occupied'; // by a transaction this service did not sign
            this.nonceByHash.delete(signed.txHash);
            await this.setSlotStatus(address, nonce, signed.txHash, 'conflict', ['signed']);
            this.log('warn', 'ledger: nonce used by a transaction this service did not sign; resynchronising', { nonce });
            await this.resyncCounter(address);
            if (attempt >= 3) {
              throw new LedgerUnavailableError('The ledger wallet is being used by another sender: its nonces keep colliding', 'nonce_conflict', outcome.detail);
            }
            continue;
          }
          case 'unreachable':
          case 'rejected': {
            this.nonceByHash.delete(signed.txHash);
            const released = await this.releaseNonce(address, nonce, signed.txHash).catch((error: unknown) => {
              this.lost.set(nonce, signed.txHash); // definitely not sent: given back once the store answers
              throw error;
            });
            if (released === 'ours-sent') {
              left = 'occupied';
              return { ...result, broadcast: 'ambiguous' };
            }
            left = released === 'taken' ? 'occupied' : outcome.kind === 'unreachable' ? 'unreachable' : 'released';
            throw new LedgerUnavailableError(
              outcome.kind === 'unreachable'
                ? 'The ledger node is unreachable: the transaction was not sent'
                : 'The ledger node refused the transaction: it was not sent',
              outcome.kind,
              outcome.detail,
            );
          }
        }
      } finally {
        this.order.settle(ticket, left);
      }
    }
  }

  /** releaseNonce for a submit that fails before its broadcast; what the next nonce's submit is told. */
  private async giveBack(address: string, nonce: number, txHash: string | null): Promise<BroadcastState> {
    const released = await this.releaseNonce(address, nonce, txHash).catch(() => {
      this.lost.set(nonce, txHash);
      return 'failed' as const;
    });
    // 'failed': neither persisted nor released, a missing slot (the rebroadcast job fills it).
    return released === 'released' || released === 'failed' ? 'released' : 'occupied';
  }

  /** A nonce for one submit: waiting submits are served together by one allocation. */
  private takeNonce(address: string): Promise<NonceAllocation> {
    return new Promise((resolve, reject) => {
      this.nonceQueue.push({ resolve, reject });
      if (!this.allocating) void this.serveNonceQueue(address);
    });
  }

  private async serveNonceQueue(address: string): Promise<void> {
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
  private recoverLost(address: string): Promise<void> {
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
  private async allocateNonces(address: string, count: number): Promise<{ first: number; count: number; reused: boolean }> {
    const key = { pk: `wallet#${address}`, sk: 0 };
    for (let i = 0; i < 50; i++) {
      const now = this.clock().toISOString();
      try {
        const r = await this.store(() =>
          this.db.send(
            new UpdateCommand({
              TableName: this.table,
              Key: key,
              UpdateExpression: 'ADD next_nonce :n SET allocated_at = :now',
              ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(released)',
              ExpressionAttributeValues: { ':n': count, ':now': now },
              ReturnValues: 'UPDATED_NEW',
            }),
          ),
        );
        return { first: Number(r.Attributes?.next_nonce) - count, count, reused: false };
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
      const wallet = await this.getWallet(address);
      if (!wallet) {
        await this.initWallet(address);
        continue;
      }
      const released = [...(wallet.released ?? [])].sort((a, b) => a - b);
      const lowest = released[0];
      if (lowest === undefined) continue;
      try {
        await this.store(() =>
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
  private async initWallet(address: string): Promise<void> {
    const pending = await this.rpc('read the wallet nonce', () => this.nonceAt(address, 'pending'));
    const top = await this.highestSlotNonce(address);
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
      await this.store(() =>
        this.db.send(new PutCommand({ TableName: this.table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' })),
      );
      this.log('info', 'ledger: nonce counter initialised', { address, nextNonce: item.next_nonce });
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error; // another process initialised it
    }
  }

  private async sign(
    address: string,
    nonce: number,
    data: string,
    fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint },
  ): Promise<{ raw: string; txHash: string }> {
    const request: TransactionRequest = {
      type: 2,
      chainId: BigInt(this.chainId),
      nonce,
      to: (this.checksummed ??= getAddress(address)),
      value: 0n,
      data,
      gasLimit: gasLimitFor(data),
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    };
    let raw: string;
    try {
      raw = await this.signer.signTransaction(request);
    } catch (error) {
      throw new LedgerUnavailableError('The ledger wallet could not sign the transaction', 'signer', sanitizeDetail(error));
    }
    if (this.localKey) {
      // ethers' BaseWallet signed exactly `request` with the wallet's own key (see the class
      // comment); the hash of a typed transaction is keccak256 of its bytes.
      if (!/^0x02[0-9a-f]+$/.test(raw)) throw new LedgerUnavailableError('The ledger wallet produced no EIP-1559 transaction', 'misconfigured');
      return { raw, txHash: keccak256(raw) };
    }
    const tx = Transaction.from(raw);
    if (tx.from?.toLowerCase() !== address || tx.nonce !== nonce || tx.chainId !== BigInt(this.chainId) || !tx.hash) {
      throw new LedgerUnavailableError('The ledger signer produced a transaction for another wallet, nonce or chain', 'misconfigured');
    }
    return { raw, txHash: tx.hash.toLowerCase() };
  }

  /**
   * Writes the signed transaction into its slot before anything is broadcast. Only a missing or
   * released slot may be written (a filler may also replace a 'conflict' slot); false when the slot
   * is held by another transaction.
   */
  private async persistSlot(
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
  private async putSlot(
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

  /**
   * Re-sends this sender's earlier ambiguous broadcasts below `nonce` (one try each): on a node that
   * does not queue future nonces (automine) they would otherwise block every later transaction
   * until the rebroadcast job runs. Settled ones (accepted, or refused: the job's business) are forgotten.
   */
  private async flushUnsettled(address: string, nonce: number): Promise<void> {
    const below = [...this.unsettled.keys()].filter((n) => n < nonce).sort((a, b) => a - b);
    for (const n of below) {
      const entry = this.unsettled.get(n);
      if (!entry) continue;
      const outcome = await this.broadcast(entry.raw, entry.txHash, 0);
      if (outcome.kind === 'ambiguous' || outcome.kind === 'unreachable') return;
      this.unsettled.delete(n);
      if (outcome.kind === 'accepted') {
        await this.setSlotStatus(address, n, entry.txHash, 'sent', ['signed']).catch(() => false);
      }
    }
  }

  /** Sends raw bytes; "nonce too high" (another process's lower nonce not yet there) is retried for `retryMs`. */
  private async broadcast(raw: string, txHash: string, retryMs = this.nonceRetryMs): Promise<BroadcastOutcome> {
    const deadline = Date.now() + retryMs;
    let delay = 10;
    for (;;) {
      try {
        await this.provider.send('eth_sendRawTransaction', [raw]);
        return { kind: 'accepted', known: false };
      } catch (error) {
        const kind = classifySendError(error);
        const detail = sanitizeDetail((error as { info?: { error?: { message?: unknown } } }).info?.error?.message ?? error);
        if (kind === 'nonce_too_high' && Date.now() + delay < deadline) {
          await sleep(delay);
          delay = Math.min(delay * 2, 200);
          continue;
        }
        switch (kind) {
          case 'known':
            return { kind: 'accepted', known: true };
          case 'nonce_too_low': {
            // Ours (sent before, e.g. by the rebroadcast job) or somebody else's transaction?
            try {
              const tx: unknown = await this.provider.send('eth_getTransactionByHash', [txHash]);
              return tx ? { kind: 'accepted', known: true } : { kind: 'conflict', detail };
            } catch {
              return { kind: 'ambiguous', detail };
            }
          }
          case 'nonce_too_high':
            return { kind: 'rejected', detail, tooHigh: true };
          case 'rejected':
            return { kind: 'rejected', detail };
          case 'unreachable':
            return { kind: 'unreachable', detail };
          default:
            return { kind: 'ambiguous', detail };
        }
      }
    }
  }

  private async markSent(nonce: number, txHash: string): Promise<void> {
    const address = await this.address();
    await this.setSlotStatus(address, nonce, txHash, 'sent', ['signed']);
  }

  /** Conditional status change of a slot (only if it still holds `txHash` in one of `from`); false otherwise. */
  private async setSlotStatus(
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
    if (status === 'sent') sets.push('sent_at = :now');
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

  /**
   * Gives a nonce back after a definite broadcast failure: the slot (if it holds `txHash`) becomes
   * 'released' without its raw bytes, then the nonce joins the wallet's released set.
   * 'ours-sent': the slot meanwhile went out (the rebroadcast job sent it), nothing was released.
   * 'taken': another writer holds the slot (a gap filler), nothing to release.
   */
  private async releaseNonce(address: string, nonce: number, txHash: string | null): Promise<'released' | 'ours-sent' | 'taken'> {
    if (txHash) {
      const marked = await this.setSlotStatus(address, nonce, txHash, 'released', ['signed'], {
        set: { released_at: this.clock().toISOString() },
        remove: ['raw'],
      });
      if (!marked) {
        const slot = await this.getSlot(address, nonce);
        if (slot && slot.tx_hash === txHash && slot.status !== 'released') return 'ours-sent';
        if (slot && slot.tx_hash !== txHash && slot.status !== 'released') return 'taken';
      }
    } else {
      const slot = await this.getSlot(address, nonce);
      if (slot && slot.status !== 'released') return 'taken';
    }
    await this.store(() =>
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
  private async resyncCounter(address: string): Promise<void> {
    const [latest, pending, top] = await Promise.all([
      this.rpc('read the wallet nonce', () => this.nonceAt(address, 'latest')),
      this.rpc('read the wallet nonce', () => this.nonceAt(address, 'pending')),
      this.highestSlotNonce(address),
    ]);
    const target = Math.max(pending, top + 1);
    const key = { pk: `wallet#${address}`, sk: 0 };
    try {
      await this.store(() =>
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
    const wallet = await this.getWallet(address);
    const stale = [...(wallet?.released ?? [])].filter((n) => n < latest);
    if (stale.length > 0) {
      await this.store(() =>
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

  // ---------------------------------------------------------------- receipts

  private async receiptIfSettled(hash: string): Promise<LedgerReceipt | null> {
    const r = await this.provider.getTransactionReceipt(hash);
    if (!r || r.blockNumber === null) return null;
    if (this.confirmationTag === 'finalized') {
      const finalized = await this.provider.getBlock('finalized');
      if (!finalized || finalized.number < r.blockNumber) return null;
    }
    return { status: r.status === 1 ? 'confirmed' : 'failed', blockNumber: r.blockNumber, blockHash: r.blockHash.toLowerCase(), gasUsed: r.gasUsed, txHash: hash };
  }

  /** The first of `hashes` whose receipt is settled (at most one can be: they share a nonce). */
  private async firstSettled(hashes: string[]): Promise<{ hash: string; receipt: LedgerReceipt } | null> {
    const receipts = await Promise.all(hashes.map((h) => this.receiptIfSettled(h)));
    const i = receipts.findIndex((r) => r !== null);
    const receipt = receipts[i];
    const hash = hashes[i];
    return receipt && hash ? { hash, receipt } : null;
  }

  /** The versions of the slot at `nonce` if `hash` is one of them (asked-for hash first), else just `hash`. */
  private async versionsOf(hash: string, nonce: number): Promise<{ hashes: string[]; slot: LedgerSlot | null }> {
    const slot = nonce >= 0 ? await this.getSlot(await this.address(), nonce) : null;
    if (!slot || (slot.tx_hash !== hash && !slot.tx_hashes?.includes(hash))) return { hashes: [hash], slot: null };
    return { hashes: [...new Set([hash, slot.tx_hash, ...(slot.tx_hashes ?? [])])], slot };
  }

  private async recordReceipt(hash: string, receipt: LedgerReceipt, known: LedgerSlot | null = null): Promise<void> {
    const address = await this.address();
    let nonce = known?.sk ?? this.nonceByHash.get(hash);
    if (nonce === undefined) {
      const tx = await this.provider.getTransaction(hash);
      if (!tx || tx.from.toLowerCase() !== address) return; // not one of ours
      nonce = tx.nonce;
    }
    const from: LedgerSlotStatus[] = ['signed', 'sent', 'confirmed', 'failed'];
    const mined = { block_number: receipt.blockNumber, block_hash: receipt.blockHash, gas_used: Number(receipt.gasUsed) };
    const done = await this.setSlotStatus(address, nonce, hash, receipt.status, from, { set: mined });
    if (!done) {
      // A replaced slot whose mined version is not the newest (the original landed after all):
      // the slot now names the mined version, with its raw bytes (what a local replay re-sends).
      const slot = known ?? (await this.getSlot(address, nonce));
      const i = slot?.tx_hashes?.indexOf(hash) ?? -1;
      const raw = slot?.raws?.[i];
      if (slot && i >= 0 && slot.tx_hash !== hash) {
        await this.setSlotStatus(address, nonce, slot.tx_hash, receipt.status, from, { set: { ...mined, tx_hash: hash, ...(raw ? { raw } : {}) } });
      }
    }
    this.nonceByHash.delete(hash);
    for (const h of known?.tx_hashes ?? []) this.nonceByHash.delete(h);
  }

  // ---------------------------------------------------------------- rebroadcast and replay

  private async resend(graceMs: number, receiptTimeoutMs: number, replaceAfterMs?: number): Promise<ResendReport> {
    const address = await this.ready();
    const report: ResendReport = {
      fromNonce: 0,
      slots: 0,
      filled: 0,
      resent: 0,
      alreadyKnown: 0,
      ambiguous: 0,
      rejected: 0,
      blocked: 0,
      confirmed: 0,
      failed: 0,
      pending: 0,
      replaced: 0,
      notReplaced: 0,
      nextNonce: null,
    };
    const sent = await this.lock.runExclusive(async () => {
      const latest = await this.rpc('read the wallet nonce', () => this.nonceAt(address, 'latest'));
      report.fromNonce = latest;
      let wallet = await this.getWallet(address);
      let slots = await this.listSlots(latest);
      if (!wallet) {
        if (slots.length === 0) return [];
        await this.initWallet(address);
        wallet = await this.getWallet(address);
        if (!wallet) return [];
      }
      const fillers = await this.fillGaps(address, latest, wallet, slots, graceMs);
      report.filled = fillers.size;
      if (report.filled > 0) slots = await this.listSlots(latest);
      report.slots = slots.length;

      const nowMs = this.clock().getTime();
      const sendable = slots
        .filter((s) => LIVE.has(s.status) && s.raw)
        .sort((a, b) => a.sk - b.sk);
      const hashes: { hash: string; nonce?: number }[] = [];
      for (let i = 0; i < sendable.length; i++) {
        let slot = sendable[i] as LedgerSlot;
        if (slot.status === 'signed' && !fillers.has(slot.sk) && nowMs - Date.parse(slot.created_at) < graceMs) {
          // A submit in flight owns it; what follows cannot be mined before it anyway.
          report.blocked += sendable.length - i;
          break;
        }
        // Sent, unmined (its nonce is at or above the chain's) and old: stuck, e.g. behind a fee spike.
        let outcome: BroadcastOutcome | null = null;
        const since = Date.parse(slot.replaced_at ?? slot.sent_at ?? slot.created_at);
        if (replaceAfterMs !== undefined && replaceAfterMs > 0 && slot.status === 'sent' && nowMs - since >= replaceAfterMs) {
          const r = await this.replaceSlot(address, slot, nowMs - since);
          if (r.replaced) report.replaced++;
          else report.notReplaced++;
          slot = r.slot;
          outcome = r.outcome;
        }
        outcome ??= await this.broadcast(slot.raw as string, slot.tx_hash);
        if (outcome.kind === 'unreachable') {
          throw new LedgerUnavailableError('The ledger node is unreachable: pending transactions were not re-sent', 'unreachable', outcome.detail);
        }
        if (outcome.kind === 'rejected' || outcome.kind === 'conflict') {
          report.rejected++;
          report.blocked += sendable.length - i - 1;
          if (outcome.kind === 'conflict') await this.setSlotStatus(address, slot.sk, slot.tx_hash, 'conflict', [...LIVE]);
          this.log('warn', 'ledger: a persisted transaction was refused on re-send; later nonces wait behind it', {
            nonce: slot.sk,
            txHash: slot.tx_hash,
            detail: outcome.detail,
          });
          break;
        }
        if (outcome.kind === 'ambiguous') report.ambiguous++;
        else if (outcome.known) report.alreadyKnown++;
        else report.resent++;
        this.nonceByHash.set(slot.tx_hash, slot.sk);
        if (outcome.kind === 'accepted') this.unsettled.delete(slot.sk);
        if (slot.status !== 'sent') {
          await this.setSlotStatus(address, slot.sk, slot.tx_hash, 'sent', [...LIVE], { remove: ['block_number', 'block_hash', 'gas_used'] });
        }
        hashes.push(slot.tx_hashes ? { hash: slot.tx_hash, nonce: slot.sk } : { hash: slot.tx_hash });
      }
      await this.resyncCounter(address);
      return hashes;
    });

    const receipts = await Promise.all(sent.map((h) => this.waitForReceipt(h.hash, receiptTimeoutMs, h.nonce)));
    for (const r of receipts) {
      if (!r) report.pending++;
      else if (r.status === 'confirmed') report.confirmed++;
      else report.failed++;
    }
    report.nextNonce = (await this.getWallet(address))?.next_nonce ?? null;
    this.log('info', 'ledger: re-send finished', { ...report });
    return report;
  }

  /**
   * Fees of a replacement: both at least `feeBumpPercent` above the version it replaces (rounded
   * up), at least what a fresh transaction would pay now, and never above the cap. Null when the
   * cap leaves no room for the bump.
   */
  private replacementFees(
    previous: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint },
    now: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint },
  ): { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | null {
    const bump = (v: bigint) => (v * (100n + this.feeBumpPercent) + 99n) / 100n;
    const max = (a: bigint, b: bigint) => (a > b ? a : b);
    const minTip = bump(previous.maxPriorityFeePerGas);
    const minFee = bump(previous.maxFeePerGas);
    const tip = max(minTip, now.maxPriorityFeePerGas);
    let fee = max(max(minFee, now.maxFeePerGas), tip);
    if (fee > this.maxFeeCap) fee = this.maxFeeCap;
    if (fee < minFee || fee < minTip) return null;
    return { maxFeePerGas: fee, maxPriorityFeePerGas: tip > fee ? fee : tip };
  }

  /**
   * Replaces the stuck transaction of `slot` (see the class comment): re-signs it at the same nonce
   * with bumped fees, writes the new version into the slot (conditional on the slot still naming
   * the old one), then broadcasts it. Returns the slot to continue with and, when the replacement
   * went out (or may have), its broadcast outcome; otherwise the slot as it was, for the usual re-send.
   */
  private async replaceSlot(
    address: string,
    slot: LedgerSlot,
    pendingMs: number,
  ): Promise<{ slot: LedgerSlot; outcome: BroadcastOutcome | null; replaced: boolean }> {
    const unchanged = { slot, outcome: null, replaced: false };
    const previous = Transaction.from(slot.raw as string);
    const old = { maxFeePerGas: previous.maxFeePerGas ?? 0n, maxPriorityFeePerGas: previous.maxPriorityFeePerGas ?? 0n };
    this.feeCache = null; // the base fee right now, not from before the spike
    const fees = this.replacementFees(old, await this.fees());
    const context = { nonce: slot.sk, txHash: slot.tx_hash, kind: slot.kind, ref: slot.ref, pendingMinutes: Math.round(pendingMs / 600) / 100 };
    if (!fees) {
      this.log('warn', 'ledger: stuck transaction not replaced: the fee bump would cross the cap', {
        alert: 'ledger_fee_cap',
        ...context,
        maxFeePerGasWei: old.maxFeePerGas.toString(),
        capWei: this.maxFeeCap.toString(),
      });
      return unchanged;
    }
    const signed = await this.sign(address, slot.sk, previous.data, fees);
    const hashes = [...(slot.tx_hashes ?? [slot.tx_hash]), signed.txHash];
    const raws = [...(slot.raws ?? [slot.raw as string]), signed.raw];
    const now = this.clock().toISOString();
    // Persisted before the broadcast: a replacement the node may have seen is never lost.
    const written = await this.setSlotStatus(address, slot.sk, slot.tx_hash, 'sent', ['sent'], {
      set: { tx_hash: signed.txHash, raw: signed.raw, tx_hashes: hashes, raws, replaced_at: now },
    });
    if (!written) {
      // Mined, replaced or re-sent by someone else meanwhile: the usual re-send of what is stored.
      const current = await this.getSlot(address, slot.sk);
      return current && current.raw && LIVE.has(current.status) ? { ...unchanged, slot: current } : unchanged;
    }
    const replacement: LedgerSlot = { ...slot, tx_hash: signed.txHash, raw: signed.raw, tx_hashes: hashes, raws, replaced_at: now, updated_at: now };
    const outcome = await this.broadcast(signed.raw, signed.txHash);
    if (outcome.kind === 'accepted' || outcome.kind === 'ambiguous') {
      this.nonceByHash.set(signed.txHash, slot.sk);
      this.log('warn', 'ledger: stuck transaction replaced with higher fees', {
        alert: 'ledger_tx_replaced',
        ...context,
        replacementTxHash: signed.txHash,
        maxFeePerGasWei: fees.maxFeePerGas.toString(),
        maxPriorityFeePerGasWei: fees.maxPriorityFeePerGas.toString(),
        broadcast: outcome.kind,
      });
      await this.onReplaced?.({
        kind: slot.kind,
        ref: slot.ref,
        nonce: slot.sk,
        previousTxHash: slot.tx_hash,
        txHash: signed.txHash,
        txHashes: hashes,
        ...fees,
      }).catch((error: unknown) =>
        this.log('warn', 'ledger: the record could not follow a replacement (its receipt will correct it)', { ...context, detail: sanitizeDetail(error) }),
      );
      return { slot: replacement, outcome, replaced: true };
    }
    // Definitely not taken (refused, nonce already mined, node unreachable): back to the version
    // the node holds, which the usual re-send then handles.
    await this.setSlotStatus(address, slot.sk, signed.txHash, 'sent', ['sent'], {
      set: { tx_hash: slot.tx_hash, raw: slot.raw, tx_hashes: hashes.slice(0, -1), raws: raws.slice(0, -1) },
    });
    this.log('warn', 'ledger: the replacement of a stuck transaction was not accepted', { alert: 'ledger_tx_replace_failed', ...context, detail: outcome.detail });
    return unchanged;
  }

  /**
   * One line per run of the rebroadcast job for the alarms (docs/runbook.md): balance, transactions
   * not yet mined and the age of the oldest, and the system clock (which the TSA stamps with) minus
   * the latest block's timestamp.
   */
  private async logHealth(): Promise<void> {
    const address = await this.address();
    const [balanceWei, latest, block] = await Promise.all([
      this.rpc('read the wallet balance', () => this.provider.getBalance(address)),
      this.rpc('read the wallet nonce', () => this.nonceAt(address, 'latest')),
      this.rpc('read the latest block', () => this.provider.getBlock('latest')),
    ]);
    const nowMs = this.clock().getTime();
    const pending = (await this.listSlots(latest)).filter((s) => s.status === 'signed' || s.status === 'sent');
    const oldest = pending.reduce((min, s) => Math.min(min, Date.parse(s.created_at)), nowMs);
    this.log(balanceWei < this.lowBalanceWei ? 'warn' : 'info', 'ledger: health', {
      address,
      chainId: this.chainId,
      balance: Number(formatEther(balanceWei)),
      lowBalance: balanceWei < this.lowBalanceWei ? 1 : 0,
      pendingTxs: pending.length,
      oldestPendingSeconds: Math.round((nowMs - oldest) / 1000),
      blockNumber: block?.number ?? null,
      clockDriftSeconds: block ? Math.round(nowMs / 1000 - block.timestamp) : null,
    });
  }

  /**
   * Fills nonce gaps in [fromNonce, next_nonce) with an empty self-transaction so later nonces can
   * be mined: released nonces below the highest live slot (claimed from the set like an allocation),
   * 'conflict' slots, and slots missing or released-but-unclaimed for longer than `graceMs`
   * (their allocator died between allocating and persisting). Returns the nonces filled: their
   * fillers are sent in the same run (a young 'signed' slot is otherwise left to its submit).
   */
  private async fillGaps(address: string, fromNonce: number, wallet: WalletItem, slots: LedgerSlot[], graceMs: number): Promise<Set<number>> {
    const bySk = new Map(slots.map((s) => [s.sk, s]));
    const topLive = slots.filter((s) => LIVE.has(s.status)).reduce((m, s) => Math.max(m, s.sk), -1);
    const released = wallet.released ?? new Set<number>();
    const nowMs = this.clock().getTime();
    const old = (iso: string | undefined) => graceMs === 0 || (iso !== undefined && nowMs - Date.parse(iso) >= graceMs);
    const filled = new Set<number>();
    for (let n = fromNonce; n < wallet.next_nonce; n++) {
      const slot = bySk.get(n);
      if (slot && LIVE.has(slot.status)) continue;
      if (released.has(n)) {
        if (n > topLive) continue; // the next allocation reuses it; nothing waits behind it
        const claimed = await this.claimReleased(address, n);
        if (claimed && (await this.writeFiller(address, n))) filled.add(n);
        continue;
      }
      const abandoned = !slot
        ? old(wallet.allocated_at) || slots.some((s) => s.sk > n && old(s.created_at))
        : slot.status === 'conflict' || old(slot.released_at ?? slot.updated_at);
      if (abandoned && (await this.writeFiller(address, n))) filled.add(n);
    }
    if (filled.size > 0) this.log('warn', 'ledger: filled nonce gaps with empty transactions', { filled: filled.size });
    return filled;
  }

  private async claimReleased(address: string, nonce: number): Promise<boolean> {
    try {
      await this.store(() =>
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

  private async writeFiller(address: string, nonce: number): Promise<boolean> {
    const fees = await this.fees();
    const signed = await this.sign(address, nonce, '0x', fees);
    return this.persistSlot(address, nonce, signed, 'filler', 'gap-fill', true);
  }

  // ---------------------------------------------------------------- small helpers

  private async getWallet(address: string): Promise<WalletItem | null> {
    const r = await this.store(() =>
      this.db.send(new GetCommand({ TableName: this.table, Key: { pk: `wallet#${address}`, sk: 0 }, ConsistentRead: true })),
    );
    return (r.Item as WalletItem | undefined) ?? null;
  }

  private async getSlot(address: string, nonce: number): Promise<LedgerSlot | null> {
    const r = await this.store(() =>
      this.db.send(new GetCommand({ TableName: this.table, Key: { pk: `tx#${address}`, sk: nonce }, ConsistentRead: true })),
    );
    return (r.Item as LedgerSlot | undefined) ?? null;
  }

  private async highestSlotNonce(address: string): Promise<number> {
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

  /** Runs a DynamoDB call; a lost condition passes through, anything else becomes LedgerUnavailableError. */
  private async store<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (error) {
      if (isConditionalCheckFailed(error) || error instanceof LedgerUnavailableError) throw error;
      throw new LedgerUnavailableError('The ledger records (DynamoDB) could not be read or written', 'store', sanitizeDetail(error));
    }
  }

  /**
   * The wallet's transaction count at `tag`, asked straight from the node: ethers' getTransactionCount
   * shares identical calls made within 250 ms, which can return a count from before our last sends.
   */
  private async nonceAt(address: string, tag: 'latest' | 'pending'): Promise<number> {
    const hex = (await this.provider.send('eth_getTransactionCount', [address, tag])) as string;
    return Number(BigInt(hex));
  }

  /** Runs a JSON-RPC read; any failure becomes LedgerUnavailableError. */
  private async rpc<T>(what: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (error) {
      if (error instanceof LedgerUnavailableError) throw error;
      const kind = classifySendError(error);
      const code = (error as { code?: unknown }).code;
      throw new LedgerUnavailableError(
        `Could not ${what}: the ledger node ${kind === 'unreachable' ? 'is unreachable' : code === 'TIMEOUT' ? 'did not answer in time' : 'failed'}`,
        kind === 'unreachable' ? 'unreachable' : code === 'TIMEOUT' ? 'timeout' : 'rejected',
        sanitizeDetail(error),
      );
    }
  }
}
