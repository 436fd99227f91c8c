import type { TierName } from '../accounts/tiers.js';
import type { QuotaReservation } from '../accounts/limits.js';

/** A signed ledger transaction, as the publisher announces it before it can reach any node. */
export interface SignedTx {
  txHash: string;
  nonce: number;
  /** The signed transaction, 0x hex. */
  raw: string;
  /** Lower-case address of the wallet. */
  from: string;
}

export interface LedgerReceipt {
  status: 'confirmed' | 'failed';
  blockNumber: number;
  /** The version mined (after a fee replacement, possibly another version of the same nonce). */
  txHash?: string | undefined;
  txHashes?: string[] | undefined;
}

/** What became of a transaction signed earlier (see LedgerPublisher.resume). */
export type ResumeOutcome = { outcome: 'mined'; receipt: LedgerReceipt } | { outcome: 'sent'; txHash: string } | { outcome: 'dead' };

/**
 * The ledger as the anchoring pipeline sees it (docs/state-machines.md: accept, then publish). Direct mode
 * (one transaction per anchor) is lib/ledger's sender behind this port, wired in lib/deps.
 */
export interface LedgerPublisher {
  readonly chainId: number;
  address(): Promise<string>;
  /**
   * Signs a transaction carrying `data` and hands it to `persist` BEFORE it is written to the
   * ledger's own records or broadcast; when `persist` throws, the nonce is given back, nothing goes
   * out and that error is rethrown. `persist` may be called again with a new signature (a nonce
   * given back before its record was written, and another taken); each announced transaction but
   * the last was never sent. Once recorded, the transaction keeps its nonce: `broadcast` says
   * whether the node took it now ('accepted'), may have ('ambiguous') or did not ('failed': it is
   * sent again by resume() or the ledger's re-send job, never replaced).
   */
  publish(data: Uint8Array, ref: string, persist: (tx: SignedTx) => Promise<void>): Promise<{ txHash: string; broadcast: 'accepted' | 'ambiguous' | 'failed' }>;
  /**
   * Finishes a transaction signed earlier whose sender may have died at any line: `mined` (with
   * its receipt), `sent` (it is with the node or will be re-sent from the ledger's records), or
   * `dead` (it can never be mined: its nonce went to another transaction; a new one may be signed).
   */
  resume(tx: { txHash: string; nonce: number; raw: string; ref: string }): Promise<ResumeOutcome>;
  /** The receipt, or null when it has not arrived within `timeoutMs`; with `nonce`, any version of that slot counts. */
  waitForReceipt(txHash: string, timeoutMs: number, nonce?: number): Promise<LedgerReceipt | null>;
}

/** The monthly quota as anchoring uses it: a hold named after the anchor (lib/accounts/quota-holds.ts). */
export interface QuotaPort {
  reserve(accountId: string, tier: TierName, holdId: string): Promise<QuotaReservation>;
  /** Ends a hold: settle keeps the unit, refund gives it back; each hold ends once (true for the call that ended it). */
  end(hold: { counterKey: string; holdId: string }, outcome: 'settle' | 'refund'): Promise<boolean>;
}
