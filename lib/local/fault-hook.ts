/**
 * The crash-point fault hook (the sweep, `npm run sweep`; FoundationDB's and TigerBeetle's way):
 * with EVIDENCE_FAULT_KILL_AT=k, the k-th call to DynamoDB or the ledger made for an armed request
 * SIGKILLs this process, before the call leaves (EVIDENCE_FAULT_KILL_WHEN=before) or after its
 * answer arrived and before the caller sees it (=after: "written but not answered"). A request is
 * armed by the header `x-fault-arm: 1`; every call made in its async context counts (the
 * middleware's, the anchor's, the batch sealing it does), the reconciler's do not. A start-up
 * step can be armed too (`arm`: the second half of a wallet rotation, lib/local/wallet-rotation.ts), and so can
 * the change feed's applying of each batch (EVIDENCE_FAULT_ARM=feed: lib/local/change-feed.ts). The response of
 * an armed request that was not killed says how many calls it made (`x-fault-calls`), so a first
 * run measures the path's length. Installed by lib/local/stack.ts only when the variable is set;
 * the children (dynalite, the ledger node) exit with this process, as after any SIGKILL.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { type Port, type Send, setPortWrapper } from '../deps/port-hooks.js';
import type { LocalFetch } from './server.js';

interface Armed {
  calls: number;
}

export interface FaultHook {
  /** Runs armed requests inside the counting context and reports their call count. */
  wrapFetch(fetch: LocalFetch): LocalFetch;
  /** Runs a start-up step (the wallet rotation's second half) armed; prints how many calls it made. */
  arm<T>(step: string, run: () => Promise<T>): Promise<T>;
}

export function installFaultHook(plan: { killAt: number; when: 'before' | 'after' }): FaultHook {
  const context = new AsyncLocalStorage<Armed>();
  let total = 0;
  const kill = (index: number, port: Port, what: string) => {
    process.stderr.write(`fault-hook: SIGKILL at call ${index} (${port} ${what}, ${plan.when})\n`);
    process.kill(process.pid, 'SIGKILL');
  };
  setPortWrapper((port: Port, send: Send): Send => {
    return (async (...args: never[]) => {
      const armed = context.getStore();
      if (!armed) return send(...args);
      armed.calls += 1;
      // This call's own number: calls run side by side, so the count may have moved on by the time its answer arrives.
      const index = ++total;
      const what = describeCall(args[0]);
      if (index === plan.killAt && plan.when === 'before') kill(index, port, what);
      const result = await send(...args);
      if (index === plan.killAt && plan.when === 'after') kill(index, port, what);
      return result;
    }) as Send;
  });
  return {
    arm: async (step, run) => {
      const armed: Armed = { calls: 0 };
      const value = await context.run(armed, run);
      process.stderr.write(`fault-hook: ${step} made ${armed.calls} calls\n`);
      return value;
    },
    wrapFetch: (fetch) => async (request, env) => {
      if (request.headers.get('x-fault-arm') !== '1') return fetch(request, env);
      const armed: Armed = { calls: 0 };
      const response = await context.run(armed, () => fetch(request, env));
      const headers = new Headers(response.headers);
      headers.set('x-fault-calls', String(armed.calls));
      return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
    },
  };
}

/** The call's name for the log line: the DynamoDB command or the JSON-RPC method. */
function describeCall(first: unknown): string {
  if (typeof first === 'string') return first;
  return (first as { constructor?: { name?: string } } | undefined)?.constructor?.name ?? 'call';
}
