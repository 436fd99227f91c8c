import { createRoute, z } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import { EmbeddedTsa } from '../../lib/crypto/tsa/embedded.js';
import { parseTimeStampRequest } from '../../lib/crypto/tsa/tsa-request.js';
import { getPqTsa, getTsa } from '../../lib/deps/anchoring.js';
import { tsaUnavailable } from '../../lib/evidence/timestamp.js';
import { getConfig } from '../../lib/deps/core.js';
import { createApp } from '../../lib/http/app.js';
import { apiKeyAuth } from '../../lib/http/auth.js';
import { badRequest } from '../../lib/http/errors.js';
import { markNotCompleted } from '../../lib/http/limits.js';
import { requireMediaType } from '../../lib/http/media-type.js';
import { Problem, problemResponses } from '../../lib/http/schemas/common.js';
import { describeError, log } from '../../lib/log.js';

/** RFC 3161 §3.4: the MIME types of a time-stamp request and reply over HTTP. */
const QUERY_TYPE = 'application/timestamp-query';
const REPLY_TYPE = 'application/timestamp-reply';
const Binary = z.string().openapi({ type: 'string', format: 'binary' });

export const route = createRoute({
  method: 'post',
  path: '/api/v2/tsa',
  tags: ['v2 evidence'],
  summary: 'RFC 3161 time-stamping over HTTP: a TimeStampReq in, a TimeStampResp out',
  description:
    'The service\'s time-stamping authority for any standard RFC 3161 client (`openssl ts -query … | curl --data-binary @- -H "Content-Type: application/timestamp-query"`, the `tsaUrl` of PDF signers and C2PA tools). ' +
    'Body: a DER TimeStampReq (RFC 3161 §2.4.1), `Content-Type: application/timestamp-query`. Answer: a DER TimeStampResp (§2.4.2), `Content-Type: application/timestamp-reply`, HTTP 200. ' +
    'The request\'s nonce is echoed, `certReq` decides whether the certificates are in the token, SHA-256, SHA-384 and SHA-512 imprints are accepted (NULL or absent parameters, answered as sent). ' +
    'The request chooses the signature by its `reqPolicy`: none, or the classic policy (TSA_POLICY_OID, default 2.25.32470788606908332339531699348079175478), gets an ECDSA P-256 token; the post-quantum policy (TSA_PQ_POLICY_OID, default 2.25.240188381855450738062415899808185980756) gets an ML-DSA-65 token (CMS per RFC 9882: signatureAlgorithm id-ml-dsa-65, digest SHA-512, signed attributes; its certificates per RFC 9881, from `GET /api/v2/tsa/certificates?policy=<oid>`), e.g. `openssl ts -query -sha256 -cert -tspolicy 2.25.240188381855450738062415899808185980756`. ' +
    'A request the TSA cannot honour is answered, as RFC 3161 says, with a TimeStampResp of status `rejection` (2) and the PKIFailureInfo bit: `unacceptedPolicy` for a reqPolicy that is neither policy (or the post-quantum one while the post-quantum TSA is off), `badAlg` for another hash, `unacceptedExtension` for any extension; a rejection consumes no quota. ' +
    'A body that is not a DER TimeStampReq: 400 problem+json `invalid_timestamp_request`. ' +
    'A body sent without `Content-Type: application/timestamp-query` (none, JSON, text/plain, a form encoding, …; compared case-insensitively, parameters aside): 415 problem+json `unsupported_media_type`, answered before the credentials are read, so it counts nothing and carries no `WWW-Authenticate` challenge: an HTML form of another site, which a browser may send with cached Basic credentials, cannot spend the quota. ' +
    'Credentials: `X-API-Key`, or HTTP Basic with the API key as the password and any user name (a 401 carries `WWW-Authenticate: Basic`). Starter tier and above; each granted token counts one unit of the monthly quota. ' +
    'A C2PA signer (c2pa-rs and the SDKs built on it) is given only a time authority URL: put the key in its user-info, `https://c2pa:<API key>@<host>/api/v2/tsa`, which c2pa-rs\'s blocking HTTP client (ureq) sends as Basic credentials; a signer that can add headers sends `X-API-Key` instead (c2pa-rs: `Signer::time_stamp_request_headers`). c2pa-rs requires the reply\'s type to be exactly `application/timestamp-reply`, as it is here. The ECDSA token (no `reqPolicy`) is the one C2PA readers check (docs/c2pa.md). ' +
    'Only with the embedded TSA (TSA_SCHEME=embedded); with a remote TSA this endpoint answers 503 tsa_unavailable.',
  security: [{ ApiKey: [] }, { Basic: [] }],
  middleware: [
    // The type first, before the credentials (lib/http/media-type.ts).
    requireMediaType(QUERY_TYPE, `Send a DER TimeStampReq with Content-Type: ${QUERY_TYPE} (RFC 3161 §3.4); nothing was read or counted.`),
    apiKeyAuth({ feature: 'timestamp', charge: 'quota', basicRealm: 'evidence-tsa' }),
  ] as const,
  request: { body: { required: true, description: 'A DER TimeStampReq.', content: { [QUERY_TYPE]: { schema: Binary } } } },
  responses: {
    200: { description: 'A DER TimeStampResp: granted, or a rejection with its PKIFailureInfo.', content: { [REPLY_TYPE]: { schema: Binary } } },
    ...problemResponses(400, 401, 403, 413, 429, 503),
    415: {
      description: `The body is not sent as Content-Type: ${QUERY_TYPE} (RFC 3161 §3.4): refused before the credentials are read; nothing is counted, no challenge is sent.`,
      content: { 'application/problem+json': { schema: Problem } },
    },
  },
});

export const app = createApp({ deps: { pqTsa: getPqTsa, tsa: getTsa, config: getConfig } });

app.openapi(route, async (c) => {
  const body = new Uint8Array(await c.req.arrayBuffer());
  let reqPolicy: string | undefined;
  try {
    reqPolicy = parseTimeStampRequest(body).reqPolicy;
  } catch {
    throw badRequest('invalid_timestamp_request', `The body is not a DER TimeStampReq (RFC 3161 §2.4.1); send one with Content-Type: ${QUERY_TYPE}.`);
  }
  let tsa;
  try {
    // The policy chooses the TSA (decisions.md "Post-quantum time"); any other policy reaches the
    // classic TSA, which rejects it with unacceptedPolicy (RFC 3161 §2.4.2).
    const pq = reqPolicy !== undefined && reqPolicy === c.var.deps.config().tsa.pq?.policyOid ? await c.var.deps.pqTsa() : undefined;
    tsa = pq ?? (await c.var.deps.tsa());
  } catch (error) {
    log.warn('time-stamping authority failed', describeError(error));
    throw tsaUnavailable();
  }
  if (!(tsa instanceof EmbeddedTsa)) throw tsaUnavailable();
  const answer = await tsa.answer(body);
  if (!answer.granted) {
    // RFC 3161: the refusal is a TimeStampResp like any other, but no token was issued.
    markNotCompleted(c);
    log.info('time-stamp request rejected', { request_id: c.get('requestId'), failure: answer.failure });
  }
  return c.body(answer.response.buffer.slice(answer.response.byteOffset, answer.response.byteOffset + answer.response.byteLength) as ArrayBuffer, 200, {
    'Content-Type': REPLY_TYPE,
    'Cache-Control': 'no-store',
  });
});

export const handler = handle(app);
