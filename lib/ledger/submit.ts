import type { FeeOracle } from './fees.js';
import { LedgerUnavailableError } from './errors.js';
import type { LedgerNode } from './node.js';
import type { NonceAllocator } from './nonces.js';
import type { BroadcastState } from './pipeline.js';
import type { ReceiptBook } from './receipts.js';
import type { LedgerRecords } from './records.js';
import type { TxSigner } from './signing.js';
import { LIVE } from './types.js';
import type { Fees, LedgerLog, LedgerTxKind, SubmitOptions, SubmitResult, Unsettled } from './types.js';

/**
 * The submit pipeline of LedgerSender (sender.ts, "Ordering" and "Released nonces"): take a nonce,
 * sign, persist, broadcast in this process's nonce order; a nonce that will not be sent is given
 * back or held by a filler. The façade validates the request, reads the fees and runs this under
 * the shared side of its lock.
 */

/**
 * An owner refused the transaction announced to it (its conditional write lost: the claim or
 * seal moved on), so it never stores it: the errors the owners throw then say so.
 */
function isOwnerRefusal(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { ownerRefused?: unknown }).ownerRefused === true;
}

export class SubmitPipeline {
  constructor(
    private readonly records: LedgerRecords,
    private readonly node: LedgerNode,
    private readonly feeOracle: FeeOracle,
    private readonly txSigner: TxSigner,
    private readonly receipts: ReceiptBook,
    private readonly nonces: NonceAllocator,
    private readonly unsettled: Unsettled,
    private readonly log: LedgerLog,
  ) {}

  /** Takes a nonce, signs, persists and broadcasts (retrying a nonce lost to a race); see LedgerSender.submit. */
  async run(
    address: string,
    data: string,
    meta: { kind: LedgerTxKind; ref: string },
    fees: Fees,
    beforePersist?: SubmitOptions['beforePersist'],
    transfer?: SubmitOptions['transfer'],
  ): Promise<SubmitResult> {
    for (let attempt = 1; ; attempt++) {
      const { nonce, reused, ticket } = await this.nonces.takeNonce(address);
      // What the submit of the next nonce finds when this one leaves without saying otherwise:
      // nothing was broadcast at this nonce.
      let left: BroadcastState = 'released';
      try {
        let signed: { raw: string; txHash: string };
        try {
          signed = await this.txSigner.sign(address, nonce, data, fees, transfer);
        } catch (error) {
          left = await this.giveUpNonce(address, nonce, false); // no transaction of this nonce exists
          throw error;
        }
        if (beforePersist) {
          try {
            await beforePersist({ nonce, txHash: signed.txHash, raw: signed.raw, from: address });
          } catch (error) {
            // Nothing persisted here, nothing broadcast. An owner that refused the transaction
            // (its claim moved on) never stores it: the nonce goes back. Any other failure (a
            // deadline) may have stored it: the owner may resume it, so the nonce is never given
            // to another transaction (a filler holds it unless the owner's resume did first).
            left = await this.giveUpNonce(address, nonce, !isOwnerRefusal(error));
            throw error;
          }
        }
        let persisted: boolean;
        try {
          persisted = await this.records.persistSlot(address, nonce, signed, meta.kind, meta.ref, false);
          // The slot may hold this very transaction: resume() (another process finishing the
          // transaction the caller stored in beforePersist) wrote it first, or this put landed
          // before a later write to the slot replaced its write token (lib/store/resend-safe.ts).
          // It is ours either way: go on, never re-sign its data at another nonce.
          if (!persisted) persisted = (await this.records.getSlot(address, nonce))?.tx_hash === signed.txHash;
        } catch (error) {
          // The put may or may not have landed. An owner holds the transaction (it may resume it):
          // the nonce is its or a filler's. Without an owner, the slot alone holds it: a landed
          // write is sent like any persisted transaction, an empty slot goes back to the wallet.
          left = await this.giveUpNonce(address, nonce, Boolean(beforePersist));
          throw error;
        }
        if (!persisted) {
          // The slot is held by a live transaction: the counter is behind the records. Resync, retry.
          left = 'occupied';
          this.log('warn', 'ledger: nonce slot already taken, resynchronising the counter', { nonce });
          await this.nonces.resyncCounter(address);
          if (attempt >= 5) throw new LedgerUnavailableError('No free nonce could be allocated for the ledger wallet', 'store');
          continue;
        }
        this.receipts.nonceByHash.set(signed.txHash, nonce);

        if ((await this.nonces.order.before(ticket)) === 'released') {
          // The nonce below was given back (no transaction of it exists) after this allocation
          // began: this transaction would wait behind that gap. A filler takes the gap now (its
          // slot is written only while empty) and goes out first, with this process's next broadcast.
          if (await this.nonces.claimReleased(address, nonce - 1).catch(() => false)) await this.fillNonce(address, nonce - 1).catch(() => false);
        }
        await this.flushUnsettled(address, nonce);
        const outcome = await this.node.broadcast(signed.raw, signed.txHash, undefined, address, () => this.sendBelow(address, nonce));
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
            this.receipts.nonceByHash.delete(signed.txHash);
            await this.records.setSlotStatus(address, nonce, signed.txHash, 'conflict', ['signed']);
            this.log('warn', 'ledger: nonce used by a transaction this service did not sign; resynchronising', { nonce });
            await this.nonces.resyncCounter(address);
            if (attempt >= 3) {
              throw new LedgerUnavailableError('The ledger wallet is being used by another sender: its nonces keep colliding', 'nonce_conflict', outcome.detail);
            }
            continue;
          }
          case 'unreachable':
          case 'rejected': {
            // The node did not take it, but the slot holds it: the nonce stays this transaction's
            // (LEDGER_SLOT: a persisted slot is never given back). It goes out with the next
            // broadcast of this process (flushUnsettled), the owner's resume() or the re-send job,
            // in nonce order, as soon as the node takes it; never a second transaction for it.
            left = 'occupied';
            this.unsettled.set(nonce, signed);
            this.log('warn', 'ledger: the node did not take a persisted transaction; it is kept and sent again', { nonce, txHash: signed.txHash, why: outcome.kind, detail: outcome.detail });
            return { ...result, broadcast: 'failed' };
          }
        }
      } finally {
        this.nonces.order.settle(ticket, left);
      }
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
      const outcome = await this.node.broadcast(entry.raw, entry.txHash, 0);
      if (outcome.kind === 'ambiguous' || outcome.kind === 'unreachable') return;
      this.unsettled.delete(n);
      if (outcome.kind === 'accepted') {
        await this.records.setSlotStatus(address, n, entry.txHash, 'sent', ['signed']).catch(() => false);
      }
    }
  }

  /**
   * On "nonce too high": sends, in nonce order, the persisted transactions between the chain's
   * pending nonce and `nonce` that the node lacks (a lower nonce whose broadcast failed in another
   * process, or that a restarted node lost). Any process may send a persisted slot (it is the
   * nonce's one transaction: LEDGER_SLOT); a missing slot (an allocation still in flight
   * elsewhere) stops it, as does a refusal.
   */
  private async sendBelow(address: string, nonce: number): Promise<void> {
    const pending = await this.node.nonceAt(address, 'pending');
    if (pending >= nonce) return;
    const slots = (await this.records.listSlots(address, pending)).filter((s) => s.sk < nonce);
    for (let n = pending; n < nonce; n++) {
      const slot = slots.find((s) => s.sk === n);
      if (!slot || !LIVE.has(slot.status) || !slot.raw) return;
      const outcome = await this.node.broadcast(slot.raw, slot.tx_hash, 0);
      if (outcome.kind !== 'accepted') return;
      this.unsettled.delete(n);
      if (slot.status === 'signed') await this.records.setSlotStatus(address, n, slot.tx_hash, 'sent', ['signed']).catch(() => false);
    }
  }

  /**
   * A nonce this submit took and will not send (LEDGER_SLOT: a written slot is never given back).
   * `ownerMayHold` false: no owner holds a transaction of this nonce, so it goes back to the
   * wallet unless its slot was written (then that transaction is the nonce's, sent like any other).
   * `ownerMayHold` true: a transaction was handed to its owner, which may hold it and resume it
   * (then its slot is written with it); the nonce is never given to another transaction: a filler
   * takes the slot now if it is still empty, so later nonces are not stuck behind a gap. When the
   * store (or the node, for the filler's fee) fails too, it is done once they answer (`lost`).
   */
  private async giveUpNonce(address: string, nonce: number, ownerMayHold: boolean): Promise<BroadcastState> {
    try {
      if (!ownerMayHold) return (await this.nonces.releaseNonce(address, nonce)) === 'released' ? 'released' : 'occupied';
      await this.fillNonce(address, nonce);
      return 'occupied';
    } catch {
      this.nonces.lost.set(nonce, ownerMayHold ? 'fill' : 'release');
      return ownerMayHold ? 'occupied' : 'released';
    }
  }

  /**
   * Writes an empty filler transaction into the slot of `nonce` if it is empty (or released, or
   * lost to a conflict), to be sent before this process's next transaction; false when the slot
   * holds a transaction (an owner's resume wrote it first: that one is the nonce's).
   */
  async fillNonce(address: string, nonce: number): Promise<boolean> {
    const fees = await this.feeOracle.fees();
    const signed = await this.txSigner.sign(address, nonce, '0x', fees);
    if (!(await this.records.persistSlot(address, nonce, signed, 'filler', 'gap-fill', true))) return false;
    this.unsettled.set(nonce, signed);
    this.log('info', 'ledger: a nonce given up is held by an empty filler transaction', { nonce, txHash: signed.txHash });
    return true;
  }
}
