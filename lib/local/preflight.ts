import type { Config } from '../config.js';
import { type PortInUseError, probePort } from './net.js';

/**
 * What `npm start` will bind, decided once from the configuration, so that the ports are checked
 * before anything starts (lib/local/start.ts) and the parts then start exactly as checked.
 */
export interface LocalPlan {
  /** dynalite in a child process, unless DYNAMODB_ENDPOINT points at another server. */
  embeddedDynamo: boolean;
  /** A Hardhat node in a child process, unless LEDGER_RPC_URL (or another network) names a node. */
  localChain: boolean;
  /** Every port the start binds, with the variable that sets it. */
  ports: PlannedPort[];
}

export interface PlannedPort {
  variable: 'PORT' | 'DYNAMODB_PORT' | 'LEDGER_RPC_PORT';
  port: number;
  host: string;
}

/** The parts `npm start` runs itself and the ports they bind (the API's on HOST, the children's on 127.0.0.1). */
export function localPlan(config: Config, env: Readonly<Record<string, string | undefined>> = process.env): LocalPlan {
  const embeddedDynamo = !env.DYNAMODB_ENDPOINT?.trim();
  const localChain = config.ledger.network === 'local' && !env.LEDGER_RPC_URL?.trim();
  const ports: PlannedPort[] = [{ variable: 'PORT', port: config.port, host: config.host }];
  if (embeddedDynamo) ports.push({ variable: 'DYNAMODB_PORT', port: config.aws.dynamoPort, host: '127.0.0.1' });
  if (localChain) ports.push({ variable: 'LEDGER_RPC_PORT', port: config.ledger.rpcPort, host: '127.0.0.1' });
  return { embeddedDynamo, localChain, ports };
}

/**
 * Tries every planned port (bind, then close at once) and says what stands in the way, as one
 * line naming each variable, or null when all of them can be bound. Two variables with the same
 * port are a problem too: the second part would find the port taken by the first.
 */
export async function checkPorts(ports: readonly PlannedPort[]): Promise<string | null> {
  const problems: string[] = [];
  const seen = new Map<number, PlannedPort>();
  for (const p of ports) {
    const first = seen.get(p.port);
    if (first) problems.push(`${first.variable} and ${p.variable} are both ${p.port}; set ${p.variable} to another free port`);
    else seen.set(p.port, p);
  }
  const probed = await Promise.all([...seen.values()].map(async (p) => [p, await probePort(p.port, p.host)] as const));
  for (const [p, code] of probed) if (code) problems.push(portProblem(p, code));
  return problems.length ? problems.join('; ') : null;
}

/** The one line for a part that met a busy port after the check (another program took it meanwhile). */
export function portInUseLine(error: PortInUseError, ports: readonly PlannedPort[]): string {
  const p = ports.find((q) => q.port === error.port);
  return p ? portProblem(p, 'EADDRINUSE') : `port ${error.port} on ${error.host} is already in use`;
}

function portProblem(p: PlannedPort, code: string): string {
  const where = `port ${p.port} (${p.variable}) on ${p.host}`;
  if (code === 'EADDRINUSE') return `${where} is already in use; set ${p.variable} to a free port`;
  if (code === 'EACCES') return `${where} may not be bound by this user (EACCES); set ${p.variable} to a free port above 1023`;
  if (code === 'EADDRNOTAVAIL' && p.variable === 'PORT') return `${where} cannot be bound: ${p.host} is not an address of this machine; set HOST to one`;
  return `${where} cannot be bound (${code}); set ${p.variable} to a free port`;
}
