import { LedgerUnavailableError, sanitizeDetail } from './errors.js';
import type { LedgerNode } from './node.js';
import type { NonceAllocator } from './nonces.js';
import type { ReceiptBook } from './receipts.js';
import type { LedgerRecords } from './records.js';
import { LIVE, type LedgerLog, type LedgerReceipt, type LedgerSlot, type LedgerSlotStatus, type LedgerTxKind, type ResumeResult, type Unsettled } from './types.js';

/**
 * The decisions of LedgerSender.resume() (see there): finish a transaction signed earlier, or
 * declare it dead, from what the slot and the chain say. The caller runs it under the exclusive
 * lock, so its broadcast cannot overtake a lower nonce of this process.
 */
export class Resumer {
  constructor(
    private readonly records: LedgerRecords,
    private readonly node: LedgerNode,
    private readonly nonces: NonceAllocator,
    private readonly receipts: ReceiptBook,
    /** This process's ambiguous broadcasts, by nonce (see LedgerSender). */
    private readonly unsettled: Unsettled,
    private readonly confirmationTag: 'latest' | 'finalized',
    private readonly log: LedgerLog,
  ) {}

  private get provider() {
    return this.node.provider;
  }

  /** One decision of resume() from a fresh read; null when a conditional write lost and it must read again. */
  async resumeOnce(
    address: string,
    tx: { nonce: number; hash: string; raw: string; kind: LedgerTxKind; ref: string },
    /** false: `address` is another wallet (one rotated away), whose transactions this process never broadcast before. */
    own = true,
  ): Promise<ResumeResult | null> {
    // The chain's nonce BEFORE the receipts: a version mined after this read still shows its receipt
    // below, so "nonce passed and no receipt" can only mean another transaction took the nonce.
    const latest = await this.node.rpc('read the wallet nonce', () => this.node.nonceAt(address, 'latest'));
    const slot = await this.records.getSlot(address, tx.nonce);
    const ours = slot !== null && (slot.tx_hash === tx.hash || (slot.tx_hashes?.includes(tx.hash) ?? false));
    const hashes = ours && slot ? [...new Set([tx.hash, slot.tx_hash, ...(slot.tx_hashes ?? [])])] : [tx.hash];
    const settled = await this.settledOrMined(hashes, ours ? slot : null, address);
    if (settled) return settled;
    if (latest > tx.nonce) {
      if (ours && slot && LIVE.has(slot.status)) await this.records.setSlotStatus(address, tx.nonce, slot.tx_hash, 'conflict', [...LIVE]);
      return { outcome: 'dead' };
    }

    if (!slot) {
      const wallet = await this.records.getWallet(address);
      if (wallet?.released?.has(tx.nonce)) {
        // Given back by its submit (beforePersist or the slot write failed): never broadcast by us.
        // A released slot naming it keeps that answer final (an allocation may overwrite it).
        const tombstone = await this.records.putSlot(address, tx.nonce, { txHash: tx.hash }, tx.kind, tx.ref, 'released', 'missing');
        return tombstone ? { outcome: 'dead' } : null;
      }
      if (!(await this.records.putSlot(address, tx.nonce, { txHash: tx.hash, raw: tx.raw }, tx.kind, tx.ref, 'signed', 'missing'))) return null;
      return this.resumeBroadcast(address, tx.nonce, { tx_hash: tx.hash, raw: tx.raw, status: 'signed' }, hashes, own);
    }
    if (!ours || !LIVE.has(slot.status) || !slot.raw) return { outcome: 'dead' };
    return this.resumeBroadcast(address, tx.nonce, { tx_hash: slot.tx_hash, raw: slot.raw, status: slot.status }, hashes, own);
  }

  /** 'mined' when a version has a settled receipt (recorded on the slot), 'sent' when one is mined but not yet settled. */
  async settledOrMined(hashes: string[], slot: LedgerSlot | null, address?: string): Promise<ResumeResult | null> {
    const found = await this.node.rpc('read a receipt', () => this.node.firstSettled(hashes));
    if (found) {
      const txHashes = slot?.tx_hashes;
      const receipt: LedgerReceipt = { ...found.receipt, ...(txHashes && txHashes.length > 1 ? { txHashes: [...txHashes] } : {}) };
      await this.receipts.recordReceipt(found.hash, receipt, slot, address).catch((error: unknown) =>
        this.log('warn', 'ledger: could not record a receipt', { txHash: found.hash, detail: sanitizeDetail(error) }),
      );
      return { outcome: 'mined', receipt };
    }
    if (this.confirmationTag === 'latest') return null;
    // 'finalized': mined but not final yet is not dead.
    const receipts = await this.node.rpc('read a receipt', () => Promise.all(hashes.map((h) => this.provider.getTransactionReceipt(h))));
    const i = receipts.findIndex((r) => r !== null && r.blockNumber !== null);
    return i >= 0 ? { outcome: 'sent', txHash: hashes[i] as string } : null;
  }

  /** The broadcast step of resume(): the slot holds `current` (a version of the transaction). */
  async resumeBroadcast(
    address: string,
    nonce: number,
    current: { tx_hash: string; raw: string; status: LedgerSlotStatus },
    hashes: string[],
    own = true,
  ): Promise<ResumeResult | null> {
    const sent: ResumeResult = { outcome: 'sent', txHash: current.tx_hash };
    const outcome = await this.node.broadcast(current.raw, current.tx_hash);
    switch (outcome.kind) {
      case 'accepted':
        // This process's bookkeeping (receipts by hash, its own unsettled broadcasts) is of its own wallet.
        if (own) this.receipts.nonceByHash.set(current.tx_hash, nonce);
        if (own) this.unsettled.delete(nonce);
        if (current.status === 'signed') await this.records.setSlotStatus(address, nonce, current.tx_hash, 'sent', ['signed']);
        return sent;
      case 'ambiguous':
        if (own) this.receipts.nonceByHash.set(current.tx_hash, nonce);
        return sent;
      case 'unreachable':
        throw new LedgerUnavailableError('The ledger node is unreachable: the transaction was not re-sent', 'unreachable', outcome.detail);
      case 'conflict': {
        // Nonce too low and the node does not know any version: mined already, or never minable.
        const settled = await this.settledOrMined(hashes, null, address);
        if (settled) return settled;
        await this.records.setSlotStatus(address, nonce, current.tx_hash, 'conflict', [...LIVE]);
        this.log('warn', 'ledger: a resumed transaction lost its nonce to a transaction this service did not sign', { nonce, txHash: current.tx_hash });
        return { outcome: 'dead' };
      }
      case 'rejected': {
        if (outcome.tooHigh) return sent; // a lower nonce is not there yet: the re-send job sends it in order
        // Refused (an underpriced fee, too little balance): the slot keeps it (LEDGER_SLOT: a
        // persisted transaction is never given back); it is sent again later, or bumped at the
        // same nonce by the re-send job. Never 'dead' for that.
        throw new LedgerUnavailableError('The ledger node refused the transaction for now; it is kept and sent again', 'rejected', outcome.detail);
      }
    }
  }
}
