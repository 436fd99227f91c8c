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

/** What the pipeline works with: the sender's parts (sender.ts builds this once). */
export interface SubmitParts {
  readonly records: LedgerRecords;
  readonly node: LedgerNode;
  readonly feeOracle: FeeOracle;
  readonly txSigner: TxSigner;
  readonly receipts: ReceiptBook;
  readonly nonces: NonceAllocator;
  readonly unsettled: Unsettled;
  readonly log: LedgerLog;
}

/** Takes a nonce, signs, persists and broadcasts (retrying a nonce lost to a race); see LedgerSender.submit. */
export async function submitInOrder(
  p: SubmitParts,
  address: string,
  data: string,
  meta: { kind: LedgerTxKind; ref: string },
  fees: Fees,
  beforePersist?: SubmitOptions['beforePersist'],
  transfer?: SubmitOptions['transfer'],
): Promise<SubmitResult> {
  for (let attempt = 1; ; attempt++) {
    const { nonce, reused, ticket } = await p.nonces.takeNonce(address);
    // What the submit of the next nonce finds when this one leaves without saying otherwise:
    // nothing was broadcast at this nonce.
    let left: BroadcastState = 'released';
    try {
      let signed: { raw: string; txHash: string };
      try {
        signed = await p.txSigner.sign(address, nonce, data, fees, transfer);
      } catch (error) {
        left = await giveUpNonce(p, address, nonce, false); // no transaction of this nonce exists
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
          left = await giveUpNonce(p, address, nonce, !isOwnerRefusal(error));
          throw error;
        }
      }
      let persisted: boolean;
      try {
        persisted = await p.records.persistSlot(address, nonce, signed, meta.kind, meta.ref, false);
        // The slot may hold this very transaction: resume() (another process finishing the
        // transaction the caller stored in beforePersist) wrote it first, or this put landed
        // before a later write to the slot replaced its write token (lib/store/resend-safe.ts).
        // It is ours either way: go on, never re-sign its data at another nonce.
        if (!persisted) persisted = (await p.records.getSlot(address, nonce))?.tx_hash === signed.txHash;
      } catch (error) {
        // The put may or may not have landed. An owner holds the transaction (it may resume it):
        // the nonce is its or a filler's. Without an owner, the slot alone holds it: a landed
        // write is sent like any persisted transaction, an empty slot goes back to the wallet.
        left = await giveUpNonce(p, address, nonce, Boolean(beforePersist));
        throw error;
      }
      if (!persisted) {
        // The slot is held by a live transaction: the counter is behind the records. Resync, retry.
        left = 'occupied';
        p.log('warn', 'ledger: nonce slot already taken, resynchronising the counter', { nonce });
        await p.nonces.resyncCounter(address);
        if (attempt >= 5) throw new LedgerUnavailableError('No free nonce could be allocated for the ledger wallet', 'store');
        continue;
      }
      p.receipts.nonceByHash.set(signed.txHash, nonce);

      if ((await p.nonces.order.before(ticket)) === 'released') {
        // The nonce below was given back (no transaction of it exists) after this allocation
        // began: this transaction would wait behind that gap. A filler takes the gap now (its
        // slot is written only while empty) and goes out first, with this process's next broadcast.
        if (await p.nonces.claimReleased(address, nonce - 1).catch(() => false)) await fillNonce(p, address, nonce - 1).catch(() => false);
      }
      await flushUnsettled(p, address, nonce);
      const outcome = await p.node.broadcast(signed.raw, signed.txHash, undefined, address, () => sendBelow(p, address, nonce));
      const result: SubmitResult = { txHash: signed.txHash, nonce, from: address, broadcast: 'accepted', reusedNonce: reused };
      switch (outcome.kind) {
        case 'accepted':
          left = 'occupied';
          return result;
        case 'ambiguous':
          left = 'occupied';
          p.log('warn', 'ledger: broadcast outcome unknown; the slot is kept for rebroadcast', { nonce, txHash: signed.txHash, detail: outcome.detail });
          p.unsettled.set(nonce, signed);
          return { ...result, broadcast: 'ambiguous' };
        case 'conflict': {
          left = 'occupied'; // by a transaction this service did not sign
          p.receipts.nonceByHash.delete(signed.txHash);
          await p.records.setSlotStatus(address, nonce, signed.txHash, 'conflict', ['signed']);
          p.log('warn', 'ledger: nonce used by a transaction this service did not sign; resynchronising', { nonce });
          await p.nonces.resyncCounter(address);
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
          p.unsettled.set(nonce, signed);
          p.log('warn', 'ledger: the node did not take a persisted transaction; it is kept and sent again', { nonce, txHash: signed.txHash, why: outcome.kind, detail: outcome.detail });
          return { ...result, broadcast: 'failed' };
        }
      }
    } finally {
      p.nonces.order.settle(ticket, left);
    }
  }
}

/**
 * Re-sends this sender's earlier ambiguous broadcasts below `nonce` (one try each): on a node that
 * does not queue future nonces (automine) they would otherwise block every later transaction
 * until the rebroadcast job runs. Settled ones (accepted, or refused: the job's business) are forgotten.
 */
async function flushUnsettled(p: SubmitParts, address: string, nonce: number): Promise<void> {
  const below = [...p.unsettled.keys()].filter((n) => n < nonce).sort((a, b) => a - b);
  for (const n of below) {
    const entry = p.unsettled.get(n);
    if (!entry) continue;
    const outcome = await p.node.broadcast(entry.raw, entry.txHash, 0);
    if (outcome.kind === 'ambiguous' || outcome.kind === 'unreachable') return;
    p.unsettled.delete(n);
    if (outcome.kind === 'accepted') {
      await p.records.setSlotStatus(address, n, entry.txHash, 'sent', ['signed']).catch(() => false);
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
async function sendBelow(p: SubmitParts, address: string, nonce: number): Promise<void> {
  const pending = await p.node.nonceAt(address, 'pending');
  if (pending >= nonce) return;
  const slots = (await p.records.listSlots(address, pending)).filter((s) => s.sk < nonce);
  for (let n = pending; n < nonce; n++) {
    const slot = slots.find((s) => s.sk === n);
    if (!slot || !LIVE.has(slot.status) || !slot.raw) return;
    const outcome = await p.node.broadcast(slot.raw, slot.tx_hash, 0);
    if (outcome.kind !== 'accepted') return;
    p.unsettled.delete(n);
    if (slot.status === 'signed') await p.records.setSlotStatus(address, n, slot.tx_hash, 'sent', ['signed']).catch(() => false);
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
async function giveUpNonce(p: SubmitParts, address: string, nonce: number, ownerMayHold: boolean): Promise<BroadcastState> {
  try {
    if (!ownerMayHold) return (await p.nonces.releaseNonce(address, nonce)) === 'released' ? 'released' : 'occupied';
    await fillNonce(p, address, nonce);
    return 'occupied';
  } catch {
    p.nonces.lost.set(nonce, ownerMayHold ? 'fill' : 'release');
    return ownerMayHold ? 'occupied' : 'released';
  }
}

/**
 * Writes an empty filler transaction into the slot of `nonce` if it is empty (or released, or
 * lost to a conflict), to be sent before this process's next transaction; false when the slot
 * holds a transaction (an owner's resume wrote it first: that one is the nonce's).
 */
export async function fillNonce(p: SubmitParts, address: string, nonce: number): Promise<boolean> {
  const fees = await p.feeOracle.fees();
  const signed = await p.txSigner.sign(address, nonce, '0x', fees);
  if (!(await p.records.persistSlot(address, nonce, signed, 'filler', 'gap-fill', true))) return false;
  p.unsettled.set(nonce, signed);
  p.log('info', 'ledger: a nonce given up is held by an empty filler transaction', { nonce, txHash: signed.txHash });
  return true;
}
