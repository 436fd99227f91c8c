import { BaseWallet, Transaction, getAddress, keccak256, type TransactionRequest } from 'ethers';
import { LedgerUnavailableError, sanitizeDetail } from './errors.js';
import { gasLimitFor } from './fees.js';
import type { Fees, LedgerSigner, ValueTransfer } from './types.js';

/**
 * Signs the service's transactions: EIP-1559 (type 2), 0 value, from the wallet to itself; or,
 * with `transfer`, a value transfer to another address (the local wallet rotation's funding).
 *
 * Signature check. A KMS-backed signer's output is checked (signer recovered from the signature,
 * nonce, chain id); a local ethers wallet signs exactly the request it is given with the wallet's
 * own key, so recovering the signer (2–3 ms of CPU) is skipped for it.
 */
export class TxSigner {
  /** True for a local ethers wallet whose signatures need no recovery check. */
  private readonly localKey: boolean;
  private checksummed: string | null = null;

  constructor(
    private readonly signer: LedgerSigner,
    private readonly chainId: number,
  ) {
    // Only ethers' own signTransaction: it signs the request as given, with the wallet's key.
    this.localKey = signer instanceof BaseWallet && signer.signTransaction === BaseWallet.prototype.signTransaction;
  }

  async sign(
    address: string,
    nonce: number,
    data: string,
    fees: Fees,
    transfer?: ValueTransfer,
  ): Promise<{ raw: string; txHash: string }> {
    const request: TransactionRequest = {
      type: 2,
      chainId: BigInt(this.chainId),
      nonce,
      to: transfer ? getAddress(transfer.to) : (this.checksummed ??= getAddress(address)),
      value: transfer?.valueWei ?? 0n,
      data,
      gasLimit: gasLimitFor(data),
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    };
    let raw: string;
    try {
      raw = await this.signer.signTransaction(request);
    } catch (error) {
      throw new LedgerUnavailableError('The ledger wallet could not sign the transaction', 'signer', sanitizeDetail(error));
    }
    if (this.localKey) {
      // ethers' BaseWallet signed exactly `request` with the wallet's own key (see the class
      // comment); the hash of a typed transaction is keccak256 of its bytes.
      if (!/^0x02[0-9a-f]+$/.test(raw)) throw new LedgerUnavailableError('The ledger wallet produced no EIP-1559 transaction', 'misconfigured');
      return { raw, txHash: keccak256(raw) };
    }
    const tx = Transaction.from(raw);
    if (tx.from?.toLowerCase() !== address || tx.nonce !== nonce || tx.chainId !== BigInt(this.chainId) || !tx.hash) {
      throw new LedgerUnavailableError('The ledger signer produced a transaction for another wallet, nonce or chain', 'misconfigured');
    }
    return { raw, txHash: tx.hash.toLowerCase() };
  }
}
