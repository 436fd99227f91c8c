import { LedgerUnavailableError, sanitizeDetail } from './errors.js';

/**
 * A small read-only Ethereum JSON-RPC client over fetch. Verification paths use it instead of
 * ethers (which costs ~100 ms and megabytes to load in a cold Lambda). Quantities are decoded to
 * numbers (block numbers, nonces) or bigints (wei, gas); hashes and addresses come back lower case.
 * Every failure (unreachable, timeout, HTTP or JSON-RPC error) is a LedgerUnavailableError whose
 * message names neither the URL nor the node's raw text (a provider URL may embed an API key).
 */

export type BlockTag = 'latest' | 'pending' | 'safe' | 'finalized' | 'earliest' | number;

export interface RpcTransaction {
  hash: string;
  from: string;
  to: string | null;
  nonce: number;
  /** 0x-prefixed input data. */
  input: string;
  value: bigint;
  type: number;
  chainId: number | null;
  /** null while pending. */
  blockNumber: number | null;
  blockHash: string | null;
}

export interface RpcReceipt {
  transactionHash: string;
  from: string;
  to: string | null;
  /** 'success' (status 1) or 'reverted' (status 0). */
  status: 'success' | 'reverted';
  blockNumber: number;
  blockHash: string;
  gasUsed: bigint;
  effectiveGasPrice: bigint | null;
}

export interface RpcBlock {
  number: number;
  hash: string;
  /** Seconds since the epoch. */
  timestamp: number;
  baseFeePerGas: bigint | null;
  /** Transaction hashes. */
  transactions: string[];
}

export interface RpcReaderOptions {
  /** Per request; default 5000 ms. */
  timeoutMs?: number;
}

const HASH = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

function quantity(value: unknown, field: string): bigint {
  if (typeof value !== 'string' || !/^0x[0-9a-fA-F]+$/.test(value)) {
    throw new LedgerUnavailableError(`The ledger node returned a malformed ${field}`, 'rejected');
  }
  return BigInt(value);
}
const num = (value: unknown, field: string): number => Number(quantity(value, field));
const optNum = (value: unknown, field: string): number | null => (value === null || value === undefined ? null : num(value, field));
const lower = (value: unknown): string => (typeof value === 'string' ? value.toLowerCase() : '');
const lowerOrNull = (value: unknown): string | null => (typeof value === 'string' ? value.toLowerCase() : null);

function encodeTag(tag: BlockTag): string {
  if (typeof tag === 'number') {
    if (!Number.isSafeInteger(tag) || tag < 0) throw new TypeError('a block number is a non-negative integer');
    return `0x${tag.toString(16)}`;
  }
  return tag;
}

export class RpcReader {
  private nextId = 1;
  private readonly timeoutMs: number;
  /** Where the node is, for messages: host and port only. */
  private readonly where: string;

  constructor(
    private readonly url: string,
    options: RpcReaderOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 5000;
    let host = 'the configured RPC endpoint';
    try {
      const u = new URL(url);
      if (u.hostname === '127.0.0.1' || u.hostname === 'localhost') host = u.host;
    } catch {
      throw new TypeError('the ledger RPC URL is not a valid URL');
    }
    this.where = host;
  }

  /** One JSON-RPC call; the result as the node sent it. */
  async call<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    const id = this.nextId++;
    let response: Response;
    try {
      response = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      const name = (error as { name?: string }).name;
      if (name === 'TimeoutError' || name === 'AbortError') {
        throw new LedgerUnavailableError(`The ledger node (${this.where}) did not answer ${method} within ${this.timeoutMs} ms`, 'timeout');
      }
      const cause = (error as { cause?: unknown }).cause;
      throw new LedgerUnavailableError(`The ledger node (${this.where}) is unreachable`, 'unreachable', sanitizeDetail(cause ?? error));
    }
    let body: { result?: unknown; error?: { code?: number; message?: string } };
    try {
      body = (await response.json()) as typeof body;
    } catch {
      throw new LedgerUnavailableError(`The ledger node (${this.where}) answered ${method} with HTTP ${response.status} and no JSON-RPC body`, 'rejected');
    }
    if (body.error) {
      throw new LedgerUnavailableError(
        `The ledger node (${this.where}) refused ${method}`,
        'rejected',
        sanitizeDetail(`${body.error.code ?? ''} ${body.error.message ?? ''}`),
      );
    }
    if (!response.ok) {
      throw new LedgerUnavailableError(`The ledger node (${this.where}) answered ${method} with HTTP ${response.status}`, 'rejected');
    }
    return body.result as T;
  }

  async chainId(): Promise<number> {
    return num(await this.call('eth_chainId'), 'chain id');
  }

  async blockNumber(): Promise<number> {
    return num(await this.call('eth_blockNumber'), 'block number');
  }

  async getBalance(address: string, tag: BlockTag = 'latest'): Promise<bigint> {
    if (!ADDRESS.test(address)) throw new TypeError('an address is 0x followed by 40 hex characters');
    return quantity(await this.call('eth_getBalance', [address, encodeTag(tag)]), 'balance');
  }

  async getTransactionCount(address: string, tag: BlockTag = 'latest'): Promise<number> {
    if (!ADDRESS.test(address)) throw new TypeError('an address is 0x followed by 40 hex characters');
    return num(await this.call('eth_getTransactionCount', [address, encodeTag(tag)]), 'nonce');
  }

  /** The transaction, or null when the node does not know the hash. */
  async getTransaction(hash: string): Promise<RpcTransaction | null> {
    if (!HASH.test(hash)) throw new TypeError('a transaction hash is 0x followed by 64 hex characters');
    const tx = await this.call<Record<string, unknown> | null>('eth_getTransactionByHash', [hash]);
    if (!tx) return null;
    return {
      hash: lower(tx.hash),
      from: lower(tx.from),
      to: lowerOrNull(tx.to),
      nonce: num(tx.nonce, 'nonce'),
      input: lower(tx.input ?? tx.data ?? '0x'),
      value: quantity(tx.value ?? '0x0', 'value'),
      type: optNum(tx.type, 'type') ?? 0,
      chainId: optNum(tx.chainId, 'chain id'),
      blockNumber: optNum(tx.blockNumber, 'block number'),
      blockHash: lowerOrNull(tx.blockHash),
    };
  }

  /** The receipt, or null while the transaction is pending or unknown. */
  async getTransactionReceipt(hash: string): Promise<RpcReceipt | null> {
    if (!HASH.test(hash)) throw new TypeError('a transaction hash is 0x followed by 64 hex characters');
    const r = await this.call<Record<string, unknown> | null>('eth_getTransactionReceipt', [hash]);
    if (!r || r.blockNumber === null || r.blockNumber === undefined) return null;
    return {
      transactionHash: lower(r.transactionHash),
      from: lower(r.from),
      to: lowerOrNull(r.to),
      status: num(r.status, 'status') === 1 ? 'success' : 'reverted',
      blockNumber: num(r.blockNumber, 'block number'),
      blockHash: lower(r.blockHash),
      gasUsed: quantity(r.gasUsed, 'gas used'),
      effectiveGasPrice: r.effectiveGasPrice === undefined || r.effectiveGasPrice === null ? null : quantity(r.effectiveGasPrice, 'gas price'),
    };
  }

  /** The block (transaction hashes only), or null when it does not exist (yet). */
  async getBlock(tag: BlockTag = 'latest'): Promise<RpcBlock | null> {
    const b = await this.call<Record<string, unknown> | null>('eth_getBlockByNumber', [encodeTag(tag), false]);
    if (!b) return null;
    return {
      number: num(b.number, 'block number'),
      hash: lower(b.hash),
      timestamp: num(b.timestamp, 'timestamp'),
      baseFeePerGas: b.baseFeePerGas === undefined || b.baseFeePerGas === null ? null : quantity(b.baseFeePerGas, 'base fee'),
      transactions: Array.isArray(b.transactions) ? b.transactions.map((t) => lower(typeof t === 'string' ? t : (t as { hash?: unknown }).hash)) : [],
    };
  }
}
