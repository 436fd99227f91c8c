import { formatEther } from 'ethers';
import { LedgerUnavailableError } from './errors.js';
import type { FeeOracle } from './fees.js';
import type { BroadcastOutcome, LedgerNode } from './node.js';
import type { NonceAllocator } from './nonces.js';
import type { SharedExclusiveLock } from './pipeline.js';
import type { ReceiptBook } from './receipts.js';
import type { LedgerRecords } from './records.js';
import type { Replacer } from './replacement.js';
import type { TxSigner } from './signing.js';
import { LIVE, type LedgerLog, type LedgerSlot, type ResendReport, type Unsettled, type WalletItem } from './types.js';

/**
 * The re-send job (rebroadcastPending) and the local replay: fills abandoned nonce gaps, re-sends
 * every slot from the chain's confirmed nonce on in nonce order (raw bytes, so the same hashes),
 * replaces stuck ones, waits for the receipts and brings the counter in line with the chain. It
 * runs alone: under the exclusive lock, after the submits in flight have left the broadcast stage
 * and before later ones enter it.
 */
export class ResendJob {
  constructor(
    private readonly records: LedgerRecords,
    private readonly node: LedgerNode,
    private readonly feeOracle: FeeOracle,
    private readonly txSigner: TxSigner,
    private readonly nonces: NonceAllocator,
    private readonly receipts: ReceiptBook,
    private readonly replacer: Replacer,
    private readonly lock: SharedExclusiveLock,
    /** This process's ambiguous broadcasts, by nonce (see LedgerSender). */
    private readonly unsettled: Unsettled,
    private readonly wallet: { ready: () => Promise<string>; address: () => Promise<string>; chainId: number; lowBalanceWei: bigint },
    private readonly clock: () => Date,
    private readonly log: LedgerLog,
  ) {}

  private get provider() {
    return this.node.provider;
  }

  async resend(graceMs: number, receiptTimeoutMs: number, replaceAfterMs?: number): Promise<ResendReport> {
    const address = await this.wallet.ready();
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
      const latest = await this.node.rpc('read the wallet nonce', () => this.node.nonceAt(address, 'latest'));
      report.fromNonce = latest;
      let wallet = await this.records.getWallet(address);
      let slots = await this.records.listSlots(address, latest);
      if (!wallet) {
        if (slots.length === 0) return [];
        await this.nonces.initWallet(address);
        wallet = await this.records.getWallet(address);
        if (!wallet) return [];
      }
      const fillers = await this.fillGaps(address, latest, wallet, slots, graceMs);
      report.filled = fillers.size;
      if (report.filled > 0) slots = await this.records.listSlots(address, latest);
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
        // `signed` counts as out since it was signed: a submit broadcasts right after it signs, and
        // marks nothing more (a slot it broadcast stays `signed` until its receipt is recorded).
        if (replaceAfterMs !== undefined && replaceAfterMs > 0 && (slot.status === 'sent' || slot.status === 'signed') && nowMs - since >= replaceAfterMs) {
          const r = await this.replacer.replaceSlot(address, slot, nowMs - since);
          if (r.replaced) report.replaced++;
          else report.notReplaced++;
          slot = r.slot;
          outcome = r.outcome;
        }
        outcome ??= await this.node.broadcast(slot.raw as string, slot.tx_hash);
        if (outcome.kind === 'unreachable') {
          throw new LedgerUnavailableError('The ledger node is unreachable: pending transactions were not re-sent', 'unreachable', outcome.detail);
        }
        if (outcome.kind === 'rejected' || outcome.kind === 'conflict') {
          report.rejected++;
          report.blocked += sendable.length - i - 1;
          if (outcome.kind === 'conflict') await this.records.setSlotStatus(address, slot.sk, slot.tx_hash, 'conflict', [...LIVE]);
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
        this.receipts.nonceByHash.set(slot.tx_hash, slot.sk);
        if (outcome.kind === 'accepted') this.unsettled.delete(slot.sk);
        if (slot.status !== 'sent') {
          // A slot its submit broadcast stays `signed` (no write of its own on the request path):
          // when the node knew it already, it has been out since it was signed, and a fee bump
          // measures from then.
          const since = slot.status === 'signed' && outcome.kind === 'accepted' && outcome.known ? { set: { sent_at: slot.created_at } } : {};
          await this.records.setSlotStatus(address, slot.sk, slot.tx_hash, 'sent', [...LIVE], { ...since, remove: ['block_number', 'block_hash', 'gas_used'] });
        }
        hashes.push(slot.tx_hashes ? { hash: slot.tx_hash, nonce: slot.sk } : { hash: slot.tx_hash });
      }
      await this.nonces.resyncCounter(address);
      return hashes;
    });

    const receipts = await Promise.all(sent.map((h) => this.receipts.waitForReceipt(h.hash, receiptTimeoutMs, h.nonce)));
    for (const r of receipts) {
      if (!r) report.pending++;
      else if (r.status === 'confirmed') report.confirmed++;
      else report.failed++;
    }
    report.nextNonce = (await this.records.getWallet(address))?.next_nonce ?? null;
    this.log('info', 'ledger: re-send finished', { ...report });
    return report;
  }

  /**
   * Fills nonce gaps in [fromNonce, next_nonce) with an empty self-transaction so later nonces can
   * be mined: released nonces below the highest live slot (claimed from the set like an allocation),
   * 'conflict' slots, and slots missing or released-but-unclaimed for longer than `graceMs`
   * (their allocator died between allocating and persisting). Returns the nonces filled: their
   * fillers are sent in the same run (a young 'signed' slot is otherwise left to its submit).
   */
  async fillGaps(address: string, fromNonce: number, wallet: WalletItem, slots: LedgerSlot[], graceMs: number): Promise<Set<number>> {
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
        const claimed = await this.nonces.claimReleased(address, n);
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

  async writeFiller(address: string, nonce: number): Promise<boolean> {
    const fees = await this.feeOracle.fees();
    const signed = await this.txSigner.sign(address, nonce, '0x', fees);
    return this.records.persistSlot(address, nonce, signed, 'filler', 'gap-fill', true);
  }

  /**
   * One line per run of the rebroadcast job for the alarms (docs/runbook.md): balance, transactions
   * not yet mined and the age of the oldest, and the system clock (which the TSA stamps with) minus
   * the latest block's timestamp.
   */
  async logHealth(): Promise<void> {
    const address = await this.wallet.address();
    const [balanceWei, latest, block] = await Promise.all([
      this.node.rpc('read the wallet balance', () => this.provider.getBalance(address)),
      this.node.rpc('read the wallet nonce', () => this.node.nonceAt(address, 'latest')),
      this.node.rpc('read the latest block', () => this.provider.getBlock('latest')),
    ]);
    const nowMs = this.clock().getTime();
    const pending = (await this.records.listSlots(address, latest)).filter((s) => s.status === 'signed' || s.status === 'sent');
    const oldest = pending.reduce((min, s) => Math.min(min, Date.parse(s.created_at)), nowMs);
    this.log(balanceWei < this.wallet.lowBalanceWei ? 'warn' : 'info', 'ledger: health', {
      address,
      chainId: this.wallet.chainId,
      balance: Number(formatEther(balanceWei)),
      lowBalance: balanceWei < this.wallet.lowBalanceWei ? 1 : 0,
      pendingTxs: pending.length,
      oldestPendingSeconds: Math.round((nowMs - oldest) / 1000),
      blockNumber: block?.number ?? null,
      clockDriftSeconds: block ? Math.round(nowMs / 1000 - block.timestamp) : null,
    });
  }
}
