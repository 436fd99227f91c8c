/**
 * Swagger UI (npm swagger-ui-dist), which renders the OpenAPI document at /docs: its script and
 * style sheet, served from this service's own origin (no CDN: the page works offline and under
 * our CSP). Read from node_modules here; in a Lambda bundle the esbuild plugin
 * `inline-docs-files` (infra/esbuild-plugins.cjs) replaces this module with one that carries the
 * files inside the bundle. Keep DOCS_FILES a plain object of string literals.
 */
import { packageFilesLoader } from '../package-files.js';

export const DOCS_FILES = {
  script: 'swagger-ui-dist/swagger-ui-bundle.js',
  style: 'swagger-ui-dist/swagger-ui.css',
} as const;

export type DocsFiles = Record<keyof typeof DOCS_FILES, string>;

/** The files' text (read once per process). */
export const loadDocsFiles: () => Promise<DocsFiles> = packageFilesLoader(DOCS_FILES, (bytes) => bytes.toString('utf8'));
