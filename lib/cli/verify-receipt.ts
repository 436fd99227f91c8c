/**
 * The offline verifier: checks a receipt (GET /api/v2/evidence/receipt/{image_hash}) without the
 * service. The verdict is the one every reader gives (lib/evidence/verdict.ts judgeEvidence); this
 * file only does the verifier's I/O and says what it trusted:
 *   - the receipt, read into its proofs (receipt-parse.ts; a malformed receipt gets no verdict);
 *   - the file: its SHA-256 must be the receipt's image_hash (is this receipt about this file?);
 *   - the RFC 3161 token, verified against the TSA roots the user pinned (or, unpinned, the
 *     receipt's own root: then the timestamp is at most `unchecked`);
 *   - the ML-DSA-65 keys and the ledger wallet the user pinned (unpinned: `unchecked`);
 *   - the ledger transaction, read from the node given with --rpc (none: `unchecked`).
 * A proof that was not established is never counted as holding: the receipt is then `pending`
 * (exit code 2), not verified.
 */
import type { TimestampVerification } from '../crypto/tsa/verify.js';
import { verifyTimestampResponse } from '../crypto/tsa/verify.js';
import { describeSubject } from '../crypto/tsa/x509-verify.js';
import { checkTimestamp, type TimestampVerdict } from '../evidence/proof-check.js';
import type { ValidityWindow } from '../crypto/key-windows.js';
import { type EvidenceStatus, type EvidenceVerdict, foldStatus, judgeEvidence, type LedgerEvidence, type LedgerSummary, type TrustedKey, type TrustSnapshot } from '../evidence/verdict.js';
import { readLedger } from '../evidence/ledger-read.js';
import type { RpcReader } from '../ledger/rpc-reader.js';
import { type ParsedReceipt, readReceipt, receiptImageHash } from './receipt-parse.js';

/** What is being verified: a file (hashed by the caller) or a bare hash. */
export type VerifySubject = { kind: 'file'; name: string; sha256: string } | { kind: 'hash'; hash: string };

/** The ledger reads the verifier needs (an RpcReader against any node of the receipt's chain). */
export type LedgerReader = Pick<RpcReader, 'chainId' | 'getTransaction' | 'getTransactionReceipt' | 'blockNumber'>;

export interface VerifyReceiptOptions {
  /** The parsed receipt JSON. */
  receipt: unknown;
  subject: VerifySubject;
  /** Pinned TSA roots (PEM), e.g. from --root or the trust file; any of them may anchor the token. */
  rootsPem?: string[];
  /** Where the pinned roots came from, for the report. */
  rootSource?: string;
  /** Pinned post-quantum (ML-DSA-65) TSA roots (PEM), for the receipt's timestamp_pq (--pq-root, or the trust file). */
  pqRootsPem?: string[];
  /** Retired TSA certificates (the trust file): a token dated after its certificate's retirement fails. */
  tsaRetirements?: readonly { sha256: string; retiredAt: Date }[];
  /** The verifier's clock, for "has since expired" (default now); tokens are judged as of their genTime. */
  now?: Date;
  /** With a reader, the ledger transaction is read from the chain; without, the ledger proof is unchecked. */
  ledger?: LedgerReader;
  /** Confirmations the transaction needs (default 1: mined); fewer leave the ledger proof pending. */
  minConfirmations?: number;
  /** Pinned SHA-256 fingerprints of the service's ML-DSA-65 public keys (--pq-key, or the trust file: retired keys too). */
  pqKeyFingerprints?: string[];
  /** Pinned ML-DSA-65 keys with their validity windows (the trust file); used with pqKeyFingerprints. */
  pqKeys?: TrustedKey[];
  /** Where the pinned ML-DSA-65 key(s) came from, for the report. */
  pqKeySource?: string;
  /** Pinned ledger wallet addresses: the transaction must come from one of them. */
  wallets?: string[];
  /** Where the pinned wallet(s) came from, for the report. */
  walletSource?: string;
  /** The pinned wallets' validity windows (the trust file). */
  walletWindows?: { address: string; window: ValidityWindow }[];
  /** The ML-DSA-65 keys come from a trust file, pinned from these services then (a key made since is not established; verdict.ts judgeUnpinned). */
  pqKeysPinnedBy?: TrustSnapshot[];
  /** The same for the wallets. */
  walletsPinnedBy?: TrustSnapshot[];
}

/** Where a trust anchor came from. */
export interface TrustNote {
  source: 'pinned' | 'receipt' | 'none';
  detail: string;
}

/** The whole report. */
export interface ReceiptVerification {
  /** verified: every proof holds and the file is the receipt's; failed: something does not; pending: nothing failed, something is not established. */
  status: EvidenceStatus;
  /** status === 'verified'. */
  ok: boolean;
  /** One sentence for people (the verdict's, or why the receipt is not for this file, or malformed). */
  summary: string;
  /** The summary after its headline. */
  detail: string;
  /** Is this receipt about the file (or hash) given? */
  file: { holds: boolean; reason: string };
  /** A malformed receipt: what is wrong with it (then `verdict` is null). */
  problems: string[];
  /** The one verdict over the receipt's proofs. */
  verdict: EvidenceVerdict | null;
  /** The RFC 3161 token's own checks (imprint, signature, ESSCertIDv2, EKU, TSA name, policy, chain). */
  timestamp_checks: TimestampVerdict['checks'] | null;
  root: TrustNote;
  wallet: TrustNote;
  pq_key: TrustNote;
  image_hash: string | null;
  anchored_at: string | null;
  timestamp: { gen_time: string | null; tsa: string | null };
  ledger: (LedgerSummary & { chain_id: number }) | null;
}

/** Verifies a receipt. Never throws for a bad receipt: its problems are the report. */
export async function verifyReceipt(options: VerifyReceiptOptions): Promise<ReceiptVerification> {
  const file = checkSubject(options.subject, receiptImageHash(options.receipt));
  const pinnedPq: TrustedKey[] = [...(options.pqKeyFingerprints ?? []).map((x) => x.toLowerCase()), ...(options.pqKeys ?? [])];
  const wallets = options.wallets ?? [];
  const pqKey: TrustNote =
    pinnedPq.length > 0
      ? { source: 'pinned', detail: `pinned${options.pqKeySource ? ` (${options.pqKeySource})` : ''}` }
      : { source: 'none', detail: 'not pinned: pin it with --pq-key or evidence trust add <url>' };
  const wallet: TrustNote =
    wallets.length > 0
      ? { source: 'pinned', detail: `pinned ${wallets.join(', ')}${options.walletSource ? ` (${options.walletSource})` : ''}` }
      : { source: 'none', detail: 'not pinned: pin the service wallet with --wallet or evidence trust add <url>' };
  const reading = readReceipt(options.receipt);
  if (!reading.ok) {
    return {
      status: 'failed',
      ok: false,
      summary: `Not verified: the receipt is malformed (${reading.problems.join('; ')}).`,
      detail: `the receipt is malformed (${reading.problems.join('; ')}).`,
      file,
      problems: reading.problems,
      verdict: null,
      timestamp_checks: null,
      root: { source: 'none', detail: 'not used: the receipt is malformed' },
      wallet,
      pq_key: pqKey,
      image_hash: receiptImageHash(options.receipt),
      anchored_at: null,
      timestamp: { gen_time: null, tsa: null },
      ledger: null,
    };
  }
  const r = reading.receipt;
  const { root, timestamp, verification } = await verifyToken(r, options);
  const pqToken = r.pq ? await verifyToken({ ...r, token: r.pq.token, certificates: r.pq.certificates, policy: r.pq.policy }, { ...options, rootsPem: options.pqRootsPem ?? [] }) : undefined;
  const verdict = judgeEvidence({
    bundle: r.bundle,
    timestamp,
    ...(pqToken ? { timestampPq: { verdict: pqToken.timestamp, rootTrusted: pqToken.root.source === 'pinned' } } : {}),
    timestampRootTrusted: root.source === 'pinned',
    trustedPqKeys: pinnedPq.length > 0 ? pinnedPq : null,
    ...(options.pqKeysPinnedBy ? { pqKeysPinnedBy: options.pqKeysPinnedBy } : {}),
    ledger: await readLedgerEvidence(r, options, wallets),
    ...(options.walletWindows ? { walletWindows: options.walletWindows } : {}),
  });
  const status = foldStatus([file.holds ? 'holds' : 'fails', verdict.status]);
  return {
    status,
    ok: status === 'verified',
    summary: file.holds ? verdict.summary : `Not verified: ${file.reason}.`,
    detail: file.holds ? verdict.detail : `${file.reason}.`,
    file,
    problems: [],
    verdict,
    timestamp_checks: timestamp.checks,
    root,
    wallet,
    pq_key: pqKey,
    image_hash: r.bundle.image_hash,
    anchored_at: r.bundle.anchored_at,
    timestamp: { gen_time: verdict.timestamp_time, tsa: (r.certificates[0] ? describeSubject(r.certificates[0]) : null) ?? verification?.tsaName ?? null },
    ledger: { ...verdict.ledger, chain_id: r.chainId },
  };
}

/** Is the receipt about this file (or hash)? */
function checkSubject(subject: VerifySubject, imageHash: string | null): ReceiptVerification['file'] {
  if (imageHash === null) return { holds: false, reason: 'the receipt has no image_hash' };
  if (subject.kind === 'file') {
    return subject.sha256 === imageHash
      ? { holds: true, reason: `SHA-256 of ${subject.name} is the receipt's image_hash ${imageHash.slice(0, 12)}…` }
      : { holds: false, reason: `SHA-256 of ${subject.name} is ${subject.sha256}, the receipt is for ${imageHash}: not the same file` };
  }
  const given = subject.hash.toLowerCase();
  return given === imageHash
    ? { holds: true, reason: "the given hash is the receipt's image_hash (no file was hashed)" }
    : { holds: false, reason: `the given hash ${given} is not the receipt's image_hash ${imageHash}` };
}

/** The RFC 3161 token against the pinned roots, or (unpinned) the receipt's own last certificate. */
async function verifyToken(r: ParsedReceipt, options: VerifyReceiptOptions): Promise<{ root: TrustNote; timestamp: TimestampVerdict; verification: TimestampVerification | null }> {
  const pinned = options.rootsPem ?? [];
  const own = r.certificates[r.certificates.length - 1];
  const root: TrustNote =
    pinned.length > 0
      ? { source: 'pinned', detail: `pinned${options.rootSource ? ` (${options.rootSource})` : ''}` }
      : own
        ? { source: 'receipt', detail: 'from receipt (not pinned): proves internal consistency only; pin the TSA root with --root' }
        : { source: 'none', detail: 'none: the receipt carries no TSA certificate; pass --root' };
  try {
    const verification = await verifyTimestampResponse(r.token, {
      imprint: Buffer.from(r.bundle.image_hash, 'hex'),
      roots: pinned.length > 0 ? pinned : own !== undefined ? [own] : [],
      untrusted: r.certificates,
      hashAlgorithm: 'SHA-256',
      ...(r.policy ? { policy: r.policy } : {}),
      ...(options.tsaRetirements ? { retired: options.tsaRetirements } : {}),
    });
    return { root, timestamp: checkTimestamp(verification, undefined, options.now ?? new Date()), verification };
  } catch (error) {
    return { root, timestamp: checkTimestamp(null, `cannot be checked: ${error instanceof Error ? error.message : String(error)}`), verification: null };
  }
}

/** The ledger transaction as the node given with --rpc returns it; without one, or a node on another chain, it is not established. */
async function readLedgerEvidence(r: ParsedReceipt, options: VerifyReceiptOptions, wallets: string[]): Promise<LedgerEvidence> {
  const rpc = options.ledger;
  if (!rpc) return { kind: 'unchecked', reason: 'not read: no --rpc given (any node of chain ' + String(r.chainId) + ' will do)' };
  try {
    const nodeChain = await rpc.chainId();
    if (nodeChain !== r.chainId) return { kind: 'unchecked', reason: `not read: the node is on chain ${nodeChain}, the transaction on chain ${r.chainId}` };
    const read = await readLedger(rpc, r.bundle.tx_hash);
    // The sender must be one of the pinned wallets; unpinned, nothing holds it to the service. One
    // that is none of a trust file's wallets may be one the service rotated to since it was pinned.
    const from = read.tx?.from.toLowerCase();
    const pinned = wallets.find((w) => w.toLowerCase() === from);
    const snapshots = options.walletsPinnedBy;
    const expectedFrom = pinned ?? (snapshots ? undefined : wallets[0]);
    return {
      kind: 'read',
      read,
      expectedFrom,
      ...(pinned === undefined && wallets.length > 0 && snapshots ? { senderNotPinned: { wallets, pinnedBy: snapshots } } : {}),
      minConfirmations: options.minConfirmations ?? 1,
      checkedAt: new Date(),
      ...(r.final ? { final: r.final } : {}),
      ...(r.statedFrom !== null ? { statedFrom: r.statedFrom } : {}),
    };
  } catch (error) {
    return { kind: 'unchecked', reason: `not read: the node could not be read (${error instanceof Error ? error.message : String(error)})` };
  }
}
