/**
 * The apps the OpenAPI document is built from: one per HTTP function of infra/functions.json whose
 * `openapi` is not false, in registry order (infra/registry.cjs openApiSources). `openapi: true`
 * documents the function's own `app`; `openapi: { module, export }` documents the app that function
 * of that module returns (the route alone, where the app would bring heavy files into the openapi
 * bundle). Not a Lambda itself: functions/openapi.ts imports it.
 *
 * Here (tsx: npm start, the tests) the modules are imported by their paths in the registry. A
 * Lambda bundle cannot follow an import by a computed path, so in a bundle the `openapi-sources`
 * esbuild plugin (infra/esbuild-plugins.cjs) replaces this module by static imports of the same
 * list, generated from infra/functions.json at build time. The registry stays the only list;
 * test/infra/lambda-bundle.test.ts serves the document from the bundle in a fresh Node process
 * and compares it with the one built here.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import registry from '../infra/registry.cjs';
import type { DocumentedApp } from '../lib/http/openapi.js';

const ROOT = path.resolve(import.meta.dirname, '..');

/** function name → the app documenting it, in registry order. */
export async function loadDocumentedApps(): Promise<Record<string, DocumentedApp>> {
  const apps: Record<string, DocumentedApp> = {};
  for (const source of registry.openApiSources()) {
    const mod = (await import(pathToFileURL(path.join(ROOT, source.module)).href)) as Record<string, unknown>;
    const value = mod[source.export];
    if (value === undefined) throw new Error(`${source.name}: ${source.module} exports no ${source.export} (infra/functions.json openapi)`);
    apps[source.name] = (source.call ? (value as () => DocumentedApp)() : value) as DocumentedApp;
  }
  return apps;
}
