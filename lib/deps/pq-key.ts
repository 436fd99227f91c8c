import { loadPqPublicKey } from '../evidence/pq-registration.js';
import { getConfig } from './core.js';

/**
 * The service's ML-DSA-65 public key for the public pq endpoints (v1 /pq/info, /pq/registration):
 * the public key file; only when there is none and the signer is in KMS, the signer itself
 * (KMS GetPublicKey), loaded on demand so that the file path never builds a signer. Apart from
 * lib/deps/verification.ts: the verification functions must not bundle the anchoring wiring.
 */
export function loadServicePqPublicKey(): Promise<Uint8Array> {
  return loadPqPublicKey(getConfig().signer, async () => {
    const { getSigner } = await import('./anchoring.js');
    return (await getSigner()).publicKey();
  });
}
