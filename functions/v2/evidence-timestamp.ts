import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { getTimestampAuthorities } from '../../lib/deps/anchoring.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { authorityForPolicy, timestampHash } from '../../lib/evidence/timestamp.js';
import { createApp } from '../../lib/http/app.js';
import { apiKeyAuth } from '../../lib/http/auth.js';
import { jsonBody, problemResponses } from '../../lib/http/schemas/common.js';
import { TimestampHashRequest, TimestampHashResponse } from '../../lib/http/schemas/starter.js';

export const route = createRoute({
  method: 'post',
  path: '/api/v2/evidence/timestamp',
  tags: ['v2 evidence'],
  summary: 'Time-stamp a SHA-256 hash: a stand-alone RFC 3161 token',
  description:
    'A granted RFC 3161 TimeStampResp (DER, base64) whose message imprint is SHA-256 = `sha256_hash`, from the same time-stamping authority and with the same checks as anchoring. ' +
    'Check it with `openssl ts -verify -data photo.jpg -in token.tsr -CAfile root.pem` against the root of GET /api/v2/tsa/certificates. ' +
    'The optional `policy` chooses the authority by its policy OID, as the reqPolicy of POST /api/v2/tsa does: none or the classic policy, an ECDSA P-256 token; ' +
    'the post-quantum policy (TSA_PQ_POLICY_OID, default 2.25.240188381855450738062415899808185980756), an ML-DSA-65 token (RFC 9882: CMS with signatureAlgorithm id-ml-dsa-65, digest SHA-512; ' +
    'its chain from GET /api/v2/tsa/certificates?policy=<oid>; `openssl ts -verify` from OpenSSL 3.5). ' +
    'Any other policy, or the post-quantum one while the post-quantum TSA is off (TSA_PQ=off): 400 unaccepted_policy, nothing issued or charged. ' +
    'Starter tier and above (Free: 403 tier_insufficient); counts one unit of the monthly quota when it succeeds, none when it fails. ' +
    'The answer is recorded for your account on the hash (the latest one wins) so that GET /api/v2/evidence/certificate/{image_hash} shows and attaches it; ' +
    'it is only given out once recorded: if that write fails the request fails with 503 database_unavailable and the unit is refunded. ' +
    '503 tsa_unavailable when the authority does not answer.',
  security: [{ ApiKey: [] }],
  middleware: [apiKeyAuth({ feature: 'timestamp', charge: 'quota' })] as const,
  request: jsonBody(TimestampHashRequest),
  responses: {
    200: { description: 'The token.', content: { 'application/json': { schema: TimestampHashResponse } } },
    ...problemResponses(400, 401, 403, 413, 429, 503),
  },
});

export const app = createApp({ deps: { timestampAuthorities: getTimestampAuthorities, evidenceRepo: getEvidenceRepo } });

app.openapi(route, async (c) => {
  const { sha256_hash, policy } = c.req.valid('json');
  const authority = authorityForPolicy(c.var.deps.timestampAuthorities(), policy);
  const recorder = { store: c.var.deps.evidenceRepo(), accountId: c.var.caller.accountId };
  const answer = await timestampHash(authority, sha256_hash, recorder);
  return c.json(answer, 200);
});

export const handler = handle(app);
