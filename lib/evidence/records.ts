/**
 * What the evidence table holds: the evidence item of an image hash (registration, the anchor's
 * state and proofs) and the links of device chains. Types and pure predicates only (no SDK), so
 * that readers such as the offline verifier can use them without loading the AWS SDK;
 * the store reads and writes them behind the ports of ports.ts (lib/store/evidence-table.ts, chain-table.ts).
 */

/** Ledger state of an anchor's transaction. */
export type TxStatus = 'pending' | 'confirmed' | 'failed';

/** The proofs of an anchored hash, as stored (one item per image hash in the evidence table). */
export interface AnchorProofs {
  anchored_at: string;
  api_version: 'v1' | 'v2';
  account_id: string;
  device_id?: string | undefined;
  public_key_hex: string;
  signature_hex: string;
  chain_index: number;
  chain_hash: string;
  previous_hash: string | null;
  /** The RFC 8785 canonical statement, exactly the bytes `server_hash` is computed from. */
  statement: string;
  server_hash: string;
  pq_algorithm: 'ML-DSA-65';
  pq_key_id: string;
  pq_public_key: string; // base64
  pq_signature: string; // base64
  tsa_response: string; // base64 DER TimeStampResp
  tsa_gen_time: string;
  tsa_serial: string;
  tsa_policy: string;
  tsa_certificates: string[]; // PEM, leaf first
  /** The post-quantum RFC 3161 token (ML-DSA-65, RFC 9882) of the same imprint, when the PQ TSA was on (decisions.md "Post-quantum time"). */
  tsa_pq_response?: string; // base64 DER TimeStampResp, without certificates
  tsa_pq_gen_time?: string;
  tsa_pq_serial?: string;
  tsa_pq_policy?: string;
  tsa_pq_certificates?: string[]; // PEM, leaf first
  ledger_chain_id: number;
  ledger_address: string;
  tx_hash: string;
  /** Every version of the transaction after the ledger sender replaced a stuck one, oldest first. */
  tx_hashes?: string[] | undefined;
  tx_nonce: number;
  tx_status: TxStatus;
  block_number?: number | undefined;
  confirmed_at?: string | undefined;
  /** The transaction's receipt once final, read from the chain and checked once (ledger-finality.ts). */
  ledger_final?: FinalLedgerReceipt | undefined;
  /** Batch mode: where the anchor's leaf sits in the tree whose root the transaction carries. */
  merkle?: MerkleInclusion | undefined;
}

/**
 * The finalized receipt of an anchor's transaction, stored on the record when the transaction is
 * final (lib/evidence/ledger-finality.ts), so that verification serves it without asking the
 * chain again (a final transaction cannot change). It is stored only for a transaction that was
 * read from the chain then and held: mined, succeeded, sent by the service wallet, its input data
 * image_hash || server_hash (for a batched anchor: the batch root, with the inclusion path checked).
 */
export interface FinalLedgerReceipt {
  block_number: number;
  block_hash: string;
  /** The block's timestamp (ISO 8601, UTC). */
  block_time: string;
  /**
   * Confirmations when finality was recorded (latest block − its block + 1). A final record shows
   * this number for good: it no longer grows on every read.
   */
  confirmations: number;
  /** The sender, as read from the chain (lower case). */
  from: string;
  /**
   * What made it final: `latest` (mined counts as final: LEDGER_CONFIRMATION_TAG=latest, the local
   * chain, which never reorganises) or `finalized` (at or below the node's finalized block).
   */
  finality: 'latest' | 'finalized';
  /** When the service recorded it. */
  recorded_at: string;
  /** The transaction it describes (lower case): a record naming another transaction is not served from it. */
  tx_hash?: string | undefined;
  /**
   * The transaction's input data as read then (hex). Every verify checks it again, offline, against
   * the record's image_hash, server_hash and (batch mode) inclusion path: a final record is never
   * trusted for what can be recomputed. A receipt stored without it is not served (verify reads the chain).
   */
  input_data?: string | undefined;
}

/**
 * What the anchor write records of its transaction's receipt, when one came while the request
 * waited: its status, block and mined version; `final` when the receipt is final at once (the
 * `latest` rule: mined is final) and was read and checked (ledger-finality.ts judgeFinality), so
 * that the anchor leaves the unfinished index in the same write and the reconciler never reads it.
 */
export interface AnchorReceipt {
  status: TxStatus;
  blockNumber: number;
  at: string;
  minedTxHash: string;
  txHashes?: string[] | undefined;
  final?: FinalLedgerReceipt | undefined;
}

/**
 * The inclusion of an anchor in a ledger batch (decisions.md "Ledger batching", lib/evidence/merkle.ts):
 * leaf = SHA-256(0x00 || image_hash || server_hash), `path` the RFC 6962 audit path (sibling
 * hashes, nearest first) from leaf `leaf_index` of `tree_size` leaves up to `root`, the root
 * the batch's transaction carries.
 */
export interface MerkleInclusion {
  root: string;
  leaf_index: number;
  tree_size: number;
  path: string[];
}

/**
 * Where an anchor stands: the states of EVIDENCE_ITEM (lib/state-machines.ts, docs/state-machines.md,
 * where each transition, who may make it and when are listed). Each step is one conditional write
 * from the state and version read to the next; any invocation can resume it (the identical retry,
 * the start-up replay, the scheduled reconciler, lib/evidence/reconcile.ts).
 * - no state: nothing is anchored on the hash (the item may not exist, or hold only barred claims).
 *   A request holds the hash's chain position (its chain link, under a lease) while it makes the
 *   proofs; nothing of it is on the item yet.
 * - `publishing`: the first write of the anchor claims the hash and stores every proof (statement,
 *   ML-DSA-65 signature, RFC 3161 tokens) with the signed ledger transaction or the batch it joined,
 *   BEFORE anything can reach a node. From here the anchor is only ever finished, never undone.
 * - `anchored`: the transaction was handed to the ledger; the 200 can be sent. `tx_status` goes from
 *   pending to confirmed (or failed) when its receipt is recorded, then the final receipt is stored.
 */
export type AnchorState = 'publishing' | 'anchored';

/** A signed ledger transaction as the evidence item keeps it while publishing. */
export interface StoredTx {
  tx_hash: string;
  tx_nonce: number;
  /** The signed transaction (0x hex); removed once anchored (the ledger table keeps it). */
  tx_raw: string;
  ledger_address: string;
  ledger_chain_id: number;
}

/** The request's side of an anchor: who asks, for which device-chain entry. */
type AnchorRequestFields = Pick<
  AnchorProofs,
  'account_id' | 'api_version' | 'device_id' | 'public_key_hex' | 'signature_hex' | 'chain_index' | 'chain_hash' | 'previous_hash'
>;

/** What a request writes with the hash when it publishes (the first write of its anchor). */
export interface AnchorClaim extends AnchorRequestFields {
  image_hash: string;
  /** The request's claim: its chain link names it; a claim that lapsed may be barred (dead_claims). */
  claim_id: string;
  /** SHA-256 of the canonical request (anchor.ts requestFingerprint): an identical retry has the same. */
  fingerprint: string;
  /** The time the statement carries. */
  anchored_at: string;
  /** The quota hold that pays for this anchor (lib/accounts/quota-holds.ts). */
  quota_counter: string;
  quota_hold: string;
}

/** The proofs the request made, stored with the move to `publishing`. */
export interface SignedProofs {
  statement: string;
  server_hash: string;
  pq_algorithm: 'ML-DSA-65';
  pq_key_id: string;
  pq_public_key: string;
  pq_signature: string;
  tsa_response: string;
  tsa_gen_time: string;
  tsa_serial: string;
  tsa_policy: string;
  tsa_certificates: string[];
  tsa_pq_response?: string;
  tsa_pq_gen_time?: string;
  tsa_pq_serial?: string;
  tsa_pq_policy?: string;
  tsa_pq_certificates?: string[];
}

/** One evidence item: registration (POST /evidence/hash) and, once anchoring began, its state. */
export interface EvidenceItem extends Partial<AnchorProofs> {
  image_hash: string;
  registered_at?: string;
  registered_by?: string;
  anchor_state?: AnchorState;
  /**
   * The version of the anchor's state (lib/state-machines.ts EVIDENCE_ITEM): every transition is
   * conditional on the state and version it was computed from, and adds one. Kept by a release,
   * so that a hash released and claimed again never repeats a version.
   */
  anchor_v?: number;
  claim_id?: string;
  fingerprint?: string;
  /** Claims that lapsed before they published (EVIDENCE_ITEM bar): none of them can ever publish. */
  dead_claims?: Set<string>;
  quota_counter?: string;
  quota_hold?: string;
  tx_raw?: string;
  /** Batch mode: the batch (window) the anchor's leaf joined (lib/evidence/batch-publish.ts); kept once anchored. */
  batch_pk?: string;
  /** Set while the anchor is unfinished (publishing, or its transaction pending or not yet final): the sparse index. */
  pending_shard?: string;
}

/** A stored and fully anchored item. */
export type AnchoredEvidence = EvidenceItem & AnchorProofs & { anchor_state: 'anchored' };

export function isAnchored(item: EvidenceItem | undefined): item is AnchoredEvidence {
  return item?.anchor_state === 'anchored';
}

/** One link of a device chain (chains table, key = public_key_hex + chain_index). */
export interface ChainLink {
  public_key_hex: string;
  chain_index: number;
  /** The only hash that can complete this link while it stands: a claimed link is freed only once its claim can never publish. */
  image_hash: string;
  chain_hash: string;
  previous_hash: string | null;
  signature_hex: string;
  device_id?: string | undefined;
  /** `released`: its claim gave it up or was barred; the position is free again (a released link is never read as a link). */
  state: 'claimed' | 'anchored' | 'released';
  /** The claim of the request that holds the link (its identical retry moves it to its own). */
  claim_id: string;
  /** While claimed: epoch ms until which the claim is protected; a link whose claim lapsed without publishing may be freed. */
  lease_expires_at?: number;
  anchored_at?: string;
  tx_hash?: string;
}

/**
 * The stand-alone proofs an account asked for (POST /api/v2/evidence/timestamp and /sign), each
 * exactly as the endpoint returned it; the latest one wins. Each lives in an item of its own
 * (lib/store/evidence-table.ts), never on the hash's evidence item: answers of any number of
 * accounts (a post-quantum timestamp answer is about 36 KB) must not grow the item the anchor's
 * state machine writes, nor what every verify reads (DynamoDB items stop at 400 KB). Items of
 * data directories from before kept them on the evidence item as `ts#<account_id>` and
 * `sig#<account_id>`; those are still read.
 */
export type StandaloneKind = 'ts' | 'sig';

/** An account's stand-alone answers on a hash (as stored, not checked). */
export interface StandaloneAnswers {
  timestamp?: unknown;
  signature?: unknown;
}

/** The attribute of the evidence item where data directories from before kept an account's stand-alone proof. */
export function legacyStandaloneAttribute(kind: StandaloneKind, accountId: string): string {
  return `${kind}#${accountId}`;
}

/** The account's stand-alone answers: its own items' (`stored`), else what an older item kept on itself. */
export function standaloneAnswers(item: EvidenceItem | undefined, accountId: string, stored: StandaloneAnswers = {}): StandaloneAnswers {
  const fields = (item ?? {}) as unknown as Record<string, unknown>;
  const timestamp = stored.timestamp ?? fields[legacyStandaloneAttribute('ts', accountId)];
  const signature = stored.signature ?? fields[legacyStandaloneAttribute('sig', accountId)];
  return { ...(timestamp !== undefined ? { timestamp } : {}), ...(signature !== undefined ? { signature } : {}) };
}

/** Where the stand-alone endpoints record their answers (EvidenceRepository.recordStandalone) and the certificate reads them. */
export interface StandaloneProofStore {
  recordStandalone(imageHash: string, accountId: string, kind: StandaloneKind, answer: object): Promise<void>;
  /** The account's own stand-alone items of the hash (not what an older evidence item kept). */
  getStandalone(imageHash: string, accountId: string): Promise<StandaloneAnswers>;
}
