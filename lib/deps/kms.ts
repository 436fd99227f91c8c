import type { KMSClient } from '@aws-sdk/client-kms';
import { createKmsClient } from '../crypto/kms-client.js';
import { getConfig } from './core.js';
import { lazy } from './lazy.js';

/**
 * The process's one KMS client (lib/crypto/kms-client.ts sets its deadlines), built on first use
 * and shared by every KMS key of the service: the signers, the TSA keys, the PDF signer and the
 * wallet. Only the modules of lib/deps that use KMS import this one, so functions that use none
 * never load the KMS SDK.
 */
export const getKmsClient: () => KMSClient = /* @__PURE__ */ lazy(
  () => createKmsClient(getConfig().aws.region),
  (client) => client.destroy(),
);
