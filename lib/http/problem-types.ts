/**
 * The problem types of the API (RFC 9457 §3.1.1, §4): what each stable `code` means and what to
 * do about it, served as a page at its `type` URL (`/problems/{code}`, functions/web/problem-page.ts).
 * The titles live in problem-titles.ts (every function carries those). A code missing here still
 * works, titled by its status; test/http/problem-types.test.ts keeps both tables complete.
 */
export interface ProblemType {
  status: number;
  /** What happened, in plain words. */
  meaning: string;
  /** What the client can do about it. */
  remedy: string;
}

const t = (status: number, meaning: string, remedy: string): ProblemType => ({ status, meaning, remedy });

export const PROBLEM_TYPES: Record<string, ProblemType> = {
  invalid_request: t(400, 'A field of the request is missing, of the wrong type, or not allowed; `errors` names each one.', 'Correct the named fields; unknown fields are refused too.'),
  malformed_json: t(400, 'The request body is not valid JSON.', 'Send a JSON object with Content-Type: application/json.'),
  invalid_signature: t(400, 'The Ed25519 signature does not verify over the 32 raw bytes of the hash with the given public key.', 'Sign the raw hash bytes (or its 64-character hex string) with the device key whose public key you send.'),
  invalid_public_key: t(400, 'The public key is not a valid Ed25519 key of 32 bytes.', 'Send the 64 hex characters of the raw Ed25519 public key.'),
  invalid_chain_hash: t(400, 'chain_hash is not SHA-256(previous chain_hash, or 32 zero bytes at index 0, ‖ image hash).', 'Recompute chain_hash over raw bytes as the chain rule says.'),
  invalid_previous_hash: t(400, 'previous_hash does not fit the chain index (it must be null at index 0).', 'Send null at index 0, otherwise the chain_hash of the entry before.'),
  previous_hash_mismatch: t(400, 'previous_hash is not the stored chain_hash of the entry before.', "Send the device's last anchored chain_hash; fetch the chain with GET /api/v1/chain/all/{public_key_hex} if it was lost."),
  invalid_cursor: t(400, 'The paging cursor is not one this service issued.', 'Start again without a cursor, or pass the next_cursor of the previous page unchanged.'),
  invalid_tx_hash: t(400, 'A transaction hash is 0x followed by 64 hexadecimal characters.', 'Correct the hash.'),
  invalid_timestamp_request: t(400, 'The body is not a DER RFC 3161 TimeStampReq.', 'Send the output of `openssl ts -query … -out q.tsq` as application/timestamp-query.'),
  password_too_short: t(400, 'Passwords have at least 12 characters.', 'Choose a longer password (a passphrase of a few words works well).'),
  unknown_tier: t(400, 'The tier is not free, starter, pro or enterprise.', 'Use one of the four tier names.'),
  unaccepted_policy: t(
    400,
    "The request's `policy` names no time-stamping authority of this service, or names the post-quantum one while it is off here (RFC 3161's unacceptedPolicy). Nothing was issued or charged.",
    'Leave `policy` out for the classic TSA, or send the post-quantum policy named in /.well-known/evidence-trust-anchors.json (tsa.pq.policy_oid; absent there: this service issues no post-quantum tokens).',
  ),
  nonce_not_supported: t(400, 'The nonce is not a positive integer this service can echo.', 'Send a positive integer below 10^38, or none.'),
  invalid_token: t(401, 'The bearer token is missing, malformed, wrongly signed, expired, issued in the future, living too long, or its account no longer exists.', 'Log in again (POST /api/v2/account/login) and send Authorization: Bearer <token>.'),
  invalid_api_key: t(401, 'The API key is missing, malformed, unknown or deactivated.', 'Send an active key of your account in X-API-Key; create one in the dashboard or with POST /api/v2/account/keys.'),
  invalid_credentials: t(401, 'The e-mail address or the password is wrong (the two are not told apart).', 'Check both; after too many failures from one address, log-ins pause for up to 15 minutes.'),
  invalid_admin_token: t(401, "The operators' admin token is missing or wrong.", 'Send Authorization: Bearer $ADMIN_TOKEN; repeated failures lock the address out for up to 15 minutes.'),
  tier_insufficient: t(403, "The account's tier does not include this operation; `required_tier` names the lowest that does.", 'Upgrade the account, or use an operation of your tier.'),
  not_found: t(404, 'There is no such endpoint or resource.', 'Check the path against the API reference (/api/openapi.json).'),
  account_not_found: t(404, 'No account has this id.', 'Check the account id.'),
  evidence_not_found: t(404, 'No evidence is recorded for this hash (or not for your account).', 'Check the hash: it is the SHA-256 of the file, 64 hex characters.'),
  invalid_digest: t(400, 'A digest given for a hash-tree renewal of an evidence record is not of the algorithm the service renews hash trees to (ARCHIVE_HASH_ALGORITHM).', 'Give the photo\'s digest with that algorithm (the `detail` names it; SHA-512: 128 hex characters).'),
  evidence_record_pending: t(404, 'The hash is anchored, but the archive timestamp that its RFC 4998 evidence record rests on is not made yet: the archive job groups anchors about once a minute.', 'Fetch the evidence record again in a minute or two.'),
  key_not_found: t(404, 'Your account has no API key with this id.', 'List your keys with GET /api/v2/account/keys.'),
  unknown_tsa_policy: t(404, 'No time-stamping authority of this service has this policy (or the post-quantum one is off here).', 'Leave `policy` out for the classic TSA, or use the post-quantum policy named in /.well-known/evidence-trust-anchors.json (tsa.pq.policy_oid).'),
  device_not_found: t(404, 'No chain is recorded for this device key.', 'Check the public key (64 hex characters).'),
  tx_not_found: t(404, 'The chain has no transaction with this hash.', 'Check the hash and the network.'),
  method_not_allowed: t(405, 'The path exists but does not take this method; `Allow` lists the ones it takes.', 'Use one of the methods in `Allow`.'),
  hash_already_anchored: t(409, 'This hash is already anchored, or another request is anchoring it right now (then Retry-After says when to retry the identical request).', 'Verify it (GET /api/v2/evidence/verify/{hash}); an identical retry after Retry-After answers as the first request would have.'),
  chain_order: t(400, 'An entry of a batch anchor comes after an entry of the same device with a chain index that is not lower: a request gives each device\'s entries in chain order.', 'Sort each device\'s entries by chain_index and send the request again; nothing of the refused entry was written or charged.'),
  previous_entry_failed: t(409, 'An entry of a batch anchor builds on an entry of the same request that was not anchored (named in failed_entry); nothing of it was written or charged.', 'Fix what the failed entry\'s slot says, then send both again (entries anchored already answer 200 again, charged nothing).'),
  chain_index_conflict: t(409, 'The chain index is not the next free one of this device key, or another photo holds it.', "Send the device's next index (GET /api/v1/chain/all/{public_key_hex} shows the chain)."),
  hash_renewal_not_due: t(409, 'No hash-tree renewal of evidence records is configured now, or this record was renewed from this same digest already.', 'Nothing to do; GET the evidence record with the digest (?sha512=…) to see its chains. A different digest is taken as a correction.'),
  email_exists: t(409, 'An account with this e-mail address exists.', 'Log in instead, or use another address.'),
  invalid_events: t(400, 'events must list one or more of evidence.anchored, evidence.final and evidence.record.', 'Send the event types to subscribe to, e.g. ["evidence.anchored","evidence.final"].'),
  webhook_url_refused: t(400, 'The webhook URL cannot be a target: deployed stages take only https, and every address its host resolves to must be public unicast (no loopback, private, link-local, CGNAT, multicast, unspecified, unique-local or IPv4-mapped forms of these). `detail` says which rule it broke.', 'Use a public https URL of your receiver (docs/webhooks.md).'),
  webhook_not_found: t(404, 'Your account has no webhook endpoint with this id.', 'List your endpoints with GET /api/v2/account/webhooks.'),
  delivery_not_found: t(404, 'This webhook endpoint has no delivery with this id.', 'List its deliveries with GET /api/v2/account/webhooks/{webhook_id}/deliveries.'),
  webhook_limit_reached: t(409, 'An account holds at most 5 webhook endpoints.', 'Delete an endpoint you no longer use, then create the new one.'),
  webhook_disabled: t(409, 'The webhook endpoint is disabled (it answered 410 Gone, or failed every attempt for 5 days): nothing is sent to it.', 'Create a new endpoint for the receiver once it works again, and delete the disabled one.'),
  concurrent_change: t(409, 'The record changed concurrently too often while the request tried to change it.', 'Retry the request after Retry-After.'),
  key_limit_reached: t(409, 'An account holds at most 5 active API keys.', 'Deactivate a key you no longer use, then create the new one.'),
  malformed_request: t(400, 'The HTTP request itself could not be read: its request line, its path (a backslash, for instance) or a header is malformed. Nothing was done.', 'Send a well-formed HTTP/1.1 request: a path of URL characters (percent-encode the others), valid headers.'),
  request_timeout: t(408, 'The request was not all in within its deadline (locally HEADERS_TIMEOUT_MS for the headers, REQUEST_TIMEOUT_MS for the whole request); the connection was closed and nothing was done.', 'Send the whole request at once; retry it on a new connection.'),
  headers_too_large: t(431, 'The request headers are larger than the server reads (16 KiB locally, 10 KiB at API Gateway). Nothing was done.', 'Send fewer or shorter headers (API keys and tokens are short).'),
  payload_too_large: t(413, 'Request bodies are limited to 64 KiB; the body was not read.', 'Send only the hash and its proofs, never the file.'),
  unsupported_media_type: t(415, 'The body is not sent with the media type the endpoint takes: JSON, or for POST /api/v2/tsa application/timestamp-query. Nothing was read.', 'Send Content-Type: application/json (RFC 3161 requests to POST /api/v2/tsa: application/timestamp-query).'),
  edge_required: t(403, 'The request did not come through the edge (CDN and firewall) in front of the API.', 'Call the public address, not the API Gateway one.'),
  rate_limit_exceeded: t(429, 'Too many requests in the current minute for the account, the key or the client address; `scope` says which.', 'Wait for Retry-After seconds; the RateLimit fields show the budget.'),
  quota_exceeded: t(429, "The account used its tier's evidence operations for this calendar month (UTC).", 'Wait for the reset (Retry-After, resets_at in GET /api/v2/account/usage) or upgrade the tier.'),
  too_many_failed_attempts: t(429, 'This client address failed to authenticate too often in the current 15-minute window; every attempt from it waits until the window ends.', 'Wait for Retry-After seconds; check the credential before trying again.'),
  internal_error: t(500, 'Something unexpected failed; nothing about it is shown here.', 'Retry; if it persists, report the request_id.'),
  http_error: t(500, 'The request failed at the HTTP layer.', 'Read `detail`.'),
  not_implemented: t(501, 'This operation is not available in this deployment.', 'Read `detail`.'),
  database_unavailable: t(503, 'The database could not be reached; nothing was read or changed.', 'Retry after Retry-After seconds.'),
  ledger_unavailable: t(503, 'The ledger node could not be reached; no verdict was given on a proof that was not checked.', 'Retry after Retry-After seconds.'),
  tsa_unavailable: t(503, 'The time-stamping authority did not answer; nothing was recorded and nothing was charged.', 'Retry after Retry-After seconds.'),
  signer_unavailable: t(503, 'A signing key (KMS) could not be used; nothing was recorded.', 'Retry after Retry-After seconds.'),
  server_busy: t(503, 'This server instance had more anchors in hand than it takes at once, and this one waited its turn longer than it may; nothing was recorded and no quota was used.', 'Retry the identical request after Retry-After seconds.'),
};
