import { createRoute } from '@hono/zod-openapi';
import { handle } from 'hono/aws-lambda';
import type { TimestampAuthority } from '../../lib/crypto/ports.js';
import { EmbeddedTsa } from '../../lib/crypto/tsa/embedded.js';
import { getTsa } from '../../lib/deps/anchoring.js';
import { TimestampRequest, TimestampResponse } from '../../lib/http/schemas/v1.js';
import { createApp } from '../../lib/http/app.js';
import { apiKeyAuth } from '../../lib/http/auth.js';
import { badRequest, HttpError, serviceUnavailable } from '../../lib/http/errors.js';
import { jsonBody, problemResponses } from '../../lib/http/schemas/common.js';
import { describeError, log } from '../../lib/log.js';

export const route = createRoute({
  method: 'post',
  path: '/api/v1/timestamp',
  tags: ['v1'],
  summary: 'Time-stamp a SHA-256 hash: a stand-alone RFC 3161 token',
  description:
    'Returns a granted RFC 3161 TimeStampResp (DER, base64) whose message imprint is the given SHA-256 hash, from the configured time-stamping authority, ' +
    'with the certificates included (certReq) and the TSA chain alongside. Starter tier and above; counts one unit of the monthly quota when it succeeds. ' +
    'Nothing is stored: the token is the proof. An optional nonce is echoed in the token (RFC 3161 §2.4.1); the embedded TSA honours it, ' +
    'a remote TSA chooses its own (a nonce then gives 400 nonce_not_supported). 503 tsa_unavailable when the authority does not answer.',
  security: [{ ApiKey: [] }],
  middleware: [apiKeyAuth({ feature: 'timestamp', charge: 'quota' })] as const,
  request: jsonBody(TimestampRequest),
  responses: {
    200: { description: 'The token.', content: { 'application/json': { schema: TimestampResponse } } },
    ...problemResponses(400, 401, 403, 413, 429, 503),
  },
});

export const app = createApp({ deps: { tsa: getTsa } });

app.openapi(route, async (c) => {
  const { hash, nonce } = c.req.valid('json');
  const requestedNonce = nonce === undefined ? undefined : BigInt(nonce);
  const tsa = await tsaOrUnavailable(c.var.deps.tsa);
  if (requestedNonce !== undefined && !(tsa instanceof EmbeddedTsa)) {
    throw badRequest('nonce_not_supported', 'The configured time-stamping authority chooses its own nonce; send the request without one.');
  }
  const imprint = Buffer.from(hash, 'hex');
  const [issued, certificates] = await unavailableOnError(() =>
    Promise.all([
      tsa instanceof EmbeddedTsa && requestedNonce !== undefined
        ? tsa.issue({ imprint, nonce: requestedNonce, certReq: true })
        : tsa.timestamp(imprint),
      tsa.certificates(),
    ]),
  );
  return c.json(
    {
      timestamp_token: Buffer.from(issued.response).toString('base64'),
      hash,
      hash_algorithm: 'SHA-256' as const,
      gen_time: issued.genTime.toISOString(),
      serial: issued.serial,
      policy: issued.policy,
      ...(requestedNonce !== undefined ? { nonce: requestedNonce.toString() } : {}),
      tsa_certificates: certificates,
    },
    200,
  );
});

async function tsaOrUnavailable(tsa: () => Promise<TimestampAuthority>): Promise<TimestampAuthority> {
  return unavailableOnError(tsa);
}

/** A failing authority is a 503 with a stable code; its cause is logged, not sent. */
async function unavailableOnError<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof HttpError) throw error;
    log.warn('time-stamping authority failed', describeError(error));
    throw serviceUnavailable('tsa_unavailable', 'The time-stamping authority is unavailable; no token was issued. Retry the request.');
  }
}

export const handler = handle(app);
