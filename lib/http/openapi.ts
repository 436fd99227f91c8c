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
  const merged = new OpenAPIHono();
  for (const app of apps) merged.openAPIRegistry.definitions.push(...app.openAPIRegistry.definitions);
  merged.openAPIRegistry.registerComponent('securitySchemes', 'ApiKey', { type: 'apiKey', in: 'header', name: 'X-API-Key' });
  merged.openAPIRegistry.registerComponent('securitySchemes', 'Bearer', { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
  return merged.getOpenAPI31Document({
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
}
