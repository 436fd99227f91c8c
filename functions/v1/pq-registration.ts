import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { mlDsaKeyId, mlDsaPublicKeyFingerprint } from '../../lib/crypto/ml-dsa.js';
import { getConfig } from '../../lib/deps/core.js';
import { getPqRegistrations, getRpcReader } from '../../lib/deps/evidence.js';
import { loadServicePqPublicKey } from '../../lib/deps/pq-key.js';
import { checkPqRegistrationOnChain } from '../../lib/evidence/pq-registration.js';
import { PqRegistrationResponse } from '../../lib/http/schemas/v1.js';
import { createApp } from '../../lib/http/app.js';
import { serviceUnavailable } from '../../lib/http/errors.js';
import { publicRateLimit } from '../../lib/http/limits.js';
import { problemResponses } from '../../lib/http/schemas/common.js';
import { encodePqKeyData, explorerUrl } from '../../lib/ledger/anchor-data.js';
import { describeError, log } from '../../lib/log.js';

export const route = createRoute({
  method: 'get',
  path: '/api/v1/pq/registration',
  tags: ['v1'],
  summary: "The ledger transaction that published the ML-DSA-65 public key's fingerprint (no credentials)",
  description:
    'The service publishes SHA-256 of its ML-DSA-65 public key once, in a 0-value self-transaction of its wallet whose input data is ' +
    'ASCII "ML-DSA-65:" followed by the 32-byte fingerprint (npm run admin -- register-pq-key; npm start does it automatically). ' +
    'The transaction is read from the chain now: tx_status, confirmations, and verified (mined, successful, from the service wallet, data as expected). ' +
    'Not registered yet → 404 with registered:false and the fingerprint that will be registered.',
  middleware: [publicRateLimit()] as const,
  responses: {
    200: { description: 'Registered.', content: { 'application/json': { schema: PqRegistrationResponse } } },
    404: { description: 'Not registered yet: registered:false.', content: { 'application/json': { schema: PqRegistrationResponse } } },
    ...problemResponses(429, 503),
  },
});

export const app = createApp({ publicCors: true, deps: { config: getConfig, pqRegistrations: getPqRegistrations, rpcReader: getRpcReader, servicePqPublicKey: loadServicePqPublicKey } });

app.openapi(route, async (c) => {
  const config = c.var.deps.config();
  let publicKey: Uint8Array;
  try {
    publicKey = await c.var.deps.servicePqPublicKey();
  } catch (error) {
    log.warn('ML-DSA-65 public key not available', describeError(error));
    throw serviceUnavailable('signer_unavailable', 'The post-quantum public key is not available right now.');
  }
  const fingerprint = mlDsaPublicKeyFingerprint(publicKey);
  const base = { algorithm: 'ML-DSA-65' as const, fingerprint, key_id: mlDsaKeyId(publicKey) };
  const registration = await c.var.deps.pqRegistrations().read(fingerprint);
  const txHash = registration?.tx_hash;
  if (!registration || !txHash) {
    c.header('Cache-Control', 'no-cache');
    return c.json({ registered: false, ...base }, 404);
  }
  const check = await checkPqRegistrationOnChain(c.var.deps.rpcReader(), { ...registration, tx_hash: txHash });
  c.header('Cache-Control', check.status === 'confirmed' ? 'public, max-age=60' : 'no-cache');
  return c.json(
    {
      registered: true,
      ...base,
      tx_hash: txHash,
      tx_status: check.status,
      verified: check.status === 'confirmed' && check.data_matches && check.from_matches,
      block_number: check.block_number,
      confirmations: check.confirmations,
      chain_id: registration.chain_id,
      network: config.ledger.network,
      ...(registration.from ? { from: registration.from } : {}),
      input_data: encodePqKeyData(fingerprint),
      explorer_url: explorerUrl(config.ledger.explorerTxUrl, txHash),
      ...(registration.sent_at ? { registered_at: registration.sent_at } : {}),
    },
    200,
  );
});

export const handler = handle(app);
