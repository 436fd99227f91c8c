import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Config } from './config.js';
import { describeError, log } from './log.js';
import { describeTables } from './store/tables.js';

/**
 * Why a part is down, as health reports it: a fixed vocabulary, so that no internal address
 * (host:port), path, stack or SDK message ever reaches the response. The cause itself goes to
 * the log.
 *   unreachable  no connection, or no answer in time
 *   restarting   the local stack is restarting the part (npm start's supervisor)
 *   misconfigured it answers, but not as configured (another chain id, a table missing)
 *   failing      it answers with an error
 */
export type DownReason = 'unreachable' | 'restarting' | 'misconfigured' | 'failing';

/** State of one part of the service. */
export interface PartState {
  status: 'up' | 'down';
  reason?: DownReason;
  [detail: string]: unknown;
}

class PartDown extends Error {
  constructor(
    readonly reason: DownReason,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Parts the local supervisor (lib/local/stack.ts) knows to be down before any probe could tell:
 * a child process it is restarting, or a ledger node it is replaying the transactions into.
 * Never set in Lambda. State the supervisor sets, not a cache (no lazy or ProcessCache): one entry
 * at most per part it supervises.
 */
const known = new Map<string, DownReason>();

/** Marks a part down (`restarting`) until called again with `undefined`. */
export function setKnownPartState(part: string, reason: DownReason | undefined): void {
  if (reason) known.set(part, reason);
  else known.delete(part);
}

/**
 * Probes every part: tables reachable, chain reachable (chain id, latest block), signing keys loaded.
 * `db` is asked for the client inside the database probe, so that a failure to build it is that part's.
 */
export async function checkHealth(config: Config, db: () => DynamoDBDocumentClient, extraProbes: Record<string, () => Promise<Record<string, unknown>>> = {}) {
  const probes: Record<string, () => Promise<Record<string, unknown>>> = {
    database: async () => ({ tables: await describeTables(db(), config.tables) }),
    ledger: async () => {
      const [chainId, block] = await Promise.all([rpc(config.ledger.rpcUrl, 'eth_chainId'), rpc(config.ledger.rpcUrl, 'eth_blockNumber')]);
      const id = Number(BigInt(chainId as string));
      if (id !== config.ledger.chainId) throw new PartDown('misconfigured', `chain id ${id} differs from the configured ${config.ledger.chainId}`);
      return { network: config.ledger.network, chain_id: id, latest_block: Number(BigInt(block as string)) };
    },
    ...extraProbes,
  };
  const parts: Record<string, PartState> = {};
  await Promise.all(
    Object.entries(probes).map(async ([name, probe]) => {
      const knownDown = known.get(name);
      if (knownDown) {
        parts[name] = { status: 'down', reason: knownDown };
        return;
      }
      try {
        parts[name] = { status: 'up', ...(await withTimeout(probe(), 3000)) };
      } catch (error) {
        const reason = classify(error);
        parts[name] = { status: 'down', reason };
        log.warn('health: a part is down', { part: name, reason, cause: causeOf(error) });
      }
    }),
  );
  const down = Object.entries(parts).filter(([, p]) => p.status === 'down');
  if (down.length === 0) return { status: 'ok' as const, parts };
  return { status: 'degraded' as const, detail: down.map(([name, p]) => `${name}: ${p.reason}`).join('; '), parts };
}

/** For the log only: the message, with the socket error's code that `fetch failed` hides. */
function causeOf(error: unknown): string {
  const code = (error as { cause?: { code?: unknown } } | null)?.cause?.code;
  return `${describeError(error).message}${typeof code === 'string' ? ` (${code})` : ''}`.slice(0, 300);
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);

/** The reason to show for an error of a probe (its message is never shown). */
function classify(error: unknown): DownReason {
  if (error instanceof PartDown) return error.reason;
  const e = (error ?? {}) as { name?: string; message?: string; code?: string; cause?: { code?: string }; $metadata?: { httpStatusCode?: number } };
  if (e.name === 'ResourceNotFoundException' || e.code === 'ENOENT' || e.code === 'EACCES') return 'misconfigured';
  if (
    NETWORK_CODES.has(e.code ?? '') ||
    NETWORK_CODES.has(e.cause?.code ?? '') ||
    e.name === 'TimeoutError' ||
    e.name === 'AbortError' ||
    e.message === 'fetch failed' ||
    e.message?.startsWith('no answer within')
  ) {
    return 'unreachable';
  }
  return 'failing';
}

async function rpc(url: string, method: string): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: [] }),
    signal: AbortSignal.timeout(2500),
  });
  if (!res.ok) throw new Error(`${method}: HTTP ${res.status}`);
  const body = (await res.json().catch(() => ({ error: { message: 'not JSON' } }))) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
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
