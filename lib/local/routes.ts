import registry from '../../infra/functions.json' with { type: 'json' };

/** One HTTP function of infra/functions.json. */
export interface HttpFunctionSpec {
  name: string;
  file: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** The OpenAPI operationId (stable, camelCase). */
  operationId: string;
  path: string;
  public: boolean;
  anchoring?: boolean;
  access: Record<string, string>;
}

/** One scheduled function of infra/functions.json. */
export interface ScheduledFunctionSpec {
  name: string;
  file: string;
  schedule: string;
  access: Record<string, string>;
}

export const HTTP_FUNCTIONS = registry.http as unknown as HttpFunctionSpec[];
export const SCHEDULED_FUNCTIONS = registry.scheduled as unknown as ScheduledFunctionSpec[];
/** The gateway's own functions (methodNotAllowed on `ANY <path>`). */
export const GATEWAY_FUNCTIONS = registry.gateway as unknown as { name: string; file: string }[];

/** API Gateway path syntax (`/a/{id}`) to Hono's (`/a/:id`). */
export function toHonoPath(apiGatewayPath: string): string {
  return apiGatewayPath.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}
