/**
 * The title of each problem type (RFC 9457 §3.1.3: a summary of the type, the same for every
 * occurrence), apart from the explanations of lib/http/problem-types.ts so that every function
 * carries only these few bytes; the type's page (functions/web/problem-page.ts) shows both.
 */
export const PROBLEM_TITLES: Record<string, string> = {
  invalid_request: 'Invalid request',
  malformed_json: 'Malformed JSON',
  invalid_signature: 'Invalid device signature',
  invalid_public_key: 'Invalid public key',
  invalid_chain_hash: 'Wrong chain hash',
  invalid_previous_hash: 'Invalid previous hash',
  previous_hash_mismatch: 'Previous hash does not match',
  invalid_cursor: 'Invalid cursor',
  invalid_tx_hash: 'Invalid transaction hash',
  invalid_timestamp_request: 'Not a TimeStampReq',
  password_too_short: 'Password too short',
  unknown_tier: 'Unknown tier',
  nonce_not_supported: 'Nonce not supported',
  unaccepted_policy: 'TSA policy not accepted',
  invalid_token: 'Invalid or expired token',
  invalid_api_key: 'Invalid API key',
  invalid_credentials: 'Wrong e-mail or password',
  invalid_admin_token: 'Invalid admin token',
  tier_insufficient: 'Tier too low for this feature',
  not_found: 'Not found',
  account_not_found: 'Account not found',
  evidence_not_found: 'Evidence not found',
  invalid_digest: 'Invalid digest',
  hash_renewal_not_due: 'No hash-tree renewal due',
  evidence_record_pending: 'Evidence record not made yet',
  key_not_found: 'API key not found',
  unknown_tsa_policy: 'Unknown TSA policy',
  device_not_found: 'Device chain not found',
  tx_not_found: 'Transaction not found',
  method_not_allowed: 'Method not allowed',
  hash_already_anchored: 'Hash already anchored',
  chain_index_conflict: 'Chain position taken',
  email_exists: 'E-mail address already registered',
  key_limit_reached: 'Key limit reached',
  payload_too_large: 'Request body too large',
  malformed_request: 'Malformed HTTP request',
  request_timeout: 'Request timeout',
  headers_too_large: 'Request headers too large',
  unsupported_media_type: 'Unsupported media type',
  rate_limit_exceeded: 'Rate limit exceeded',
  edge_required: 'Not through the edge',
  quota_exceeded: 'Monthly quota used up',
  too_many_failed_attempts: 'Too many failed attempts',
  internal_error: 'Internal error',
  http_error: 'HTTP error',
  not_implemented: 'Not implemented',
  database_unavailable: 'Database unavailable',
  ledger_unavailable: 'Ledger unavailable',
  tsa_unavailable: 'Time-stamping authority unavailable',
  signer_unavailable: 'Signing key unavailable',
  server_busy: 'Server busy',
};

/** The path of a problem type's page; the `type` member is this path under PUBLIC_BASE_URL. */
export function problemTypePath(code: string): string {
  return `/problems/${encodeURIComponent(code)}`;
}
