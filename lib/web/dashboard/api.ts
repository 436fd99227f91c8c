/**
 * The dashboard's calls to this origin's API, and the shapes of the answers it reads (the parts
 * it uses of docs/api-v2.md and docs/api-v1.md; the server's schemas are lib/http/schemas/).
 * Browser code: see app.ts for how it is built.
 */

export interface ApiResult {
  /** The HTTP status; 0 when the service could not be reached. */
  status: number;
  /** Parsed JSON for a JSON answer; otherwise a Blob (`binary`) or the text. */
  body: unknown;
  headers: Headers;
}

export interface CallOptions {
  /** Send the session's JWT (Authorization: Bearer). */
  jwt?: boolean;
  /** Send this API key (X-API-Key). */
  apiKey?: string;
  /** A JSON request body. */
  json?: unknown;
  /** Read a non-JSON answer as a Blob instead of text. */
  binary?: boolean;
}

/** RFC 9457 problem details as the service sends them (lib/http/schemas/common.ts Problem). */
export interface Problem {
  title?: string;
  detail?: string;
  code?: string;
}

export interface TokenAnswer {
  token: string;
}
export interface RegisterAnswer extends TokenAnswer {
  api_key: string;
}
export interface AccountInfo {
  email: string;
  tier: string;
  active_keys: number;
  max_keys: number;
  features: string[];
}
export interface Usage {
  tier: string;
  used: number;
  monthly_quota: number;
  rate_per_minute: number;
  resets_at: string;
}
export interface ApiKeyRecord {
  key_id: string;
  name: string | null;
  prefix: string;
  active: boolean;
  created_at: string;
  last_used_at: string | null;
  deactivated_at: string | null;
}
export interface KeyList {
  keys: ApiKeyRecord[];
}
export interface NewKey {
  api_key: string;
}
export interface EvidenceList {
  items: { image_hash: string; proofs: string[]; at: string }[];
}
export interface SignAnswer {
  key_id: string;
  signature: string;
  statement: { signed_at: string };
}
export interface TimestampAnswer {
  gen_time: string;
  serial_number: string;
  timestamp_token: string;
}
export interface AnchorAnswer {
  anchored_at: string;
  tx_hash: string;
  ledgerscan_url: string;
  blockchain_anchored: boolean;
}
export interface ChainPage {
  entries: { chain_index: number; chain_hash: string }[];
  next_cursor: string | null;
}

/** The session's JWT, API key and e-mail address in sessionStorage (this tab only). */
export const store = window.sessionStorage;
export const TOKEN = 'eas.dashboard.token';
export const EMAIL = 'eas.dashboard.email';
export const KEY = 'eas.dashboard.apiKey';

/** One API call. A network failure resolves to status 0 with a problem body; it never rejects for that. */
export async function call(method: string, path: string, options: CallOptions = {}): Promise<ApiResult> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (options.jwt) headers.Authorization = 'Bearer ' + store.getItem(TOKEN);
  if (options.apiKey) headers['X-API-Key'] = options.apiKey;
  if (options.json !== undefined) headers['Content-Type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: options.json === undefined ? undefined : JSON.stringify(options.json), cache: 'no-store', credentials: 'omit' });
  } catch {
    return { status: 0, body: { detail: 'The service could not be reached. Check the connection and try again.' }, headers: new Headers() };
  }
  const type = res.headers.get('content-type') || '';
  const body: unknown = await (/json/.test(type) ? res.json() : options.binary ? res.blob() : res.text());
  return { status: res.status, body, headers: res.headers };
}

/** The answer's body as a problem (empty when it is none). */
export function problemOf(res: ApiResult): Problem {
  return typeof res.body === 'object' && res.body !== null ? (res.body as Problem) : {};
}

/** What to tell the user about a failed call: the problem's detail, and when to retry a 429. */
export function problem(res: ApiResult): string {
  const b = problemOf(res);
  const retryAfter = res.headers.get('retry-after');
  return (b.detail || b.title || 'The service answered ' + res.status + '.') + (res.status === 429 && retryAfter ? ' Try again in ' + retryAfter + ' s.' : '');
}
