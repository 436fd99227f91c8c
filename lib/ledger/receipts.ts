import { sanitizeDetail } from './errors.js';
import type { LedgerNode } from './node.js';
import type { LedgerRecords } from './records.js';
import type { LedgerLog, LedgerReceipt, LedgerSlot, LedgerSlotStatus } from './types.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Receipts of the wallet's transactions, recorded on their slots. Only one version of a replaced
 * slot can be mined (one nonce), but it may be ANY of them: the original can still land after its
 * replacement was broadcast. So receipts are looked up across the slot's versions, and the slot
 * then names the version that was mined.
 */
export class ReceiptBook {
  /** txHash → nonce of transactions this sender signed and not yet settled (to update the slot on a receipt). */
  readonly nonceByHash = new Map<string, number>();

  constructor(
    private readonly node: LedgerNode,
    private readonly records: LedgerRecords,
    private readonly address: () => Promise<string>,
    private readonly pollingIntervalMs: number,
    private readonly log: LedgerLog,
  ) {}

  private get provider() {
    return this.node.provider;
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
      const found = await this.node.firstSettled(versions?.hashes ?? [hash]).catch(() => null);
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

  /** The versions of the slot at `nonce` if `hash` is one of them (asked-for hash first), else just `hash`. */
  async versionsOf(hash: string, nonce: number): Promise<{ hashes: string[]; slot: LedgerSlot | null }> {
    const slot = nonce >= 0 ? await this.records.getSlot(await this.address(), nonce) : null;
    if (!slot || (slot.tx_hash !== hash && !slot.tx_hashes?.includes(hash))) return { hashes: [hash], slot: null };
    return { hashes: [...new Set([hash, slot.tx_hash, ...(slot.tx_hashes ?? [])])], slot };
  }

  /** `wallet`: the slot's wallet when it is not this sender's (a transaction of a wallet rotated away). */
  async recordReceipt(hash: string, receipt: LedgerReceipt, known: LedgerSlot | null = null, wallet?: string): Promise<void> {
    const address = wallet ?? (await this.address());
    let nonce = known?.sk ?? this.nonceByHash.get(hash);
    if (nonce === undefined) {
      const tx = await this.provider.getTransaction(hash);
      if (!tx || tx.from.toLowerCase() !== address) return; // not one of ours
      nonce = tx.nonce;
    }
    const from: LedgerSlotStatus[] = ['signed', 'sent', 'confirmed', 'failed'];
    const mined = { block_number: receipt.blockNumber, block_hash: receipt.blockHash, gas_used: Number(receipt.gasUsed) };
    const done = await this.records.setSlotStatus(address, nonce, hash, receipt.status, from, { set: mined });
    if (!done) {
      // A replaced slot whose mined version is not the newest (the original landed after all):
      // the slot now names the mined version, with its raw bytes (what a local replay re-sends).
      const slot = known ?? (await this.records.getSlot(address, nonce));
      const i = slot?.tx_hashes?.indexOf(hash) ?? -1;
      const raw = slot?.raws?.[i];
      if (slot && i >= 0 && slot.tx_hash !== hash) {
        await this.records.setSlotStatus(address, nonce, slot.tx_hash, receipt.status, from, { set: { ...mined, tx_hash: hash, ...(raw ? { raw } : {}) } });
      }
    }
    this.nonceByHash.delete(hash);
    for (const h of known?.tx_hashes ?? []) this.nonceByHash.delete(h);
  }
}
