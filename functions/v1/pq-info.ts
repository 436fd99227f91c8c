import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { ID_ML_DSA_65, ML_DSA_65_PUBLIC_KEY_BYTES, ML_DSA_65_SIGNATURE_BYTES, mlDsaKeyId, mlDsaPublicKeyFingerprint } from '../../lib/crypto/ml-dsa.js';
import { loadTrustedPqKeys } from '../../lib/deps/verification.js';
import { loadServicePqPublicKey } from '../../lib/deps/pq-key.js';
import { PqInfoResponse } from '../../lib/http/schemas/v1.js';
import { createApp } from '../../lib/http/app.js';
import { serviceUnavailable } from '../../lib/http/errors.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { problemResponses } from '../../lib/http/schemas/common.js';
import { describeError, log } from '../../lib/log.js';

export const route = createRoute({
  method: 'get',
  path: '/api/v1/pq/info',
  tags: ['v1'],
  summary: 'The post-quantum signature algorithm and the public key that signs the evidence (no credentials)',
  description:
    'ML-DSA-65 (FIPS 204, security category 3), pure with an empty context, as AWS KMS and liboqs implement it. public_key is the raw 1952-byte key (base64); ' +
    'fingerprint is its SHA-256, which GET /pq/registration shows published on the ledger. Every evidence signature covers the 32 bytes of server_hash.',
  middleware: [publicRateLimit()] as const,
  responses: {
    200: { description: 'Algorithm and key.', content: { 'application/json': { schema: PqInfoResponse } } },
    ...problemResponses(429, 503),
  },
});

export const app = createApp({ publicCors: true, deps: { trustedPqKeys: loadTrustedPqKeys, servicePqPublicKey: loadServicePqPublicKey } });

app.openapi(route, async (c) => {
  let publicKey: Uint8Array;
  let trusted: string[];
  try {
    // Every ML-DSA-65 key whose signatures verify: the current one, the key registry's (retired ones too) and PQ_TRUSTED_KEY_FINGERPRINTS.
    [publicKey, trusted] = await Promise.all([c.var.deps.servicePqPublicKey(), c.var.deps.trustedPqKeys().then((keys) => keys.map((k) => (typeof k === 'string' ? k : k.sha256)))]);
  } catch (error) {
    log.warn('ML-DSA-65 public key not available', describeError(error));
    throw serviceUnavailable('signer_unavailable', 'The post-quantum public key is not available right now.');
  }
  const fingerprint = mlDsaPublicKeyFingerprint(publicKey);
  c.header('Cache-Control', 'public, max-age=300');
  return c.json(
    {
      algorithm: 'ML-DSA-65' as const,
      standard: 'FIPS 204' as const,
      variant: 'pure ML-DSA, empty context (FIPS 204 Algorithms 2 and 3)',
      security_category: 3 as const,
      oid: ID_ML_DSA_65,
      key_id: mlDsaKeyId(publicKey),
      public_key: Buffer.from(publicKey).toString('base64'),
      fingerprint,
      fingerprint_algorithm: 'SHA-256' as const,
      sizes: { public_key: ML_DSA_65_PUBLIC_KEY_BYTES as 1952, signature: ML_DSA_65_SIGNATURE_BYTES as 3309, secret_key: 4032 as const },
      signed_message: 'server_hash (32 raw bytes) = SHA-256 of the RFC 8785 canonical statement',
      trusted_fingerprints: [...new Set([fingerprint, ...trusted])],
    },
    200,
  );
});

export const handler = handle(app);
