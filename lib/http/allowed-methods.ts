import { ROUTES } from './registry.js';

/** `/api/v2/evidence/verify/{image_hash}` → a RegExp matching one concrete path of it. */
function pathPattern(template: string): RegExp {
  const parts = template.split(/\{[A-Za-z0-9_]+\}/).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join('[^/]+')}$`);
}

const BY_PATH = [...new Set(ROUTES.map((r) => r.path))].map((path) => {
  const routes = ROUTES.filter((r) => r.path === path);
  const methods = new Set(routes.map((r) => r.method));
  // As served: every GET also answers HEAD; public functions answer CORS preflights (OPTIONS).
  if (methods.has('GET')) methods.add('HEAD');
  if (routes.some((r) => r.public)) methods.add('OPTIONS');
  return { path, pattern: pathPattern(path), methods: [...methods].sort() };
});

/**
 * The methods the service answers on a concrete request path (for `Allow`, RFC 9110 §10.2.1), or
 * undefined when no function serves that path at all (then the answer is 404, not 405).
 * One source: infra/functions.json, the registry API Gateway's routes are generated from.
 */
export function allowedMethods(requestPath: string): string[] | undefined {
  return BY_PATH.find((p) => p.pattern.test(requestPath))?.methods;
}
