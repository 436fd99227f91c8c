import type { AddressInfo } from 'node:net';
import { createDynalite } from './dynalite-store.mjs';

/** A running embedded DynamoDB-compatible server (dynalite). */
export interface EmbeddedDynamo {
  endpoint: string;
  port: number;
  /** Lets this process exit while the server listens (tests). */
  unref(): void;
  stop(): Promise<void>;
}

/**
 * Starts dynalite on 127.0.0.1. With `dir` the data lives on disk there, in SQLite (and survives a
 * restart; lib/local/dynalite-store.mjs); without it, in memory (tests). Table operations complete
 * at once instead of dynalite's simulated 500 ms, which real DynamoDB would take; nothing else
 * about its behaviour changes.
 */
export async function startEmbeddedDynamo(options: { port?: number; dir?: string } = {}): Promise<EmbeddedDynamo> {
  const server = await createDynalite(options.dir ? { dir: options.dir } : {});
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    unref: () => {
      server.unref();
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      }),
  };
}
