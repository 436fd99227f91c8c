import { Transaction } from 'ethers';
import { sanitizeDetail } from './errors.js';
import type { FeeOracle } from './fees.js';
import type { BroadcastOutcome, LedgerNode } from './node.js';
import type { ReceiptBook } from './receipts.js';
import type { LedgerRecords } from './records.js';
import type { TxSigner } from './signing.js';
import { LIVE, type LedgerLog, type LedgerSenderOptions, type LedgerSlot } from './types.js';

/**
 * Stuck transactions (rebroadcastPending with `replaceAfterMs`). A slot sent and still unmined
 * after that long is re-signed at the SAME nonce with the same data and both maxFeePerGas and
 * maxPriorityFeePerGas raised by at least `feeBumpPercent` (10 %: the txpool's replacement rule in
 * geth and Bor, which refuse a replacement that raises only one of them or by less). The slot keeps
 * every version: `tx_hash`/`raw` name the newest, `tx_hashes`/`raws` list all of them, oldest
 * first; the new version is written BEFORE its broadcast, like every transaction here. If the node
 * refuses the replacement, the slot goes back to the version it replaced. When the bump would cross
 * the cap, nothing is signed and a warn line with `alert: "ledger_fee_cap"` is logged.
 * `onReplaced` lets the record naming the transaction (the evidence item) follow each replacement.
 */
export class Replacer {
  constructor(
    private readonly records: LedgerRecords,
    private readonly node: LedgerNode,
    private readonly feeOracle: FeeOracle,
    private readonly txSigner: TxSigner,
    private readonly receipts: ReceiptBook,
    private readonly clock: () => Date,
    private readonly onReplaced: LedgerSenderOptions['onReplaced'],
    private readonly log: LedgerLog,
  ) {}

  private get maxFeeCap(): bigint {
    return this.feeOracle.maxFeeCap;
  }

  /**
   * Replaces the stuck transaction of `slot` (see the class comment): re-signs it at the same nonce
   * with bumped fees, writes the new version into the slot (conditional on the slot still naming
   * the old one), then broadcasts it. Returns the slot to continue with and, when the replacement
   * went out (or may have), its broadcast outcome; otherwise the slot as it was, for the usual re-send.
   */
  async replaceSlot(
    address: string,
    slot: LedgerSlot,
    pendingMs: number,
  ): Promise<{ slot: LedgerSlot; outcome: BroadcastOutcome | null; replaced: boolean }> {
    const unchanged = { slot, outcome: null, replaced: false };
    const previous = Transaction.from(slot.raw as string);
    const old = { maxFeePerGas: previous.maxFeePerGas ?? 0n, maxPriorityFeePerGas: previous.maxPriorityFeePerGas ?? 0n };
    this.feeOracle.forget(); // the base fee right now, not from before the spike
    const fees = this.feeOracle.replacementFees(old, await this.feeOracle.fees());
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
    // The same transaction at higher fees: same data and, for a value transfer, the same recipient and value.
    const transfer = previous.to && previous.to.toLowerCase() !== address ? { to: previous.to, valueWei: previous.value } : undefined;
    const signed = await this.txSigner.sign(address, slot.sk, previous.data, fees, transfer);
    const hashes = [...(slot.tx_hashes ?? [slot.tx_hash]), signed.txHash];
    const raws = [...(slot.raws ?? [slot.raw as string]), signed.raw];
    const now = this.clock().toISOString();
    // Persisted before the broadcast: a replacement the node may have seen is never lost.
    // From `signed` too (LEDGER_SLOT bump: signed|sent → sent): a slot its submit broadcast stays `signed`.
    const written = await this.records.setSlotStatus(address, slot.sk, slot.tx_hash, 'sent', ['signed', 'sent'], {
      set: { tx_hash: signed.txHash, raw: signed.raw, tx_hashes: hashes, raws, replaced_at: now },
    });
    if (!written) {
      // Mined, replaced or re-sent by someone else meanwhile: the usual re-send of what is stored.
      const current = await this.records.getSlot(address, slot.sk);
      return current && current.raw && LIVE.has(current.status) ? { ...unchanged, slot: current } : unchanged;
    }
    const replacement: LedgerSlot = { ...slot, tx_hash: signed.txHash, raw: signed.raw, tx_hashes: hashes, raws, replaced_at: now, updated_at: now };
    const outcome = await this.node.broadcast(signed.raw, signed.txHash);
    if (outcome.kind === 'accepted' || outcome.kind === 'ambiguous') {
      this.receipts.nonceByHash.set(signed.txHash, slot.sk);
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
    await this.records.setSlotStatus(address, slot.sk, signed.txHash, 'sent', ['sent'], {
      set: { tx_hash: slot.tx_hash, raw: slot.raw, tx_hashes: hashes.slice(0, -1), raws: raws.slice(0, -1) },
    });
    this.log('warn', 'ledger: the replacement of a stuck transaction was not accepted', { alert: 'ledger_tx_replace_failed', ...context, detail: outcome.detail });
    return unchanged;
  }
}
