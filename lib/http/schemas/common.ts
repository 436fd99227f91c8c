import { z } from '@hono/zod-openapi';

/** A SHA-256 hash: 64 hex characters; upper case accepted and answered in lower case (decisions.md "Formats"). */
export const Sha256Hex = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hexadecimal characters (a SHA-256 hash)')
  .transform((s) => s.toLowerCase())
  .openapi({ type: 'string', pattern: '^[0-9a-fA-F]{64}$', example: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' });

/**
 * A SHA-256 hash or null (e.g. previous_hash at chain index 0). Sha256Hex's own `.openapi({ type:
 * 'string' })` would otherwise win over the null, and the document would say a plain string: typed
 * clients could then not send the null the API requires at index 0.
 */
export const NullableSha256Hex = Sha256Hex.nullable().openapi({ type: ['string', 'null'] });

/** Path parameter carrying a hash. */
export function HashParam<N extends string>(name: N) {
  const shape = { [name]: Sha256Hex.openapi({ param: { name, in: 'path' } }) } as Record<N, typeof Sha256Hex>;
  return z.object(shape);
}

/**
 * An integer query parameter (decisions.md "Formats"): decimal digits only (no sign, no leading
 * zero, no blank, no `0x`/`0o`/`0b` prefix, no exponent or fraction), then within `minimum …
 * maximum`; anything else is a 400 naming the parameter. A query value is text, and JavaScript's
 * Number() (z.coerce.number) would read `0x10`, `1e1`, `+16`, ` 16` or `16.0` as numbers.
 */
export function QueryInteger(name: string, options: { minimum: number; maximum: number; description: string; example?: number }) {
  return z
    .string()
    .regex(/^(0|[1-9][0-9]*)$/, 'must be decimal digits (no sign, leading zero, 0x or exponent)')
    .transform(Number)
    .pipe(z.number().int().min(options.minimum).max(options.maximum))
    .optional()
    .openapi({
      param: { name, in: 'query' },
      type: 'integer',
      minimum: options.minimum,
      maximum: options.maximum,
      description: `${options.description} Decimal digits only.`,
      ...(options.example !== undefined ? { example: options.example } : {}),
    });
}

/** An ISO 8601 UTC date-time with milliseconds and `Z`. */
export const IsoTime = z.string().openapi({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' });

/** RFC 9457 problem document as the API writes it. */
export const Problem = z
  .object({
    type: z.string().openapi({ format: 'uri', description: 'The problem type: a page at PUBLIC_BASE_URL/problems/{code} explains it.', example: 'https://evidence.example/problems/hash_already_anchored' }),
    title: z.string().openapi({ description: 'A summary of the problem type, the same for every occurrence.', example: 'Hash already anchored' }),
    status: z.number().int(),
    detail: z.string().openapi({ description: 'What went wrong this time, in plain words.' }),
    instance: z.string().openapi({ description: 'The request path the problem occurred at.', example: '/api/v2/evidence/anchor' }),
    code: z.string().openapi({ description: 'Stable machine-readable error code, e.g. hash_already_anchored.' }),
    request_id: z.string().openapi({ description: 'Identifies this occurrence in the service log; quote it when you report a problem.' }),
  })
  .passthrough()
  .openapi('Problem');

/** Standard problem responses for a route's OpenAPI description. */
export function problemResponses(...statuses: number[]) {
  const text: Record<number, string> = {
    400: 'Invalid request (malformed JSON, wrong types, unknown fields, bad hash).',
    401: 'Missing or invalid credentials.',
    403: 'The feature is not available in the current tier.',
    404: 'Not found.',
    409: 'Conflict.',
    413: 'Request body over 64 KiB.',
    429: 'Per-minute rate limit or monthly quota exceeded; see Retry-After.',
    501: 'Not implemented yet.',
    503: 'A dependency (time-stamping authority, ledger node, database) is unavailable; nothing was recorded, retry.',
  };
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      { description: text[s] ?? 'Error', content: { 'application/problem+json': { schema: Problem } } },
    ]),
  );
}

/** Converts a zod-openapi JSON body schema into the request part of a route (body required: a missing or non-JSON body is a 400). */
export function jsonBody<T extends z.ZodType>(schema: T, description?: string) {
  return {
    body: {
      required: true,
      ...(description ? { description } : {}),
      content: { 'application/json': { schema } },
    },
  };
}

/**
 * On a hash that is not anchored: when any account first registered it. It is nobody's own fact
 * (issue 34 F1): a registration belongs to the account that made it, whose certificate alone
 * shows it; an anchored hash is answered with its anchor's facts and never with this.
 */
export const FirstRegisteredAt = IsoTime.optional().describe(
  'Only for a hash that is not anchored: when it was first registered by any account (not necessarily yours; registrations are not public proofs). Absent on anchored hashes.',
);
