/**
 * The one verdict on an anchored record. Every reader — v1 and v2 verify, the verify page, the PDF
 * certificate, the transaction page and the offline `evidence verify` — asks this function and
 * renders its result; none decides anything of its own. Its inputs are the proofs as stored (or as
 * a receipt carries them) and what the reader could establish with I/O (the RFC 3161 token
 * verified against the roots it trusts, the ML-DSA-65 keys it trusts, the ledger transaction as a
 * node returned it, or the final receipt stored when it became final). The individual checks are
 * proof-check.ts's; this module only composes them, once.
 *
 * What the words mean (docs/verify-without-us.md "What the verdict means"):
 * - a proof `holds` when it was checked now and is right; `fails` when it was checked and is
 *   wrong; `pending` when it is right so far but not complete (the transaction is not mined yet,
 *   or has fewer confirmations than asked); `unchecked` when the reader could not establish it
 *   (no node to ask, a trust anchor not pinned); `absent` when the record has no such proof (the
 *   Merkle inclusion of a direct anchor).
 * - status `verified`: every proof holds. `failed`: some proof fails. `pending`: none fails, and
 *   some is pending or unchecked. A skipped check never counts as passed.
 * - `pq_verified`: the statement hashes to server_hash and names this record, the ML-DSA-65
 *   signature over that hash verifies, and the key is one the service publishes (or the reader pinned).
 * - `confirmations`: blocks from the transaction's block to the latest one, inclusive (1 = just
 *   mined), as of `ledger.checked_at`: the time the chain was read, or, for a final record served
 *   from its stored receipt, the time finality was recorded.
 * - `final`: the transaction reached the configured finality (LEDGER_CONFIRMATION_TAG: mined on a
 *   chain that never reorganises, or at or below the node's finalized block) and the service
 *   recorded its receipt then (`final_since`). A later reading of the chain may add confirmations;
 *   it never turns a final record into a non-final one: it holds, or, if the transaction is no
 *   longer in the block recorded at finality, the ledger proof fails and says so.
 */
import type { TimestampVerdict, LedgerRead, Verdict } from './proof-check.js';
import {
  checkChainHash,
  checkDeviceSignature,
  checkLedgerData,
  checkLedgerTransaction,
  checkMerkleInclusion,
  checkPqKey,
  checkPqSignature,
  checkPreviousHash,
  checkServerHash,
  statementMismatches,
} from './proof-check.js';
import type { ValidityWindow } from '../crypto/key-windows.js';
import { describeSigningTime, judgeKeyWindow, judgeUnpinned, judgeWalletWindow, type SigningTime, type TrustedKey, type TrustSnapshot } from './key-trust.js';
import type { AnchoredEvidence, FinalLedgerReceipt } from './records.js';
import { STATEMENT_TYPE } from './statement.js';

// The key-trust rules live in key-trust.ts; readers import them from here, with the verdict.
export { describeSigningTime, judgeUnpinned, type SigningTime, type TrustedKey, type TrustSnapshot } from './key-trust.js';

export type ProofState = 'holds' | 'fails' | 'pending' | 'unchecked' | 'absent';

export interface ProofResult {
  state: ProofState;
  /** One line: why, in words. */
  reason: string;
}

/** The proofs of an anchored record, in the order readers list them. */
export const PROOF_NAMES = ['statement', 'pq_signature', 'pq_key', 'timestamp', 'timestamp_pq', 'ledger', 'merkle', 'device_signature', 'chain_link'] as const;
export type ProofName = (typeof PROOF_NAMES)[number];

/** What people call each proof (the page, the PDF, the CLI). */
export const PROOF_TITLES: Record<ProofName, string> = {
  statement: 'statement (RFC 8785) hashes to server_hash and names this record',
  pq_signature: 'ML-DSA-65 signature (FIPS 204) over server_hash',
  pq_key: 'ML-DSA-65 key published by the service',
  timestamp: 'RFC 3161 timestamp',
  timestamp_pq: 'RFC 3161 timestamp, post-quantum (ML-DSA-65)',
  ledger: 'ledger transaction',
  merkle: 'Merkle inclusion (RFC 6962 batch)',
  device_signature: "device's Ed25519 signature",
  chain_link: 'device chain link',
};

export type EvidenceStatus = 'verified' | 'pending' | 'failed';

/** What the one fold finds: the status, and (in the order given) what fails and what is open (pending or unchecked). */
export interface FoldedProofs<Id> {
  status: EvidenceStatus;
  failed: Id[];
  open: Id[];
}

/**
 * The one folding rule (docs/verify-without-us.md "What the verdict means"): `failed` when anything fails, else
 * `pending` when anything is pending or unchecked, else `verified` (`absent` counts as nothing).
 * Every reader folds with it: a record's proofs (judgeEvidence), a group of them (the certificate's
 * and the verify page's cards), the proofs of one stand-alone answer and the reports of one
 * `evidence verify` run (lib/cli). Each entry is a name (whatever the reader calls the proof) and
 * its state; a report already folded folds again by its status.
 */
export function foldProofs<Id>(proofs: Iterable<readonly [Id, ProofState | EvidenceStatus]>): FoldedProofs<Id> {
  const failed: Id[] = [];
  const open: Id[] = [];
  for (const [id, state] of proofs) {
    if (state === 'fails' || state === 'failed') failed.push(id);
    else if (state === 'pending' || state === 'unchecked') open.push(id);
  }
  return { status: failed.length > 0 ? 'failed' : open.length > 0 ? 'pending' : 'verified', failed, open };
}

/** {@link foldProofs}' status of states that need no names. */
export function foldStatus(states: Iterable<ProofState | EvidenceStatus>): EvidenceStatus {
  return foldProofs(Array.from(states, (state, i) => [i, state] as const)).status;
}

export interface LedgerSummary {
  status: 'confirmed' | 'pending' | 'failed' | 'not_found' | 'unchecked';
  tx_hash: string;
  /** The input data carries what it must (image_hash || server_hash, or the root the inclusion path leads to); null: not read. */
  data_matches: boolean | null;
  /** The sender as read from the chain (or recorded at finality); null: not read. */
  from: string | null;
  block_number: number | null;
  confirmations: number;
  final: boolean;
  /** When the service recorded the final receipt (null: not final). */
  final_since: string | null;
  block_time: string | null;
  /** When the confirmations were counted (the chain read, or the recording of finality); null: not read. */
  checked_at: string | null;
}

export interface EvidenceVerdict {
  status: EvidenceStatus;
  /** A few words for people: Verified, Not verified, Anchored, ledger confirmation pending, Not verified yet. */
  headline: string;
  /** The sentence after the headline. */
  detail: string;
  /** One sentence for people: `${headline}: ${detail}`. */
  summary: string;
  proofs: Record<ProofName, ProofResult>;
  /** The proofs that fail, in PROOF_NAMES order. */
  failed: ProofName[];
  /** The proofs not established yet (pending or unchecked). */
  open: ProofName[];
  /** statement, ML-DSA-65 signature and key all hold. */
  pq_verified: boolean;
  ledger: LedgerSummary;
  /** The token's genTime, when it could be read. */
  timestamp_time: string | null;
  /**
   * The time the keys' validity windows were judged at (decisions.md "Key validity windows"): the
   * RFC 3161 genTime when the token verifies, else the statement's anchored_at. The verdict holds
   * "as of" this time.
   */
  as_of: SigningTime;
}

/** The proofs of one record, as stored or as a receipt carries them. */
export interface ProofBundle {
  image_hash: string;
  /** server_hash as the record states it. */
  server_hash: string;
  /** The statement's RFC 8785 canonical text (what server_hash is the SHA-256 of). */
  statement: string;
  anchored_at: string;
  pq: { public_key: Uint8Array; signature: Uint8Array };
  device: { public_key_hex: string; signature_hex: string; chain_index: number; chain_hash: string; previous_hash: string | null };
  /** Batch mode: the inclusion proof as stated (absent: a direct anchor). */
  merkle?: unknown;
  tx_hash: string;
}

/** A stored record as the one verdict takes it. */
export function bundleOf(item: AnchoredEvidence): ProofBundle {
  return {
    image_hash: item.image_hash,
    server_hash: item.server_hash,
    statement: item.statement,
    anchored_at: item.anchored_at,
    pq: { public_key: Buffer.from(item.pq_public_key, 'base64'), signature: Buffer.from(item.pq_signature, 'base64') },
    device: { public_key_hex: item.public_key_hex, signature_hex: item.signature_hex, chain_index: item.chain_index, chain_hash: item.chain_hash, previous_hash: item.previous_hash },
    ...(item.merkle ? { merkle: item.merkle } : {}),
    tx_hash: item.tx_hash,
  };
}

/** What the reader established about the ledger transaction. */
export type LedgerEvidence =
  | {
      kind: 'read';
      read: LedgerRead;
      /** The sender the transaction must come from (the service wallet); undefined: the reader has none to hold it to. */
      expectedFrom: string | undefined;
      minConfirmations?: number;
      checkedAt: Date;
      /** The final receipt stored for the record, which this read rechecks. */
      final?: FinalLedgerReceipt | undefined;
      /** The sender the record (or receipt) states; the chain's sender must be it. */
      statedFrom?: string | undefined;
      /**
       * The service wallets came from a trust file, pinned from these services then, and the
       * sender is none of them (`expectedFrom` is then undefined): judged by {@link judgeUnpinned}.
       */
      senderNotPinned?: { wallets: readonly string[]; pinnedBy: readonly TrustSnapshot[] };
    }
  | { kind: 'final'; receipt: FinalLedgerReceipt }
  | { kind: 'unchecked'; reason: string };

export interface VerdictInputs {
  bundle: ProofBundle;
  /** The RFC 3161 token verified against the roots the reader trusts (proof-check.ts checkTimestamp). */
  timestamp: TimestampVerdict;
  /** false: the roots were not the reader's own (a receipt's own root): the token is then at most unchecked. */
  timestampRootTrusted: boolean;
  /**
   * The post-quantum token (ML-DSA-65, RFC 9882) verified against the post-quantum roots the reader
   * trusts, with whether those roots were its own; undefined when the record has none (absent: made
   * before the post-quantum TSA, or while it was off). It counts like every other proof.
   */
  timestampPq?: { verdict: TimestampVerdict; rootTrusted: boolean };
  /** The ML-DSA-65 keys the reader trusts (fingerprints, with their windows when known); null: none pinned (the key is then unchecked). */
  trustedPqKeys: readonly TrustedKey[] | null;
  /**
   * The ML-DSA-65 keys came from a trust file, pinned from these services then: a key not among
   * them is judged by {@link judgeUnpinned}. Absent: the keys are the service's own registry, or a
   * flag's, and a key not among them fails.
   */
  pqKeysPinnedBy?: readonly TrustSnapshot[];
  ledger: LedgerEvidence;
  /**
   * The validity windows of the service wallets the reader knows (the key registry, the trust
   * file): the sender must have been within its window at the record's signing time
   * (decisions.md "Key validity windows"). A sender with no window here is not held to one.
   */
  walletWindows?: readonly { address: string; window: ValidityWindow }[];
}

const holds = (reason: string): ProofResult => ({ state: 'holds', reason });
const fails = (reason: string): ProofResult => ({ state: 'fails', reason });
const fromVerdict = (v: Verdict): ProofResult => (v.ok ? holds(v.reason) : fails(v.reason));

/** The verdict on one anchored record. Pure: no I/O, no clock. */
export function judgeEvidence(input: VerdictInputs): EvidenceVerdict {
  const { bundle: b } = input;
  // The statement's real hash: what the signature and the ledger must cover. A server_hash field
  // that differs from it fails the statement alone, not every proof after it.
  const statementHash = checkServerHash(b.statement, b.server_hash);
  const realHash = statementHash.recomputed;

  const asOf: SigningTime =
    input.timestamp.ok && input.timestamp.genTime ? { at: input.timestamp.genTime.toISOString(), source: 'rfc3161' } : { at: b.anchored_at, source: 'stated' };
  const pq = judgePq(b, input.trustedPqKeys, asOf, input.pqKeysPinnedBy);
  const proofs = {} as Record<ProofName, ProofResult>;
  proofs.statement = pq.statement;
  proofs.pq_signature = pq.pq_signature;
  proofs.pq_key = pq.pq_key;
  proofs.timestamp = judgeTimestamp(input.timestamp, input.timestampRootTrusted, '--root');
  proofs.timestamp_pq = input.timestampPq
    ? judgeTimestamp(input.timestampPq.verdict, input.timestampPq.rootTrusted, '--pq-root')
    : { state: 'absent', reason: 'the record has no post-quantum timestamp (made before the post-quantum TSA, or while it was off)' };
  proofs.merkle = b.merkle === undefined || b.merkle === null ? { state: 'absent', reason: 'a direct anchor: its transaction carries image_hash || server_hash itself' } : fromVerdict(checkMerkleInclusion(b.image_hash, realHash, b.merkle));
  proofs.device_signature = fromVerdict(checkDeviceSignature({ image_hash: b.image_hash, public_key_hex: b.device.public_key_hex, signature_hex: b.device.signature_hex }));
  proofs.chain_link = judgeChainLink(b);
  const { proof: ledgerProof, summary: ledger } = judgeLedger(b, realHash, input.ledger, asOf);
  proofs.ledger = judgeWalletWindow(ledgerProof, ledger.from, input.walletWindows ?? [], asOf);

  const { status, failed, open } = foldProofs(PROOF_NAMES.map((n) => [n, proofs[n].state] as const));
  const { headline, detail } = summarise(status, failed, open, proofs, asOf);
  return {
    status,
    headline,
    detail,
    summary: `${headline}: ${detail}`,
    proofs,
    failed,
    open,
    pq_verified: pq.pq_verified,
    ledger,
    timestamp_time: input.timestamp.genTime ? input.timestamp.genTime.toISOString() : null,
    as_of: asOf,
  };
}

function judgeTimestamp(t: TimestampVerdict, rootTrusted: boolean, flag: '--root' | '--pq-root'): ProofResult {
  if (!t.ok) return fails(t.reason);
  const root = flag === '--root' ? 'the TSA root' : 'the post-quantum TSA root';
  return rootTrusted ? holds(t.reason) : { state: 'unchecked', reason: `${t.reason}, but against the receipt's own root: pin ${root} (evidence trust add <url>, or ${flag})` };
}

/** The post-quantum part of the verdict (also GET /api/v1/pq/verify's, which asks nothing else). */
export interface PqJudgement {
  statement: ProofResult;
  pq_signature: ProofResult;
  pq_key: ProofResult;
  /** "pq verified": the statement holds, the ML-DSA-65 signature over its hash verifies, and the key is trusted. */
  pq_verified: boolean;
  /** SHA-256 of the statement as it is (what the signature must cover). */
  statement_hash: string;
  /** SHA-256 fingerprint of the record's ML-DSA-65 public key. */
  key_fingerprint: string;
}

/**
 * "pq verified" (docs/verify-without-us.md "What the verdict means"): the statement hashes to the stated server_hash,
 * names this record, the ML-DSA-65 signature over the statement's hash verifies, and the key is
 * one the reader trusts (the service's published keys, or the keys a verifier pinned).
 */
export function judgePq(
  b: Pick<ProofBundle, 'statement' | 'server_hash' | 'pq' | 'image_hash' | 'anchored_at' | 'device'>,
  trustedPqKeys: readonly TrustedKey[] | null,
  signingTime: SigningTime = { at: b.anchored_at, source: 'stated' },
  /** The keys came from a trust file, pinned from these services then ({@link VerdictInputs.pqKeysPinnedBy}). */
  pinnedBy?: readonly TrustSnapshot[],
): PqJudgement {
  const statementHash = checkServerHash(b.statement, b.server_hash);
  const statement = judgeStatement(b, statementHash);
  const pq_signature = fromVerdict(checkPqSignature({ serverHash: statementHash.recomputed, publicKey: b.pq.public_key, signature: b.pq.signature }));
  const trusted = trustedPqKeys ?? [];
  const key = checkPqKey(b.pq.public_key, trusted.map((k) => (typeof k === 'string' ? k : k.sha256)));
  const pq_key: ProofResult =
    trustedPqKeys === null
      ? { state: 'unchecked', reason: `the ML-DSA-65 key ${key.fingerprint.slice(0, 16)}… is not pinned: pin it (evidence trust add <url>, or --pq-key)` }
      : key.ok
        ? judgeKeyWindow(key.reason, key.fingerprint, trusted, signingTime)
        : judgeUnpinned({ subject: `the ML-DSA-65 key ${key.fingerprint.slice(0, 16)}…`, among: 'the keys', failure: key.reason }, signingTime, pinnedBy);
  return {
    statement,
    pq_signature,
    pq_key,
    pq_verified: statement.state === 'holds' && pq_signature.state === 'holds' && pq_key.state === 'holds',
    statement_hash: statementHash.recomputed,
    key_fingerprint: key.fingerprint,
  };
}

function judgeStatement(b: Pick<ProofBundle, 'statement' | 'image_hash' | 'anchored_at' | 'device'>, hash: ReturnType<typeof checkServerHash>): ProofResult {
  if (!hash.ok) return fails(hash.reason);
  let statement: Record<string, unknown>;
  try {
    statement = JSON.parse(b.statement) as Record<string, unknown>;
  } catch {
    return fails('the statement is not JSON');
  }
  if (statement.statement_type !== STATEMENT_TYPE) return fails(`the statement's statement_type is ${JSON.stringify(statement.statement_type)}, not ${STATEMENT_TYPE}`);
  const differ = statementMismatches(statement, {
    image_hash: b.image_hash,
    anchored_at: b.anchored_at,
    chain_index: b.device.chain_index,
    chain_hash: b.device.chain_hash,
    previous_hash: b.device.previous_hash,
    public_key_hex: b.device.public_key_hex,
    signature_hex: b.device.signature_hex,
  });
  return differ.length === 0 ? holds(`${hash.reason}; it names this image, time, device and chain entry`) : fails(`the signed statement names another ${differ.join(', ')}`);
}

function judgeChainLink(b: ProofBundle): ProofResult {
  const link = { image_hash: b.image_hash, chain_index: b.device.chain_index, chain_hash: b.device.chain_hash, previous_hash: b.device.previous_hash };
  const previous = checkPreviousHash(link);
  if (!previous.ok) return fails(previous.reason);
  const chain = checkChainHash(link);
  if (!chain.ok) return fails(chain.reason);
  return holds(`${chain.reason}${link.chain_index === 0 ? ' (the first link)' : ' (its predecessor is in GET /api/v1/chain/all/{public_key_hex})'}`);
}

function judgeLedger(b: ProofBundle, realHash: string, evidence: LedgerEvidence, asOf: SigningTime): { proof: ProofResult; summary: LedgerSummary } {
  const base: LedgerSummary = { status: 'unchecked', tx_hash: b.tx_hash, data_matches: null, from: null, block_number: null, confirmations: 0, final: false, final_since: null, block_time: null, checked_at: null };
  const expected = { image_hash: b.image_hash, server_hash: realHash, merkle: b.merkle };
  if (evidence.kind === 'unchecked') return { proof: { state: 'unchecked', reason: evidence.reason }, summary: base };

  if (evidence.kind === 'final') {
    // Served from the receipt stored at finality: read from the chain then and held; its input
    // data is checked again now, offline, against the record.
    const f = evidence.receipt;
    const data = checkLedgerData(f.input_data ?? '', expected);
    const summary: LedgerSummary = {
      ...base,
      status: 'confirmed',
      data_matches: data.ok,
      from: f.from,
      block_number: f.block_number,
      confirmations: f.confirmations,
      final: true,
      final_since: f.recorded_at,
      block_time: f.block_time,
      checked_at: f.recorded_at,
    };
    return { proof: data.ok ? holds(`final since ${f.recorded_at}: mined in block ${f.block_number} (${f.block_time}); ${data.reason}`) : fails(data.reason), summary };
  }

  const v = checkLedgerTransaction(evidence.read, { ...expected, from: evidence.expectedFrom, minConfirmations: evidence.minConfirmations ?? 1 });
  const f = evidence.final;
  const summary: LedgerSummary = {
    ...base,
    status: v.status,
    data_matches: v.found ? v.data_matches : null,
    from: v.from,
    block_number: v.block_number,
    confirmations: v.confirmations,
    final: f !== undefined,
    final_since: f?.recorded_at ?? null,
    block_time: f?.block_time ?? null,
    checked_at: evidence.checkedAt.toISOString(),
  };
  if (!v.found) return { proof: fails(f ? `the transaction recorded final in block ${f.block_number} is gone from the chain` : v.transaction.reason), summary };
  if (!v.data.ok) return { proof: fails(v.data.reason), summary };
  if (evidence.statedFrom !== undefined && v.from !== null && evidence.statedFrom.toLowerCase() !== v.from.toLowerCase()) {
    return { proof: fails(`the record says the transaction came from ${evidence.statedFrom}, the chain says ${v.from}`), summary };
  }
  if (f && v.block_number !== f.block_number) {
    return { proof: fails(`the transaction recorded final in block ${f.block_number} is now in ${v.block_number === null ? 'no block' : `block ${v.block_number}`}`), summary };
  }
  if (v.status === 'pending') return { proof: { state: 'pending', reason: v.transaction.reason }, summary };
  if (v.status === 'failed') return { proof: fails(v.transaction.reason), summary };
  if (!v.transaction.ok) {
    // Mined and succeeded, but not from the expected wallet (fails), or too few confirmations yet (pending).
    return { proof: v.confirmations < (evidence.minConfirmations ?? 1) ? { state: 'pending', reason: v.transaction.reason } : fails(v.transaction.reason), summary };
  }
  if (evidence.expectedFrom === undefined && evidence.senderNotPinned) {
    const { wallets, pinnedBy } = evidence.senderNotPinned;
    const subject = `the transaction's sender ${v.from ?? ''}`;
    return { proof: judgeUnpinned({ subject, among: 'the service wallets', failure: `the transaction was sent by ${v.from ?? ''}, expected ${wallets.join(' or ')}` }, asOf, pinnedBy), summary };
  }
  if (evidence.expectedFrom === undefined) {
    return { proof: { state: 'unchecked', reason: `${v.transaction.reason}; the sender is not held to a pinned service wallet (evidence trust add <url>, or --wallet)` }, summary };
  }
  return { proof: holds(`${v.transaction.reason}; ${v.data.reason}${f ? `; final since ${f.recorded_at}` : ''}`), summary };
}

/** The headline and the sentence after it (summary = `${headline}: ${detail}`). */
function summarise(status: EvidenceStatus, failed: ProofName[], open: ProofName[], proofs: Record<ProofName, ProofResult>, asOf: SigningTime): { headline: string; detail: string } {
  const names = (list: ProofName[]) => list.map((n) => PROOF_TITLES[n]).join(', ');
  if (status === 'verified') return { headline: 'Verified', detail: `every proof was checked and holds, ${describeSigningTime(asOf)}.` };
  if (status === 'failed') return { headline: 'Not verified', detail: `${names(failed)} did not check out (${proofs[failed[0] as ProofName].reason}).` };
  const ledgerOnly = open.length === 1 && open[0] === 'ledger' && proofs.ledger.state === 'pending';
  return ledgerOnly
    ? { headline: 'Anchored, ledger confirmation pending', detail: 'every other proof holds; the ledger transaction is not confirmed yet.' }
    : { headline: 'Not verified yet', detail: `nothing failed, but ${names(open)} ${open.length === 1 ? 'is' : 'are'} not established (${proofs[open[0] as ProofName].reason}).` };
}
