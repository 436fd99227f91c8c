import { handle } from 'hono/aws-lambda';
import { getConfig } from '../lib/deps/core.js';
import { lazy } from '../lib/deps/lazy.js';
import { createApp } from '../lib/http/app.js';
import { buildOpenApiDocument } from '../lib/http/openapi.js';
import { loadDocumentedApps } from './openapi-sources.js';

/**
 * Every documented function, in registry order: those of infra/functions.json whose `openapi` is
 * not false (functions/openapi-sources.ts; in the Lambda bundle, static imports generated from the
 * registry). test/functions/openapi.test.ts checks the document against the registry.
 */
export const DOCUMENTED_APPS = await loadDocumentedApps();

/** Built once per process from the configuration (rebuilt after resetDeps(), like every lazy()). */
const openApiDocument = lazy(() => buildOpenApiDocument(Object.values(DOCUMENTED_APPS), getConfig().publicBaseUrl));

export const app = createApp({ publicCors: true, deps: { document: openApiDocument } });

app.get('/api/openapi.json', (c) => {
  c.header('Cache-Control', 'public, max-age=300');
  return c.json(c.var.deps.document());
});

export const handler = handle(app);
