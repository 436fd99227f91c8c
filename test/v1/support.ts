/** Helpers of the v1 tests: a device speaking the v1 anchor request, and the v1 apps loaded after the stack is up. */
import { type Device, randomHash } from '../support/client.js';

/** The v1 anchor request body for a device's next link (api-v1.md "Anchor request"). */
export function v1Body(device: Device, imageHash = randomHash(), extra: Record<string, unknown> = {}) {
  const { sha256_hash, ...rest } = device.next(imageHash);
  return { image_hash: sha256_hash, ...rest, ...extra };
}

/** Imports every v1 function app (after useStack(): they read the configuration on first use). */
export async function loadV1Apps() {
  return {
    anchor: (await import('../../functions/v1/chain-anchor.js')).app,
    verify: (await import('../../functions/v1/chain-verify.js')).app,
    timestamp: (await import('../../functions/v1/timestamp.js')).app,
    chainAll: (await import('../../functions/v1/chain-all.js')).app,
    pqInfo: (await import('../../functions/v1/pq-info.js')).app,
    pqVerify: (await import('../../functions/v1/pq-verify.js')).app,
    pqRegistration: (await import('../../functions/v1/pq-registration.js')).app,
    ledgerStatus: (await import('../../functions/v1/ledger-status.js')).app,
    ledgerVerify: (await import('../../functions/v1/ledger-verify.js')).app,
    stats: (await import('../../functions/v1/stats.js')).app,
    health: (await import('../../functions/v1/health.js')).app,
  };
}

export type V1Apps = Awaited<ReturnType<typeof loadV1Apps>>;
