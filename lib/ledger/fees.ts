import { parseUnits } from 'ethers';
import type { LedgerNode } from './node.js';
import type { Fees, LedgerLog } from './types.js';

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

export function gwei(value: number): bigint {
  return parseUnits(value.toFixed(9), 'gwei');
}

/**
 * EIP-1559 fees (real networks): the priority fee is max(configured floor, the node's
 * eth_maxPriorityFeePerGas) — Polygon PoS refuses tips under its minimum (the presets' 25 gwei) —
 * and maxFeePerGas = min(2 × base fee + priority fee, cap). Nothing is ever signed above the cap.
 */
export class FeeOracle {
  /** Fees expire (feeCacheMs) and a replacement forgets them: not a lazy, which keeps its value until reset. */
  private feeCache: { at: number; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | null = null;
  private feeInFlight: Promise<Fees> | null = null;

  constructor(
    private readonly node: LedgerNode,
    private readonly priorityFee: bigint,
    readonly maxFeeCap: bigint,
    private readonly feeCacheMs: number,
    private readonly feeBumpPercent: bigint,
    private readonly log: LedgerLog,
  ) {}

  private get provider() {
    return this.node.provider;
  }

  /** Forgets the cached fee data (a replacement wants the base fee right now, not from before the spike). */
  forget(): void {
    this.feeCache = null;
  }

  /** maxFeePerGas = min(2 × base fee + priority fee, cap), cached for feeCacheMs. */
  async fees(): Promise<Fees> {
    const now = Date.now();
    if (this.feeCache && now - this.feeCache.at < this.feeCacheMs) return this.feeCache;
    this.feeInFlight ??= (async () => {
      try {
        const [block, suggested] = await Promise.all([
          this.node.rpc('read the base fee', () => this.provider.getBlock('latest')),
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

  /**
   * Fees of a replacement: both at least `feeBumpPercent` above the version it replaces (rounded
   * up), at least what a fresh transaction would pay now, and never above the cap. Null when the
   * cap leaves no room for the bump.
   */
  replacementFees(
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
}
