/**
 * The local chain's explorer (GET /ledger/tx/{tx_hash}): a transaction as read from the chain
 * now, with its input data decoded as the service writes it (lib/ledger/anchor-data.ts).
 */
import { countConfirmations, transactionState } from '../evidence/proof-check.js';
import { decodeLedgerData } from '../ledger/anchor-data.js';
import type { RpcReader } from '../ledger/rpc-reader.js';

export type LedgerTxReader = Pick<RpcReader, 'chainId' | 'getTransaction' | 'getTransactionReceipt' | 'blockNumber' | 'getBlock'>;

export type DecodedInput =
  | { kind: 'anchor'; image_hash: string; server_hash: string }
  | { kind: 'pq-key'; algorithm: 'ML-DSA-65'; fingerprint: string }
  | { kind: 'batch'; merkle_root: string }
  | { kind: 'other'; bytes: number };

/** The JSON answer of the page (Accept: application/json) and the HTML page's model. */
export interface LedgerTxDetails {
  tx_hash: string;
  chain_id: number;
  /** confirmed: mined and succeeded; reverted: mined and failed; pending: not in a block yet. */
  status: 'confirmed' | 'reverted' | 'pending';
  block_number: number | null;
  block_hash: string | null;
  /** Time of the block (ISO 8601), null while pending. */
  block_time: string | null;
  /** Blocks from its block to the latest, inclusive, as of `checked_at` (the one definition: proof-check.ts countConfirmations). */
  confirmations: number;
  /** When the chain was read. */
  checked_at: string;
  from: string;
  to: string | null;
  nonce: number;
  value_wei: string;
  gas_used: string | null;
  input: string;
  decoded: DecodedInput;
}

/** A transaction hash as the page accepts it: `0x` and 64 hex characters, any case. */
export const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

/** Reads a transaction; null when the chain does not know it. Node failures throw LedgerUnavailableError. */
export async function readLedgerTx(rpc: LedgerTxReader, txHash: string): Promise<LedgerTxDetails | null> {
  const hash = txHash.toLowerCase();
  const [tx, chainId] = await Promise.all([rpc.getTransaction(hash), rpc.chainId()]);
  if (!tx) return null;
  let decoded: DecodedInput;
  try {
    const d = decodeLedgerData(tx.input);
    decoded =
      d.kind === 'anchor'
        ? { kind: 'anchor', image_hash: d.imageHash, server_hash: d.serverHash }
        : d.kind === 'batch'
          ? { kind: 'batch', merkle_root: d.root }
          : { kind: 'pq-key', algorithm: d.algorithm, fingerprint: d.fingerprint };
  } catch {
    decoded = { kind: 'other', bytes: Math.max(0, (tx.input.length - 2) / 2) };
  }
  const base = {
    tx_hash: tx.hash,
    chain_id: tx.chainId ?? chainId,
    from: tx.from,
    to: tx.to,
    nonce: tx.nonce,
    value_wei: tx.value.toString(),
    input: tx.input,
    decoded,
  };
  if (tx.blockNumber === null) {
    return { ...base, status: 'pending', block_number: null, block_hash: null, block_time: null, confirmations: 0, checked_at: new Date().toISOString(), gas_used: null };
  }
  const [receipt, latest, block] = await Promise.all([rpc.getTransactionReceipt(hash), rpc.blockNumber(), rpc.getBlock(tx.blockNumber)]);
  const state = transactionState(tx, receipt);
  return {
    ...base,
    status: state === 'succeeded' ? 'confirmed' : state === 'reverted' ? 'reverted' : 'pending',
    block_number: tx.blockNumber,
    block_hash: tx.blockHash,
    block_time: block ? new Date(block.timestamp * 1000).toISOString() : null,
    confirmations: countConfirmations(tx.blockNumber, latest),
    checked_at: new Date().toISOString(),
    gas_used: receipt ? receipt.gasUsed.toString() : null,
  };
}
