import { getConfig } from '../../lib/deps/core.js';
import { decodeLedgerData } from '../../lib/ledger/anchor-data.js';
import { createLedgerProvider } from '../../lib/ledger/sender.js';

/** The transactions `from` sent, among the chain's last 300 blocks, whose input is the batch root `root`. */
export async function transactionsWithRoot(root: string, from: string): Promise<string[]> {
  const provider = createLedgerProvider({ rpcUrl: getConfig().ledger.rpcUrl, chainId: getConfig().ledger.chainId, pollingIntervalMs: 50 });
  try {
    const latest = await provider.getBlockNumber();
    const found: string[] = [];
    for (let n = Math.max(0, latest - 300); n <= latest; n++) {
      for (const tx of (await provider.getBlock(n, true))?.prefetchedTransactions ?? []) {
        if (tx.from.toLowerCase() !== from.toLowerCase()) continue;
        try {
          const d = decodeLedgerData(tx.data);
          if (d.kind === 'batch' && d.root === root) found.push(tx.hash);
        } catch {
          // a filler or another kind of transaction
        }
      }
    }
    return found;
  } finally {
    provider.destroy();
  }
}
