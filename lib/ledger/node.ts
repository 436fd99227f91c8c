import { FetchRequest, JsonRpcProvider, Network } from 'ethers';
import { LedgerUnavailableError, sanitizeDetail } from './errors.js';
import type { LedgerReceipt } from './types.js';

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

export type BroadcastOutcome =
  | { kind: 'accepted'; known: boolean }
  | { kind: 'ambiguous'; detail: string }
  | { kind: 'conflict'; detail: string }
  | { kind: 'unreachable'; detail: string }
  | { kind: 'rejected'; detail: string; tooHigh?: boolean };

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

/** Sorts a failed eth_sendRawTransaction into what it means for the slot. */
export function classifySendError(error: unknown): 'nonce_too_high' | 'nonce_too_low' | 'known' | 'rejected' | 'unreachable' | 'ambiguous' {
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

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The ledger node as the sender uses it: reads wrapped in LedgerUnavailableError, broadcasts sorted by outcome, settled receipts. */
export class LedgerNode {
  constructor(
    readonly provider: JsonRpcProvider,
    private readonly nonceRetryMs: number,
    private readonly confirmationTag: 'latest' | 'finalized',
  ) {}

  /** Runs a JSON-RPC read; any failure becomes LedgerUnavailableError. */
  async rpc<T>(what: string, op: () => Promise<T>): Promise<T> {
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

  /**
   * The wallet's transaction count at `tag`, asked straight from the node: ethers' getTransactionCount
   * shares identical calls made within 250 ms, which can return a count from before our last sends.
   */
  async nonceAt(address: string, tag: 'latest' | 'pending'): Promise<number> {
    const hex = (await this.provider.send('eth_getTransactionCount', [address, tag])) as string;
    return Number(BigInt(hex));
  }

  /**
   * Sends raw bytes; "nonce too high" (a lower nonce not yet there) is retried for `retryMs`.
   * `sendBelow`, when given, is called on "nonce too high" (at most every 250 ms): it sends the
   * persisted transactions below this one that the node lacks (another process's, or one a
   * restarted node lost), so that this one does not wait for the re-send job.
   */
  async broadcast(raw: string, txHash: string, retryMs = this.nonceRetryMs, from?: string, sendBelow?: () => Promise<void>): Promise<BroadcastOutcome> {
    let belowAt = 0;
    // "Nonce too high": a lower nonce (another process's) is not at the node yet. With `from`, the
    // wait lasts while that process makes progress: each rise of the wallet's pending nonce
    // restarts the `retryMs` window, so a slow (loaded) peer is waited for, and only a gap where
    // nothing moves for `retryMs` (a dead allocator) ends it. Wall-clock time alone is no measure.
    let deadline = Date.now() + retryMs;
    let pending = -1;
    let delay = 10;
    for (;;) {
      try {
        await this.provider.send('eth_sendRawTransaction', [raw]);
        return { kind: 'accepted', known: false };
      } catch (error) {
        const kind = classifySendError(error);
        // The node's own words when ethers could not classify them ("could not coalesce error" keeps them in `error`).
        const e = error as { info?: { error?: { message?: unknown } }; error?: { message?: unknown } };
        const detail = sanitizeDetail(e.info?.error?.message ?? e.error?.message ?? error);
        if (kind === 'nonce_too_high' && from !== undefined && retryMs > 0) {
          const now = await this.nonceAt(from, 'pending').catch(() => pending);
          if (now > pending) {
            if (pending >= 0) deadline = Date.now() + retryMs;
            pending = now;
          }
        }
        if (kind === 'nonce_too_high' && sendBelow && Date.now() - belowAt >= 250) {
          belowAt = Date.now();
          await sendBelow().catch(() => undefined);
          // What sendBelow sent is progress too: sending many lower transactions one by one can
          // take longer than `retryMs` (measured: 60 of them, 3.3 s), which must not count as a stall.
          if (from !== undefined && retryMs > 0) {
            const now = await this.nonceAt(from, 'pending').catch(() => pending);
            if (now > pending) {
              deadline = Date.now() + retryMs;
              pending = now;
            }
          }
        }
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

  async receiptIfSettled(hash: string): Promise<LedgerReceipt | null> {
    const r = await this.provider.getTransactionReceipt(hash);
    if (!r || r.blockNumber === null) return null;
    if (this.confirmationTag === 'finalized') {
      const finalized = await this.provider.getBlock('finalized');
      if (!finalized || finalized.number < r.blockNumber) return null;
    }
    return { status: r.status === 1 ? 'confirmed' : 'failed', blockNumber: r.blockNumber, blockHash: r.blockHash.toLowerCase(), gasUsed: r.gasUsed, txHash: hash };
  }

  /** The first of `hashes` whose receipt is settled (at most one can be: they share a nonce). */
  async firstSettled(hashes: string[]): Promise<{ hash: string; receipt: LedgerReceipt } | null> {
    const receipts = await Promise.all(hashes.map((h) => this.receiptIfSettled(h)));
    const i = receipts.findIndex((r) => r !== null);
    const receipt = receipts[i];
    const hash = hashes[i];
    return receipt && hash ? { hash, receipt } : null;
  }
}
