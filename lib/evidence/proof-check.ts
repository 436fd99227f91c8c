/**
 * The single proof checks. Each one judges one link of the evidence; verdict.ts composes them
 * into the one verdict every reader renders (v1 and v2 verify, the v1 chain and post-quantum
 * reads, the verify page, the PDF, the offline receipt verifier); no reader calls these itself
 * to decide anything overall.
 *
 * Pure: no I/O, no HTTP, no ethers, no clock. What needs I/O is done by the reader and passed in:
 * the ledger transaction as read from a node ({@link LedgerRead}), the RFC 3161 verification
 * (which builds the certificate path against the roots the reader trusts), the trusted ML-DSA key
 * fingerprints, and the evidence item next to a device-chain link.
 *
 * Each verdict covers one link of the evidence, so that one changed input fails the verdict that
 * owns it:
 *
 *   image_hash ──Ed25519──▶ device key                         checkDeviceSignature
 *   SHA-256(prev || image_hash) = chain_hash                   checkChainHash      (decisions.md "Device chains")
 *   previous_hash = chain_hash(i-1), null at 0                 checkPreviousHash
 *   SHA-256(RFC 8785 statement) = server_hash                  checkServerHash     (decisions.md "Evidence")
 *   the statement names this image, chain, device, time       statementMismatches (the statement proof: verdict.ts)
 *   server_hash ──ML-DSA-65 (FIPS 204, pure)──▶ service key    checkPqSignature, checkPqKey
 *   RFC 3161 token: imprint = image_hash, signature, chain     checkTimestamp
 *   ledger tx: mined, succeeded, sender, image||server data   checkLedgerData, checkLedgerTransaction
 *   batch: leaf --RFC 6962 path--> root = the tx's root      checkMerkleInclusion (decisions.md "Ledger batching")
 */
import { verifyDeviceSignature } from '../crypto/ed25519.js';
import { computeChainHash, sha256Hex } from '../crypto/hash.js';
import { ML_DSA_65_PUBLIC_KEY_BYTES, verifyMlDsa65 } from '../crypto/ml-dsa.js';
import type { CheckOutcome, TimestampVerification } from '../crypto/tsa/verify.js';
import { decodeAnchorData, decodeBatchData } from '../ledger/anchor-data.js';
import { anchorLeafHash, rootFromInclusionProof } from './merkle.js';
import type { RpcReceipt, RpcTransaction } from '../ledger/rpc-reader.js';
import type { ChainLink, EvidenceItem, MerkleInclusion } from './records.js';
import { isAnchored } from './records.js';

/** Whether one proof holds, and why, in one line. */
export interface Verdict {
  ok: boolean;
  reason: string;
}

const HASH_HEX = /^[0-9a-fA-F]{64}$/;
const LOWER_HASH_HEX = /^[0-9a-f]{64}$/;
const ZERO_HASH = '0'.repeat(64);
const short = (hex: string) => `${hex.slice(0, 12)}…`;
const yes = (reason: string): Verdict => ({ ok: true, reason });
const no = (reason: string): Verdict => ({ ok: false, reason });

// ── Device ────────────────────────────────────────────────────────────────────────────────────

/** The device's part of a record: what it signed and with which key. */
export interface DeviceProof {
  image_hash: string;
  public_key_hex: string;
  signature_hex: string;
}

/**
 * decisions.md "Device chains": Ed25519 by the device key over the 32 raw bytes of image_hash (the
 * signature over the 64-character hex string is accepted too). A malformed key or signature is a
 * failed verdict, never an exception.
 */
export function checkDeviceSignature(d: DeviceProof): Verdict & { unusableKey?: true } {
  if (!HASH_HEX.test(d.image_hash)) return no('image_hash is not 64 hex characters');
  if (!/^[0-9a-fA-F]{64}$/.test(d.public_key_hex)) return no('the device public key is not a 32-byte key in hex');
  if (!/^[0-9a-fA-F]{128}$/.test(d.signature_hex)) return no('the device signature is not a 64-byte signature in hex');
  const key = d.public_key_hex.toLowerCase();
  let valid: boolean;
  try {
    valid = verifyDeviceSignature(d.signature_hex, d.image_hash, d.public_key_hex);
  } catch (error) {
    return { ok: false, reason: `the device key cannot be used: ${error instanceof Error ? error.message : String(error)}`, unusableKey: true };
  }
  return valid
    ? yes(`Ed25519 signature by device key ${short(key)} verifies over image_hash`)
    : no(`the Ed25519 signature does not verify over image_hash with device key ${short(key)}`);
}

// ── Device chain ──────────────────────────────────────────────────────────────────────────────

/** The chain fields of one link (a stored link, a stored record or a receipt's `device`). */
export interface ChainFields {
  image_hash: string;
  chain_index: number;
  chain_hash: string;
  previous_hash: string | null;
}

/** A chain verdict with what was expected and what was found (for GET /chain/all's broken_links). */
export interface LinkVerdict extends Verdict {
  expected: string | null;
  found: string | null;
}

/**
 * chain_hash(i) = SHA-256(prev || image_hash), prev = 32 zero bytes at i = 0 and the raw
 * previous_hash otherwise (decisions.md "Device chains"). `expected` is the recomputed hash, null
 * when the inputs are not hashes. A missing previous_hash past index 0 is hashed as zeros here
 * and is {@link checkPreviousHash}'s failure.
 */
export function checkChainHash(link: ChainFields): LinkVerdict {
  const index = link.chain_index;
  const base = index === 0 ? null : link.previous_hash;
  if (!LOWER_HASH_HEX.test(link.image_hash.toLowerCase()) || (base !== null && !HASH_HEX.test(base))) {
    return { ok: false, reason: 'chain_hash cannot be recomputed: image_hash or previous_hash is not a hash', expected: null, found: link.chain_hash };
  }
  const expected = computeChainHash(base, link.image_hash);
  const what = index === 0 ? '32 zero bytes' : 'previous_hash';
  return expected === link.chain_hash
    ? { ok: true, reason: `chain_hash = SHA-256(${index === 0 ? 'zeros' : 'previous_hash'} || image_hash) at index ${index}`, expected, found: link.chain_hash }
    : { ok: false, reason: `chain_hash is ${link.chain_hash}, SHA-256(${what} || image_hash) is ${expected}`, expected, found: link.chain_hash };
}

/**
 * previous_hash links to the entry before: null at index 0 (v1 also sends 64 zeros); otherwise
 * the chain_hash of entry i-1 when it is known (`predecessorChainHash`), or at least a hash when
 * it is not (a single record, a receipt, a page whose predecessor is missing).
 */
export function checkPreviousHash(link: ChainFields, predecessorChainHash?: string): LinkVerdict {
  const found = link.previous_hash;
  if (link.chain_index === 0) {
    return found === null || found === ZERO_HASH
      ? { ok: true, reason: 'first link: no previous_hash', expected: null, found }
      : { ok: false, reason: 'chain_index 0 must have no previous_hash', expected: null, found };
  }
  if (predecessorChainHash !== undefined) {
    return found === predecessorChainHash
      ? { ok: true, reason: `previous_hash is the chain_hash of index ${link.chain_index - 1}`, expected: predecessorChainHash, found }
      : { ok: false, reason: `previous_hash is not the chain_hash of index ${link.chain_index - 1}`, expected: predecessorChainHash, found };
  }
  return found !== null && LOWER_HASH_HEX.test(found)
    ? { ok: true, reason: 'previous_hash is a hash (the link before it is not at hand)', expected: null, found }
    : { ok: false, reason: `chain_index ${link.chain_index} needs the previous link's chain_hash as previous_hash`, expected: null, found };
}

/**
 * The state a reader reports for a device-chain link. The write path marks the evidence item
 * anchored before the link, so a link may lag (a crash between the two writes, or a reader
 * between them): a link that is not 'anchored' but whose evidence item is anchored with the same
 * image hash, device key and index is reported as anchored (decisions.md "Faults and retries":
 * evidence anchored ⇔ its link anchored; the lag changes nothing anyone can observe).
 * `item` is the evidence item of `link.image_hash` (undefined when there is none).
 */
export function deriveLinkState(link: ChainLink, item: EvidenceItem | undefined): 'anchored' | 'claimed' {
  if (link.state === 'anchored') return 'anchored';
  return isAnchored(item) &&
    item.image_hash === link.image_hash &&
    item.public_key_hex === link.public_key_hex &&
    item.chain_index === link.chain_index
    ? 'anchored'
    : 'claimed';
}

/** The link as readers show it: its derived state and, when derived from the item, the item's time and transaction. */
export function effectiveLink(link: ChainLink, item: EvidenceItem | undefined): ChainLink {
  if (link.state === 'anchored' || deriveLinkState(link, item) !== 'anchored' || !isAnchored(item)) return link;
  return { ...link, state: 'anchored', anchored_at: link.anchored_at ?? item.anchored_at, tx_hash: link.tx_hash ?? item.tx_hash };
}

// ── Statement and server_hash ───────────────────────────────────────────────────────────────

/** SHA-256 of the canonical statement (the UTF-8 bytes of its RFC 8785 form) is server_hash. */
export function checkServerHash(statementCanonical: string, serverHash: string): Verdict & { recomputed: string } {
  const recomputed = sha256Hex(statementCanonical);
  return recomputed === serverHash.toLowerCase()
    ? { ok: true, reason: `SHA-256 of the RFC 8785 statement is server_hash ${short(recomputed)}`, recomputed }
    : { ok: false, reason: `server_hash is ${serverHash}, but SHA-256 of the RFC 8785 statement is ${recomputed}`, recomputed };
}

/** What a statement must name (lib/evidence/statement.ts): each given field is compared. */
export interface StatementSubject {
  image_hash?: string;
  chain_index?: number;
  chain_hash?: string;
  previous_hash?: string | null;
  public_key_hex?: string;
  signature_hex?: string;
  anchored_at?: string;
}

const STATEMENT_FIELD: Record<keyof StatementSubject, string> = {
  image_hash: 'image_hash',
  chain_index: 'chain_index',
  chain_hash: 'chain_hash',
  previous_hash: 'previous_hash',
  public_key_hex: 'device_public_key',
  signature_hex: 'device_signature',
  anchored_at: 'anchored_at',
};

/** The subject's fields (given ones only) that the statement names differently; hex compared in lower case. */
export function statementMismatches(statement: Record<string, unknown>, subject: StatementSubject): (keyof StatementSubject)[] {
  const out: (keyof StatementSubject)[] = [];
  for (const key of Object.keys(STATEMENT_FIELD) as (keyof StatementSubject)[]) {
    if (!(key in subject) || subject[key] === undefined) continue;
    let want = subject[key];
    if (typeof want === 'string' && key !== 'anchored_at') want = want.toLowerCase();
    const have = statement[STATEMENT_FIELD[key]] ?? (key === 'previous_hash' ? null : undefined);
    if (have !== want) out.push(key);
  }
  return out;
}

// ── Post-quantum signature ──────────────────────────────────────────────────────────────────

/** ML-DSA-65 (FIPS 204 Algorithm 3, pure, empty context) over the 32 bytes of `serverHash`. */
export function checkPqSignature(p: { serverHash: string; publicKey: Uint8Array; signature: Uint8Array }): Verdict {
  if (p.publicKey.length !== ML_DSA_65_PUBLIC_KEY_BYTES) return no(`the public key is ${p.publicKey.length} bytes, ML-DSA-65 keys are ${ML_DSA_65_PUBLIC_KEY_BYTES}`);
  if (!LOWER_HASH_HEX.test(p.serverHash.toLowerCase())) return no('no server_hash to check the signature against');
  let ok: boolean;
  try {
    ok = verifyMlDsa65(p.signature, Buffer.from(p.serverHash, 'hex'), p.publicKey);
  } catch {
    ok = false;
  }
  return ok ? yes(`FIPS 204 signature over server_hash verifies with key ${sha256Hex(p.publicKey).slice(0, 16)}…`) : no('the ML-DSA-65 signature does not verify over server_hash');
}

/** The key is one this service signs (or signed) with: its SHA-256 fingerprint is among `trusted`. */
export function checkPqKey(publicKey: Uint8Array, trusted: readonly string[]): Verdict & { fingerprint: string } {
  const fingerprint = sha256Hex(publicKey);
  const found = trusted.some((t) => t.toLowerCase() === fingerprint);
  return { ok: found, reason: found ? `the key's SHA-256 fingerprint is the trusted ${short(fingerprint)}` : `the key's fingerprint ${fingerprint} is not trusted`, fingerprint };
}

// ── RFC 3161 timestamp ──────────────────────────────────────────────────────────────────────

/** The timestamp checks, in the order the receipt verifier reports them. */
export const TIMESTAMP_CHECKS = ['status', 'imprint', 'signature', 'essCertIdV2', 'eku', 'tsaName', 'policy', 'chain'] as const;
export type TimestampCheckId = (typeof TIMESTAMP_CHECKS)[number];

export interface TimestampVerdict extends Verdict {
  genTime: Date | null;
  /** The earliest notAfter of the validated path (the token holds as of genTime; a certificate may have expired since). */
  validUntil?: Date;
  checks: Record<TimestampCheckId, CheckOutcome>;
}

/**
 * The verdict on an RFC 3161 token from its verification (crypto/tsa/verify.ts, run by the reader
 * with the roots it trusts and image_hash as the expected imprint, RFC 3161 §2.4.2): the token
 * holds when its imprint, signature, ESSCertIDv2, EKU and chain all passed. A token that could
 * not be verified at all (`failure`) fails every check with that reason.
 */
export function checkTimestamp(verification: TimestampVerification | null, failure?: string, now?: Date): TimestampVerdict {
  const checks = {} as Record<TimestampCheckId, CheckOutcome>;
  for (const id of TIMESTAMP_CHECKS) {
    const outcome = verification?.checks[id as keyof TimestampVerification['checks']];
    checks[id] = failure !== undefined || !verification ? { result: 'fail', reason: failure ?? 'not verified' } : (outcome ?? { result: 'skipped', reason: 'not checked' });
  }
  const ok = failure === undefined && verification?.ok === true;
  const failed = TIMESTAMP_CHECKS.filter((id) => checks[id].result === 'fail');
  // Verification as of the time of signing, stated (RFC 3161 §2.4.2, RFC 5280 §6.1 at genTime):
  // a TSA certificate that expired after the token was made does not undo it, and the verdict says so.
  const until = verification?.chainValidUntil;
  const asOf = ok && verification?.genTime ? ` as of its genTime ${verification.genTime.toISOString()}` : '';
  const since = ok && until && now && now.getTime() > until.getTime() ? `; its TSA certificate has since expired (${until.toISOString()}), which does not affect a token made before` : '';
  return {
    ok,
    reason: ok ? `the RFC 3161 token verifies${asOf}: imprint, signature, ESSCertIDv2, EKU and chain${since}` : `the RFC 3161 token does not verify (${failed.join(', ') || 'incomplete'})${failed[0] && failure === undefined ? `: ${checks[failed[0]].reason}` : ''}`,
    genTime: ok || verification?.genTime ? (verification?.genTime ?? null) : null,
    ...(until ? { validUntil: until } : {}),
    checks,
  };
}

// ── Ledger ──────────────────────────────────────────────────────────────────────────────────

/** The transaction as a node returned it now (null: the node does not know it). */
export interface LedgerRead {
  tx: Pick<RpcTransaction, 'from' | 'input' | 'blockNumber'> | null;
  /** Read only for a mined transaction. */
  receipt?: Pick<RpcReceipt, 'status'> | null;
  /** The latest block number, read with the receipt. */
  latestBlock?: number;
}

/** What the transaction must carry and who must have sent it. */
export interface LedgerExpectation {
  image_hash: string;
  /** null when there is no statement to compare with. */
  server_hash: string | null;
  /** The service wallet; unknown (not checked) when undefined. */
  from?: string | undefined;
  /** Confirmations needed (default 1: mined). */
  minConfirmations?: number;
  /** Batch mode: the anchor's inclusion proof; the input data is then the batch's root (undefined or null: a direct anchor). */
  merkle?: unknown;
}

/**
 * Batch mode (decisions.md "Ledger batching"): the anchor's leaf, SHA-256(0x00 || image_hash ||
 * server_hash), leads by its RFC 6962 inclusion path (RFC 9162 §2.1.3.2) to the batch's root.
 * Offline: the root compared here is the one the record names; {@link checkLedgerData} then
 * holds it against the transaction's input. Malformed proofs are a failed verdict, never a throw.
 */
export function checkMerkleInclusion(imageHash: string, serverHash: string | null, merkle: unknown): Verdict {
  const m = merkle as Partial<MerkleInclusion> | null | undefined;
  if (!m || typeof m !== 'object') return no('no inclusion proof');
  if (serverHash === null || !LOWER_HASH_HEX.test(serverHash.toLowerCase()) || !HASH_HEX.test(imageHash)) return no('no image_hash and server_hash to build the leaf from');
  if (typeof m.root !== 'string' || !HASH_HEX.test(m.root)) return no('the batch root is not 32 bytes of hex');
  if (!Array.isArray(m.path) || !m.path.every((p) => typeof p === 'string' && HASH_HEX.test(p))) return no('the inclusion path is not a list of 32-byte hex hashes');
  if (!Number.isSafeInteger(m.leaf_index) || !Number.isSafeInteger(m.tree_size)) return no('leaf_index and tree_size must be integers');
  const leaf = anchorLeafHash(imageHash, serverHash);
  const computed = rootFromInclusionProof(leaf, m.leaf_index as number, m.tree_size as number, m.path.map((p) => Buffer.from(p as string, 'hex')));
  if (computed === null) return no(`the path of ${m.path.length} hashes cannot place leaf ${String(m.leaf_index)} in a tree of ${String(m.tree_size)}`);
  const hex = computed.toString('hex');
  return hex === m.root.toLowerCase()
    ? yes(`leaf ${String(m.leaf_index)} of ${String(m.tree_size)}: its RFC 6962 path leads to root ${short(hex)}`)
    : no(`the inclusion path leads to ${hex}, not to the batch root ${m.root}`);
}

/**
 * The ledger transaction's input data is image_hash || server_hash (decisions.md "Evidence"); for a
 * batched anchor (`merkle` given) it is the batch's root, and the anchor's inclusion proof leads to it.
 */
export function checkLedgerData(input: string, expected: Pick<LedgerExpectation, 'image_hash' | 'server_hash' | 'merkle'>): Verdict {
  if (expected.merkle !== undefined && expected.merkle !== null) {
    let root: string;
    try {
      root = decodeBatchData(input).root;
    } catch (error) {
      return no(`the input data is not a batch root: ${error instanceof Error ? error.message : String(error)}`);
    }
    const inclusion = checkMerkleInclusion(expected.image_hash, expected.server_hash, expected.merkle);
    if (!inclusion.ok) return inclusion;
    const claimed = String((expected.merkle as { root?: unknown }).root).toLowerCase();
    if (claimed !== root) return no(`the transaction carries root ${root}, the inclusion proof leads to ${claimed}`);
    return yes(`input data = the batch's Merkle root; ${inclusion.reason}`);
  }
  let decoded: { imageHash: string; serverHash: string };
  try {
    decoded = decodeAnchorData(input);
  } catch (error) {
    return no(`the input data is not an anchor record: ${error instanceof Error ? error.message : String(error)}`);
  }
  const image = expected.image_hash.toLowerCase();
  if (decoded.imageHash !== image) return no(`the transaction carries image_hash ${decoded.imageHash}, not ${image}`);
  if (expected.server_hash === null) return no('no statement to compare the server_hash with');
  if (decoded.serverHash !== expected.server_hash.toLowerCase()) return no(`the transaction carries server_hash ${decoded.serverHash}, the statement hashes to ${expected.server_hash}`);
  return yes('input data = image_hash || server_hash');
}

/** The ledger transaction as checked now. */
export interface LedgerVerdict {
  found: boolean;
  /** Mined, successful, from the expected wallet, enough confirmations, and its input data carries image_hash and server_hash. */
  valid: boolean;
  status: 'confirmed' | 'pending' | 'failed' | 'not_found';
  block_number: number | null;
  confirmations: number;
  data_matches: boolean;
  from: string | null;
  /** The transaction itself: found, mined, succeeded, sender, confirmations. */
  transaction: Verdict;
  /** Its input data. */
  data: Verdict;
}

/**
 * Confirmations (docs/verify-without-us.md "What the verdict means"): blocks from the transaction's block to the
 * latest one, inclusive (1 = just mined), as of the moment `latestBlock` was read.
 */
export function countConfirmations(blockNumber: number, latestBlock: number): number {
  return Math.max(0, latestBlock - blockNumber + 1);
}

/**
 * What a read of the chain says of a transaction, the one reading every reader uses (the
 * verdict's ledger proof below, the transaction page lib/web/ledger-tx-model.ts): not mined yet,
 * mined but the node has no receipt, mined and succeeded, or mined and reverted.
 */
export type TransactionState = 'not_mined' | 'no_receipt' | 'succeeded' | 'reverted';

export function transactionState(tx: Pick<RpcTransaction, 'blockNumber'>, receipt: Pick<RpcReceipt, 'status'> | null | undefined): TransactionState {
  if (tx.blockNumber === null) return 'not_mined';
  if (!receipt) return 'no_receipt';
  return receipt.status === 'success' ? 'succeeded' : 'reverted';
}

/** Judges a transaction read from the chain against what the evidence says it must be. */
export function checkLedgerTransaction(read: LedgerRead, expected: LedgerExpectation): LedgerVerdict {
  const { tx } = read;
  if (!tx) {
    const none = no('the transaction is not on the chain');
    return { found: false, valid: false, status: 'not_found', block_number: null, confirmations: 0, data_matches: false, from: null, transaction: none, data: no('transaction not found') };
  }
  const data = checkLedgerData(tx.input, expected);
  const base = { found: true, data_matches: data.ok, from: tx.from, data };
  const state = transactionState(tx, read.receipt);
  if (tx.blockNumber === null || state === 'not_mined') {
    return { ...base, valid: false, status: 'pending', block_number: null, confirmations: 0, transaction: no('the transaction is not mined yet (0 confirmations); retry later') };
  }
  const succeeded = state === 'succeeded';
  const confirmations = countConfirmations(tx.blockNumber, read.latestBlock ?? tx.blockNumber);
  const min = expected.minConfirmations ?? 1;
  let transaction: Verdict;
  if (state === 'no_receipt') transaction = no('the node has no receipt for the mined transaction');
  else if (!succeeded) transaction = no(`the transaction reverted in block ${tx.blockNumber}`);
  else if (expected.from !== undefined && expected.from.toLowerCase() !== tx.from.toLowerCase()) transaction = no(`the transaction was sent by ${tx.from}, expected ${expected.from}`);
  else if (confirmations < min) transaction = no(`${confirmations} confirmations, ${min} required`);
  else transaction = yes(`mined in block ${tx.blockNumber}, ${confirmations} confirmation${confirmations === 1 ? '' : 's'}, from ${tx.from}`);
  return {
    ...base,
    valid: transaction.ok && data.ok,
    status: succeeded ? 'confirmed' : 'failed',
    block_number: tx.blockNumber,
    confirmations,
    transaction,
  };
}
