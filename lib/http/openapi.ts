import { OpenAPIHono } from '@hono/zod-openapi';
import { ROUTES } from './registry.js';

/** A function module's app, as far as the OpenAPI document needs it. */
export interface DocumentedApp {
  openAPIRegistry: OpenAPIHono['openAPIRegistry'];
}

type Json = Record<string, unknown>;

const header = (description: string, schema: Json = { type: 'string' }, required = false) => ({ description, required, schema });

/** Response headers, documented once and referenced from every response that carries them. */
const HEADERS: Record<string, Json> = {
  XRequestId: header('The request id (yours, from a sane X-Request-Id, or a new one); quote it when you report a problem.', { type: 'string' }, true),
  ETag: header('A digest of the body (RFC 9110 §8.8.3); send it back as If-None-Match to get 304 while nothing changed.', { type: 'string' }, true),
  RateLimitPolicy: header('The limit that counted this request (draft-ietf-httpapi-ratelimit-headers): `"<name>";q=<requests>;w=60`; names: account (API key), account-endpoints (JWT), ip (public reads, per client address: counted by the service itself only where PUBLIC_RATE_LIMIT=process; in production the edge limits them and these fields are absent on public reads), ip-auth (register and login).', { type: 'string', example: '"account";q=200;w=60' }),
  RateLimit: header('What is left of it: `"<name>";r=<remaining>;t=<seconds until the window ends>`.', { type: 'string', example: '"account";r=199;t=42' }),
  RateLimitLimit: header('Requests allowed in the current window (draft-ietf-httpapi-ratelimit-headers, older field set).', { type: 'integer' }),
  RateLimitRemaining: header('Requests left in the current window.', { type: 'integer' }),
  RateLimitReset: header('Seconds until the window ends.', { type: 'integer' }),
  RetryAfter: header('Seconds to wait before retrying (RFC 9110 §10.2.3): on every 429, on 503 from a dependency, on a 409 while another request holds the hash.', { type: 'integer' }),
};

/** Reads that answer with an ETag and 304 for a matching If-None-Match (createApp `etag`). */
const CONDITIONAL = new Set(['getApiReferenceFile', 'getEvidenceReceipt', 'verifyEvidence', 'v1VerifyChainEntry', 'v1VerifyLedgerEntry', 'v1VerifyPqSignature']);

/** Operations that count against a rate limit and so carry the RateLimit fields. */
const UNCOUNTED = new Set(['setAccountTier', 'getOpenApiDocument', 'viewProblemType', 'viewApiReference', 'getApiReferenceFile', 'viewLandingPage', 'viewDashboard']);
/** Operations that read no table, node or key: they never answer 503. */
const STATIC = new Set(['getOpenApiDocument', 'viewProblemType', 'viewApiReference', 'getApiReferenceFile', 'viewLandingPage', 'viewDashboard']);

const PROBLEM = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };

/**
 * One OpenAPI 3.1 document for the whole service, merged from the route definitions every
 * function registered with its own schemas: the schemas that validate requests are the ones
 * documented, so the two cannot drift apart. What every operation shares is added here, once:
 * the operationId (infra/functions.json), `security: []` for public operations, the response
 * headers, and the statuses any operation can answer (415 for a JSON body sent as another type,
 * 500, 503).
 */
export function buildOpenApiDocument(apps: DocumentedApp[], serverUrl: string) {
  // Each app documents its own routes; paths and component schemas are merged here (a registry's
  // `definitions` is a copy, so the documents themselves are combined).
  const paths: Record<string, Record<string, Json>> = {};
  const schemas: Record<string, unknown> = {};
  for (const app of apps) {
    const doc = (app as unknown as OpenAPIHono).getOpenAPI31Document({ openapi: '3.1.0', info: { title: '', version: '' } });
    for (const [p, item] of Object.entries(doc.paths ?? {})) paths[p] = { ...paths[p], ...(item as Record<string, Json>) };
    Object.assign(schemas, doc.components?.schemas ?? {});
  }
  for (const [p, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item)) completeOperation(p, method, operation);
  }
  const base = new OpenAPIHono().getOpenAPI31Document({
    openapi: '3.1.0',
    info: {
      title: 'Evidence Anchoring Service',
      version: '2.0.0',
      description:
        'Anchors SHA-256 hashes of files with an ML-DSA-65 signature (FIPS 204), an RFC 3161 timestamp and a public-chain transaction. ' +
        'API v2 (evidence, accounts, tiers) and API v1 (device chains and public read endpoints). Errors are RFC 9457 problem+json with a stable `code`. ' +
        'A method that a documented path does not take is answered 405 `method_not_allowed` with `Allow`; a request body over 64 KiB 413 with `Connection: close`.',
    },
    servers: [{ url: serverUrl }],
  });
  return {
    ...base,
    // OpenAPI 3.1 takes an SPDX `identifier`; the generator's types know only 3.0's `url`.
    info: { ...base.info, license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' } },
    paths,
    components: {
      schemas,
      headers: HEADERS,
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'An API key of the account (POST /api/v2/account/register or /api/v2/account/keys).' },
        Bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'The account JWT from POST /api/v2/account/login (HS256, 1 h).' },
        AdminToken: { type: 'http', scheme: 'bearer', description: "The operators' ADMIN_TOKEN (not a JWT); without it configured the admin API answers 404." },
        Basic: { type: 'http', scheme: 'basic', description: 'POST /api/v2/tsa only: the API key as the password, any user name (what RFC 3161 clients send for a tsaUrl).' },
      },
    },
  };
}

function completeOperation(path: string, method: string, operation: Json): void {
  const route = ROUTES.find((r) => r.path === path && r.method.toLowerCase() === method);
  if (route) operation.operationId = route.operationId;
  const security = operation.security as Json[] | undefined;
  if (!security || security.length === 0) operation.security = [];
  const responses = (operation.responses ??= {}) as Record<string, Json>;
  const hasJsonBody = Boolean(((operation.requestBody as Json | undefined)?.content as Json | undefined)?.['application/json']);
  if (hasJsonBody) responses['415'] ??= { description: 'The body is not sent as Content-Type: application/json.', content: PROBLEM };
  responses['500'] ??= { description: 'An unexpected error; the problem names the request id.', content: PROBLEM };
  if (!STATIC.has(String(route?.operationId))) {
    responses['503'] ??= { description: 'A dependency (database, ledger node, time-stamping authority) is unavailable; nothing was recorded, retry.', content: PROBLEM };
  }
  if (CONDITIONAL.has(String(operation.operationId))) {
    const parameters = (operation.parameters ??= []) as Json[];
    parameters.push({ name: 'If-None-Match', in: 'header', required: false, description: 'The ETag of an earlier answer: 304 while it is still the same.', schema: { type: 'string' } });
    responses['304'] = { description: 'Not modified since the ETag sent in If-None-Match; no body.' };
    for (const status of ['200', '304']) {
      const r = responses[status];
      if (r) ((r.headers ??= {}) as Json).ETag = { $ref: '#/components/headers/ETag' };
    }
  }
  const counted = !UNCOUNTED.has(String(operation.operationId));
  for (const [status, response] of Object.entries(responses)) {
    const headers = (response.headers ??= {}) as Json;
    headers['X-Request-Id'] = { $ref: '#/components/headers/XRequestId' };
    if (counted) {
      headers['RateLimit-Policy'] = { $ref: '#/components/headers/RateLimitPolicy' };
      headers.RateLimit = { $ref: '#/components/headers/RateLimit' };
      headers['RateLimit-Limit'] = { $ref: '#/components/headers/RateLimitLimit' };
      headers['RateLimit-Remaining'] = { $ref: '#/components/headers/RateLimitRemaining' };
      headers['RateLimit-Reset'] = { $ref: '#/components/headers/RateLimitReset' };
    }
    if (status === '409' || status === '429' || status === '503') headers['Retry-After'] = { $ref: '#/components/headers/RetryAfter' };
  }
}
