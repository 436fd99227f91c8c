import registry from '../../infra/functions.json' with { type: 'json' };

/**
 * The fields of an HTTP entry of infra/functions.json that code inside a Lambda reads. A bundle
 * carries these alone (infra/esbuild-plugins.cjs `registry-route-fields` reads this list): table
 * access, KMS needs, OpenAPI sources and bundle budgets are deployment data, read by the
 * generators and the tests, not by a function at run time.
 */
export const ROUTE_FIELDS = ['name', 'operationId', 'method', 'path', 'public'] as const;

/** One HTTP route of infra/functions.json, as the HTTP layer needs it. */
export type RouteSpec = Pick<(typeof registry.http)[number], (typeof ROUTE_FIELDS)[number]>;

/** Every HTTP route of the registry (the one source of API Gateway's routes). */
export const ROUTES: readonly RouteSpec[] = registry.http;
