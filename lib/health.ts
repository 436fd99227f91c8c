import type { Config } from './config.js';
import { getDb } from './deps/core.js';
import { describeError } from './log.js';
import { describeTables } from './store/tables.js';

/** State of one part of the service. */
export interface PartState {
  status: 'up' | 'down';
  [detail: string]: unknown;
}

/** Probes every part: tables reachable, chain reachable (chain id, latest block), signing keys loaded. */
export async function checkHealth(config: Config, extraProbes: Record<string, () => Promise<Record<string, unknown>>> = {}) {
  const probes: Record<string, () => Promise<Record<string, unknown>>> = {
    database: async () => ({ tables: await describeTables(getDb(), config.tables) }),
    ledger: async () => {
      const [chainId, block] = await Promise.all([rpc(config.ledger.rpcUrl, 'eth_chainId'), rpc(config.ledger.rpcUrl, 'eth_blockNumber')]);
      const id = Number(BigInt(chainId as string));
      if (id !== config.ledger.chainId) throw new Error(`chain id ${id} differs from the configured ${config.ledger.chainId}`);
      return { network: config.ledger.network, chain_id: id, latest_block: Number(BigInt(block as string)) };
    },
    ...extraProbes,
  };
  const parts: Record<string, PartState> = {};
  await Promise.all(
    Object.entries(probes).map(async ([name, probe]) => {
      try {
        parts[name] = { status: 'up', ...(await withTimeout(probe(), 3000)) };
      } catch (error) {
        // The message says which part is down; SDK internals and stacks stay out of the response.
        parts[name] = { status: 'down', reason: describeError(error).message.slice(0, 200) };
      }
    }),
  );
  const healthy = Object.values(parts).every((p) => p.status === 'up');
  return { status: healthy ? ('ok' as const) : ('degraded' as const), parts };
}

async function rpc(url: string, method: string): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: [] }),
    signal: AbortSignal.timeout(2500),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(body.error.message);
  return body.result;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => (clearTimeout(t), resolve(v)),
      (e: unknown) => (clearTimeout(t), reject(e instanceof Error ? e : new Error(String(e)))),
    );
  });
}
