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
