import type { AddressInfo } from 'node:net';
import { resetCoreDeps } from '../../lib/deps/core.js';
import { buildLocalApi, listenLocalApi } from '../../lib/local/server.js';

/** The service over real HTTP on a free port of 127.0.0.1, as `npm start` serves it. */
export interface HttpService {
  url: string;
  close(): Promise<void>;
}

/**
 * Serves every registry route (lib/local/server.ts) on 127.0.0.1:0. Call after useStack().
 * PUBLIC_BASE_URL is pointed at the server, so the local explorer links (LEDGER_EXPLORER_TX_URL
 * defaults to `${PUBLIC_BASE_URL}/ledger/tx/{tx_hash}`) resolve to this very server.
 */
export async function startHttpService(): Promise<HttpService> {
  const api = await buildLocalApi();
  const server = await listenLocalApi(api, { port: 0, hostname: '127.0.0.1' });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  process.env.PUBLIC_BASE_URL = url;
  resetCoreDeps();
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
