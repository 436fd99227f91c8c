import registry from '../../infra/functions.json' with { type: 'json' };

/** One HTTP route of infra/functions.json, as the HTTP layer needs it. */
export interface RouteSpec {
  name: string;
  operationId: string;
  method: string;
  path: string;
  public: boolean;
}

/** Every HTTP route of the registry (the one source of API Gateway's routes). */
export const ROUTES = registry.http as RouteSpec[];
