import { OpenAPIHono } from '@hono/zod-openapi';

/** A function module's app, as far as the OpenAPI document needs it. */
export interface DocumentedApp {
  openAPIRegistry: OpenAPIHono['openAPIRegistry'];
}

/**
 * One OpenAPI 3.1 document for the whole service, merged from the route definitions every
 * function registered with its own schemas: the schemas that validate requests are the ones
 * documented, so the two cannot drift apart.
 */
export function buildOpenApiDocument(apps: DocumentedApp[], serverUrl: string) {
  // Each app documents its own routes; paths and component schemas are merged here (a registry's
  // `definitions` is a copy, so the documents themselves are combined).
  const paths: Record<string, Record<string, unknown>> = {};
  const schemas: Record<string, unknown> = {};
  for (const app of apps) {
    const doc = (app as unknown as OpenAPIHono).getOpenAPI31Document({ openapi: '3.1.0', info: { title: '', version: '' } });
    for (const [p, item] of Object.entries(doc.paths ?? {})) paths[p] = { ...paths[p], ...(item as Record<string, unknown>) };
    Object.assign(schemas, doc.components?.schemas ?? {});
  }
  const base = new OpenAPIHono().getOpenAPI31Document({
    openapi: '3.1.0',
    info: {
      title: 'Evidence Anchoring Service',
      version: '2.0.0',
      description:
        'Anchors SHA-256 hashes of files with an ML-DSA-65 signature (FIPS 204), an RFC 3161 timestamp and a public-chain transaction. ' +
        'API v2 (evidence, accounts, tiers) and API v1 (device chains and public read endpoints). Errors are RFC 9457 problem+json with a stable `code`.',
    },
    servers: [{ url: serverUrl }],
  });
  return {
    ...base,
    paths,
    components: {
      schemas,
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        Bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        Basic: { type: 'http', scheme: 'basic', description: 'POST /api/v2/tsa only: the API key as the password, any user name (what RFC 3161 clients send for a tsaUrl).' },
      },
    },
  };
}
