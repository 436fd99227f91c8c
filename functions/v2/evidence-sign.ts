import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getConfig } from '../../lib/deps/core.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { getEd25519Signer } from '../../lib/deps/signing.js';
import { unavailable } from '../../lib/errors.js';
import { signHash } from '../../lib/evidence/signature.js';
import { createApp } from '../../lib/http/app.js';
import { apiKeyAuth } from '../../lib/http/auth.js';
import { jsonBody, problemResponses } from '../../lib/http/schemas/common.js';
import { SignRequest, SignResponse } from '../../lib/http/schemas/starter.js';
import { describeError, log } from '../../lib/log.js';

export const route = createRoute({
  method: 'post',
  path: '/api/v2/evidence/sign',
  tags: ['v2 evidence'],
  summary: "Sign a SHA-256 hash with the service's Ed25519 key",
  description:
    'The service signs, with Ed25519 (RFC 8032, pure), the UTF-8 bytes of the RFC 8785 canonical form of `statement`, which names the hash, `signed_at`, the key (`key_id`) and the issuer. ' +
    "Optionally send the device's `public_key_hex` and `signature_hex` (Ed25519 over the hash, as for anchors): they are verified (a bad one: 400 invalid_signature) and named in the statement, " +
    "so the answer attests both the device's signature and the service's time. Check it with the key whose `kid` is `key_id` in GET /.well-known/jwks.json, with any Ed25519 implementation. " +
    'Starter tier and above (Free: 403 tier_insufficient); one unit of the monthly quota when it succeeds, none when it fails. ' +
    'The answer is recorded for your account on the hash (the latest one wins) so that GET /api/v2/evidence/certificate/{image_hash} shows and attaches it; ' +
    'it is only given out once recorded: if that write fails the request fails with 503 database_unavailable and the unit is refunded.',
  security: [{ ApiKey: [] }],
  middleware: [apiKeyAuth({ feature: 'ed25519_signing', charge: 'quota' })] as const,
  request: jsonBody(SignRequest),
  responses: {
    200: { description: 'The signed statement.', content: { 'application/json': { schema: SignResponse } } },
    ...problemResponses(400, 401, 403, 413, 429, 503),
  },
});

export const app = createApp({ deps: { config: getConfig, evidenceRepo: getEvidenceRepo, ed25519Signer: getEd25519Signer } });

app.openapi(route, async (c) => {
  const input = c.req.valid('json');
  let signer;
  try {
    signer = await c.var.deps.ed25519Signer();
  } catch (error) {
    log.warn('Ed25519 signer unavailable', describeError(error));
    throw unavailable('signer_unavailable', 'The signing key is unavailable; nothing was signed. Retry the request.');
  }
  const recorder = { store: c.var.deps.evidenceRepo(), accountId: c.var.caller.accountId };
  const answer = await signHash({ signer, issuer: c.var.deps.config().publicBaseUrl, recorder }, input);
  return c.json(answer, 200);
});

export const handler = handle(app);
