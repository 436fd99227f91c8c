/** Network helpers of the local stack, its tests and its benchmark. */
import { createServer, type AddressInfo } from 'node:net';

/** A TCP port that was free a moment ago on 127.0.0.1 (the caller binds it soon after). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A part of the local stack could not listen on its port because something else holds it. Each
 * part throws it (the API server, dynalite's child, the Hardhat node), so that `npm start` can
 * name the variable that set the port in one line, whichever part met the busy port.
 */
export class PortInUseError extends Error {
  constructor(
    readonly port: number,
    readonly host: string,
    readonly part: string,
    options?: ErrorOptions,
  ) {
    super(`Cannot start ${part}: port ${port} on ${host} is already in use`, options);
    this.name = 'PortInUseError';
  }
}

/**
 * Whether `host:port` can be bound now: null when it can (the probe is closed again before this
 * resolves), else the error code (`EADDRINUSE`, `EACCES`, `EADDRNOTAVAIL`, …).
 */
export function probePort(port: number, host: string): Promise<string | null> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    // exclusive: in a cluster worker too, this process itself must bind the port.
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}
