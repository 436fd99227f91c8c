/**
 * The seam where a test harness may watch the two ports the anchoring state machines write
 * through: the DynamoDB document client and the ledger's JSON-RPC provider. In production nothing
 * is registered and the ports are used as built. The local stack registers the crash-point fault
 * hook (lib/local/fault-hook.ts) only when EVIDENCE_FAULT_KILL_AT is set (the sweep, `npm run sweep`).
 */
export type Port = 'dynamodb' | 'ledger';
export type Send = (...args: never[]) => Promise<unknown>;
export type PortWrapper = (port: Port, send: Send) => Send;

/** A registration, not a cache (no lazy): set by the local stack before anything is built. */
let wrapper: PortWrapper | undefined;

/** Registers the wrapper every port built from now on goes through (the local stack, before it builds anything). */
export function setPortWrapper(w: PortWrapper | undefined): void {
  wrapper = w;
}

/** Routes `target.send` through the registered wrapper, if any (the composition root, as it builds a port). */
export function watchPort<T extends { send: unknown }>(port: Port, target: T): T {
  if (wrapper) (target as { send: Send }).send = wrapper(port, (target.send as Send).bind(target));
  return target;
}
