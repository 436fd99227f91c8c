import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { JsonRpcProvider, TransactionRequest } from 'ethers';

/** The types LedgerSender's modules share (the façade, sender.ts, re-exports the public ones). */

/** What the sender needs from a signer: a local ethers Wallet, or a KMS-backed AbstractSigner. */
export interface LedgerSigner {
  getAddress(): Promise<string>;
  signTransaction(tx: TransactionRequest): Promise<string>;
}

/**
 * What a transaction is for. 'wallet-funding' is a value transfer from the wallet to the wallet
 * that replaces it (the local stack's wallet rotation, lib/local/wallet-rotation.ts); every other
 * kind is a 0-value transaction from the wallet to itself carrying data.
 */
export type LedgerTxKind = 'anchor' | 'pq-key' | 'wallet-funding';
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

/** The wallet item (pk `wallet#<address>`, sk 0): the nonce counter and the released nonces. */
export interface WalletItem {
  pk: string;
  sk: 0;
  address: string;
  next_nonce: number;
  released?: Set<number>;
  allocated_at?: string;
  /** The last allocation from the counter: its token and the counter before it (nonces.ts). */
  alloc_token?: string;
  alloc_from?: number;
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
  /**
   * 'accepted': the node took it. 'ambiguous': it may have. 'failed': it did not (unreachable, or
   * it refused). In both last cases the slot keeps it: it is sent again in nonce order by this
   * process's next broadcast, resume() or rebroadcastPending(), never replaced by another.
   */
  broadcast: 'accepted' | 'ambiguous' | 'failed';
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
   * again at another nonce when the slot was taken: each new signature is announced again). Lets
   * the caller store the raw transaction first, so that a crash at any later line can be finished
   * with resume() instead of signing a second transaction. If it throws, nothing is persisted or
   * broadcast and submit rethrows that error unchanged; the nonce goes back to the wallet when the
   * error says the caller refused the transaction (`ownerRefused: true`: it never stores it), and
   * is otherwise held by an empty filler unless the caller's resume() writes its slot first (a
   * failed write may have landed).
   */
  beforePersist?: (signed: SignedLedgerTx) => Promise<void>;
  /** Kind 'wallet-funding' only: the value transfer (the recipient and the wei it receives). */
  transfer?: ValueTransfer;
}

/** A value transfer: sent to `to` instead of the wallet itself. */
export interface ValueTransfer {
  to: string;
  valueWei: bigint;
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

/** Slot statuses whose transaction may be, or is, on the chain. */
export const LIVE: ReadonlySet<LedgerSlotStatus> = new Set(['signed', 'sent', 'confirmed', 'failed']);

/** EIP-1559 fees of one transaction. */
export interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

/** Operational log line (never secrets). */
export type LedgerLog = NonNullable<LedgerSenderOptions['log']>;

/**
 * A sender's broadcasts the node has not surely taken (ambiguous, or refused while the slot holds
 * them), by nonce: re-sent before its next broadcast so they cannot block it.
 */
export type Unsettled = Map<number, { raw: string; txHash: string }>;
