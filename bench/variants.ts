/**
 * Measured alternatives to the production setup, applied inside a benchmark process only (the API
 * child with BENCH_VARIANTS). Each one stands for a change that is not (or cannot be) part of the
 * service's code; none of them is used by the service itself.
 *
 * - `edge-cache`: a shared HTTP cache in front of the API that honours the Cache-Control the
 *   functions already send (`public, max-age=…` on verify), as CloudFront in front of API Gateway
 *   would; applied by bench/servers/api.ts around the whole API.
 *
 * (The earlier alternatives — liboqs signing, the tier on the key item, rate ‖ quota and the
 * pipelined ledger sender — are production code now: bench/stages.ts and the HTTP runs measure
 * them as such.)
 */

export const VARIANTS = ['edge-cache'] as const;
export type Variant = (typeof VARIANTS)[number];

/** Checks the names; the API process applies what they stand for (bench/servers/api.ts). */
export function applyVariants(names: string[]): Variant[] {
  const applied: Variant[] = [];
  for (const name of names) {
    if (!(VARIANTS as readonly string[]).includes(name)) throw new Error(`unknown variant "${name}" (known: ${VARIANTS.join(', ')})`);
    applied.push(name as Variant);
  }
  return applied;
}

/**
 * A shared HTTP cache in front of `fetch`: GET responses carrying `Cache-Control: public,
 * max-age=N` are kept N seconds per URL and served without reaching the API (no function, no
 * rate counter), as an edge cache would.
 */
export function edgeCache(fetch: (request: Request) => Response | Promise<Response>): (request: Request) => Promise<Response> {
  // Text bodies and plain header records: @hono/node-server writes such a Response without streaming it.
  const entries = new Map<string, { expires: number; status: number; headers: Record<string, string>; body: string }>();
  return async (request) => {
    if (request.method !== 'GET') return fetch(request);
    const hit = entries.get(request.url);
    if (hit && hit.expires > Date.now()) return new Response(hit.body, { status: hit.status, headers: hit.headers });
    const response = await fetch(request);
    const m = /(?:^|,)\s*public\s*,.*max-age=(\d+)|max-age=(\d+).*,\s*public/.exec(response.headers.get('cache-control') ?? '');
    const maxAge = Number(m?.[1] ?? m?.[2] ?? 0);
    if (!maxAge) return response;
    const body = await response.text();
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name] = value));
    entries.set(request.url, { expires: Date.now() + maxAge * 1000, status: response.status, headers: { ...headers, 'x-cache': 'hit' }, body });
    return new Response(body, { status: response.status, headers });
  };
}
