import type { RpcReader } from '../ledger/rpc-reader.js';
import type { LedgerRead } from './proof-check.js';

/** The reads of a ledger transaction every verifier makes (the service's and the offline one). */
export type LedgerReads = Pick<RpcReader, 'getTransaction' | 'getTransactionReceipt' | 'blockNumber'>;

/** The transaction as a node returns it now (its receipt and the latest block when it is mined). */
export async function readLedger(rpc: LedgerReads, txHash: string): Promise<LedgerRead> {
  const tx = await rpc.getTransaction(txHash);
  if (!tx || tx.blockNumber === null) return { tx };
  const [receipt, latestBlock] = await Promise.all([rpc.getTransactionReceipt(txHash), rpc.blockNumber()]);
  return { tx, receipt, latestBlock };
}
