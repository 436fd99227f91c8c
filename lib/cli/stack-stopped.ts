/**
 * The one "is npm start running?" check of the local key rotations (rotate-key, rotate-tsa-*): a
 * running stack holds its keys in memory and would go on signing with the one a rotation retires.
 * The API port (PORT on HOST) in use counts as running: npm start binds it, and a stack whose API
 * is frozen or slow still holds the port (asking its health could miss it).
 */
import type { Config } from '../config.js';
import { probePort } from '../local/net.js';

export async function stackHoldsPort(config: Pick<Config, 'host' | 'port'>): Promise<boolean> {
  return (await probePort(config.port, config.host)) === 'EADDRINUSE';
}
