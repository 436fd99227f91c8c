/**
 * The defaults that name something outside the service: the TSA policy OIDs, what each real chain
 * needs besides an RPC URL, and the local HTTP server's deadlines. Importers take them from
 * lib/config.ts, which re-exports them.
 */

/**
 * The default TSA policy OID (RFC 3161 §2.4.2 `policy`): ours, under the `2.25` arc of ITU-T X.667
 * (an OID made of a UUID, 186da57b-1956-4e76-96ec-0cae0e7ce736, as a 128-bit integer), which needs
 * no registration. Operators with a registered policy set TSA_POLICY_OID.
 */
export const DEFAULT_TSA_POLICY_OID = '2.25.32470788606908332339531699348079175478';

/**
 * The default policy OID of the post-quantum TSA (ML-DSA-65 tokens, RFC 9882), which a
 * TimeStampReq names as `reqPolicy` to get one: the service has no registered arc, and the classic
 * policy is a UUID OID (X.667) rather than an arc of ours, so this is another UUID OID
 * (b4b29985-5850-4267-b563-5bb3768c1754), unrelated to the first by construction and needing no
 * registration either. decisions.md "Post-quantum time". Operators set TSA_PQ_POLICY_OID.
 */
export const DEFAULT_TSA_PQ_POLICY_OID = '2.25.240188381855450738062415899808185980756';

/** Network presets: what a real chain needs besides an RPC URL (issue: real networks). */
export const NETWORK_PRESETS = {
  local: { chainId: 31337, explorerTxUrl: '', priorityFeeGwei: 1, maxFeeGwei: 100, confirmationTag: 'latest' },
  'polygon-amoy': {
    chainId: 80002,
    explorerTxUrl: 'https://amoy.polygonscan.com/tx/{tx_hash}',
    priorityFeeGwei: 25,
    maxFeeGwei: 500,
    confirmationTag: 'finalized',
  },
  polygon: {
    chainId: 137,
    explorerTxUrl: 'https://polygonscan.com/tx/{tx_hash}',
    priorityFeeGwei: 25,
    maxFeeGwei: 500,
    confirmationTag: 'finalized',
  },
} as const;
/** `npm start`'s HTTP server: the headers of a request must be in within 10 s, the whole request within 30 s (docs/configuration.md). */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
export type NetworkName = keyof typeof NETWORK_PRESETS | 'custom';
