import { sha256Hex } from '../crypto/hash.js';
import { ProcessCache } from '../memo.js';
import { type TimestampVerification, verifyTimestampResponse } from '../crypto/tsa/verify.js';
import type { ValidityWindow } from '../crypto/key-windows.js';
import type { RpcReader } from '../ledger/rpc-reader.js';
import { readLedger } from './ledger-read.js';
import { checkTimestamp, type TimestampVerdict } from './proof-check.js';
import { storedFinalReceipt } from './final-ledger.js';
import type { AnchoredEvidence, EvidenceItem, FinalLedgerReceipt } from './records.js';
import { bundleOf, type EvidenceVerdict, judgeEvidence, type TrustedKey } from './verdict.js';
import type { EvidenceRepository } from './repository.js';
import { isAnchored } from './records.js';

export interface VerifyDeps {
  repo: EvidenceRepository;
  rpc: Pick<RpcReader, 'getTransaction' | 'getTransactionReceipt' | 'blockNumber'>;
  /** Roots the RFC 3161 token must chain to (the embedded TSA's root or the configured TSA roots). */
  tsaRoots(): Promise<string[]>;
  /** Roots the post-quantum token (ML-DSA-65) must chain to; none: a record's post-quantum token fails its chain. */
  tsaPqRoots?(): Promise<string[]>;
  /** TSA certificates retired by a rotation (crypto/tsa/history.ts): a token dated after its certificate's retirement fails. */
  tsaRetirements?(): Promise<readonly { sha256: string; retiredAt: Date }[]>;
  /** The reader's clock, for the verdict's "has since expired" (default: the system clock); tokens are always judged as of their genTime. */
  clock?: () => Date;
  /** Fingerprints (SHA-256 hex) of the ML-DSA public keys this service signs or has signed with. */
  trustedPqKeys(): Promise<TrustedKey[]>;
  /** The service wallets' validity windows (the key registry); absent: senders are not held to windows. */
  walletWindows?(): Promise<{ address: string; window: ValidityWindow }[]>;
}

/** Every proof of one hash, judged now by the one verdict (verdict.ts) from the stored bytes (never from stored flags). */
export interface EvidenceVerification {
  image_hash: string;
  found: boolean;
  /**
   * For a hash not anchored: when any account first registered it (null: none did). Labelled as
   * exactly that wherever it is shown; it is no account's own fact (issue 34 F1: a registration is
   * the fact of the account that made it, and only that account's certificate shows it).
   */
  registered_at: string | null;
  anchored: boolean;
  record: AnchoredEvidence | null;
  /** The one verdict (null when the hash is not anchored). */
  verdict: EvidenceVerdict | null;
}

/** Options of {@link verifyEvidence}. */
export interface VerifyOptions {
  /**
   * Ask the chain even when the record is final and its receipt stored (`?recheck=1`), and read
   * the record from the table even when this instance holds it.
   */
  recheck?: boolean;
}

/**
 * Every verify reads the record (one strongly consistent GetItem), final or not: a record changed
 * in the table, by anyone with access to it, is judged as it now stands, even by an instance that
 * verified it a moment before. (Until 2026-11 an instance held the final records it had read and
 * served them without a read; a record is now final within its anchor's request, and a tampered
 * byte must fail the next verify: test/evidence/verify-tamper.test.ts.) What is memoised is the
 * computation: the verdict of the very same bytes (below).
 */
/** Kept for the tests that called it: verification holds no records any more. */
export function forgetFinalRecords(): void {
  finalVerdicts.clear();
}

/**
 * Verifies a hash's evidence (one verdict, verdict.ts): the statement hashes to server_hash and
 * names this image; the ML-DSA-65 signature over server_hash verifies with a key we publish; the
 * RFC 3161 token's imprint is image_hash, its signature, ESSCertIDv2, EKU and chain to our TSA
 * root hold; the ledger transaction exists on the chain, succeeded, comes from the recorded wallet
 * and carries image_hash || server_hash (batch mode: the batch's Merkle root, to which the
 * anchor's inclusion path leads); the device's signature and chain link hold. A final record is
 * served from its stored final receipt (no chain read) unless `recheck`. A chain node that cannot
 * be reached throws (503): a verdict is never given on a proof that was not checked.
 */
export async function verifyEvidence(deps: VerifyDeps, imageHash: string, options: VerifyOptions = {}): Promise<EvidenceVerification> {
  // One strongly consistent read.
  const item: EvidenceItem | undefined = await deps.repo.get(imageHash);
  if (!isAnchored(item)) {
    const first = await deps.repo.firstRegistration(imageHash, item);
    return { image_hash: imageHash, found: first !== undefined, registered_at: first ?? null, anchored: false, record: null, verdict: null };
  }
  const final = storedFinalReceipt(item);
  // Every fallback is the one shared NONE: the final-verdict memo below compares by identity.
  const [roots, keys, walletWindows, pqRoots, retired] = await Promise.all([
    deps.tsaRoots(),
    deps.trustedPqKeys(),
    deps.walletWindows ? deps.walletWindows() : NONE,
    item.tsa_pq_response ? (deps.tsaPqRoots?.() ?? NONE) : NONE,
    deps.tsaRetirements?.() ?? NONE,
  ]);
  const tsa: TokenTrust = { roots, pqRoots, retired, now: (deps.clock ?? (() => new Date()))() };
  const verdict =
    final && !options.recheck
      ? await finalVerdict(item, final, tsa, keys, walletWindows)
      : judgeEvidence({
          walletWindows,
          bundle: bundleOf(item),
          timestamp: await timestampVerdict(item.image_hash, item.tsa_response, tsa, tsa.roots),
          ...(await pqTimestampInput(item, tsa)),
          timestampRootTrusted: true,
          trustedPqKeys: keys,
          ledger: { kind: 'read', read: await readLedger(deps.rpc, item.tx_hash), expectedFrom: item.ledger_address, checkedAt: new Date(), ...(final ? { final } : {}) },
        });
  // An anchored hash is answered with its anchor's facts only: no account's registration.
  return { image_hash: imageHash, found: true, registered_at: null, anchored: true, record: item, verdict };
}

/** The empty trust list of a reader that has none (one object, so that the memo below can hit). */
const NONE: never[] = [];

/**
 * The verdict of a final record served from its stored receipt: a pure function of the record's
 * bytes and the trust anchors, so it is memoised by the SHA-256 of those bytes (every attribute of
 * the record as read) as long as the trust anchors are the same: one changed byte is another key,
 * judged afresh.
 */
type WalletWindows = { address: string; window: ValidityWindow }[];
const finalVerdicts = new ProcessCache<string, { tsa: TokenTrust; keys: TrustedKey[]; wallets: WalletWindows; verdict: Promise<EvidenceVerdict> }>('final verdicts', 2000);

/** The SHA-256 of every attribute of the record as read (bytes as base64), in a fixed order. */
function recordDigest(item: AnchoredEvidence): string {
  const entries = Object.entries(item as unknown as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sha256Hex(JSON.stringify(entries, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v)));
}

function finalVerdict(item: AnchoredEvidence, final: FinalLedgerReceipt, tsa: TokenTrust, keys: TrustedKey[], wallets: WalletWindows): Promise<EvidenceVerdict> {
  const digest = recordDigest(item);
  const known = finalVerdicts.get(digest);
  // The same trust anchors, and a clock in the same hour (the verdict's words about "since" depend on it).
  if (
    known &&
    known.tsa.roots === tsa.roots &&
    known.tsa.pqRoots === tsa.pqRoots &&
    known.tsa.retired === tsa.retired &&
    known.keys === keys &&
    known.wallets === wallets &&
    sameEpoch(known.tsa.now, tsa.now)
  ) {
    return known.verdict;
  }
  const verdict = Promise.all([timestampVerdict(item.image_hash, item.tsa_response, tsa, tsa.roots), pqTimestampInput(item, tsa)]).then(([timestamp, pq]) =>
    judgeEvidence({ bundle: bundleOf(item), timestamp, ...pq, timestampRootTrusted: true, trustedPqKeys: keys, ledger: { kind: 'final', receipt: final }, walletWindows: wallets }),
  );
  finalVerdicts.set(digest, { tsa, keys, wallets, verdict });
  verdict.catch(() => finalVerdicts.delete(digest));
  return verdict;
}

/**
 * The RFC 3161 verification of a record's token against the roots this service trusts (the
 * expensive step: path building and signatures), memoised per process by the SHA-256 of the token,
 * its imprint and the roots: the same bytes always verify the same way, so a hit is the same
 * computation, never a stored flag.
 */
const timestampCache = new ProcessCache<string, Promise<TimestampVerification | string>>('RFC 3161 verifications', 5000);

/** The trust a reader holds tokens to: the roots (retired ones included), the retirements, and its clock. */
interface TokenTrust {
  roots: string[];
  pqRoots: string[];
  retired: readonly { sha256: string; retiredAt: Date }[];
  now: Date;
}

/**
 * Whether a memoised final verdict may be served at `now`: within the same UTC hour, so that its
 * words about a certificate that "has since expired" lag by an hour at most (the proofs themselves
 * are judged as of genTime and never change).
 */
function sameEpoch(then: Date, now: Date): boolean {
  return Math.floor(then.getTime() / 3_600_000) === Math.floor(now.getTime() / 3_600_000);
}

function timestampVerdict(imageHash: string, response: string, tsa: TokenTrust, roots: string[], untrusted: string[] = []): Promise<TimestampVerdict> {
  const key = sha256Hex(JSON.stringify([imageHash, response, roots, untrusted, tsa.retired]));
  const verification = timestampCache.getOrSet(key, () =>
    verifyTimestampResponse(Buffer.from(response, 'base64'), {
      imprint: Buffer.from(imageHash, 'hex'),
      roots,
      untrusted,
      hashAlgorithm: 'SHA-256',
      retired: tsa.retired,
    }).catch((error: unknown) => `cannot be checked: ${error instanceof Error ? error.message : String(error)}`),
  );
  // The verification is a pure function of the bytes; the words about "since" depend on the clock.
  return verification.then((v) => (typeof v === 'string' ? checkTimestamp(null, v) : checkTimestamp(v, undefined, tsa.now)));
}

/**
 * The post-quantum token's part of the verdict's inputs: verified like the classic one, against
 * the post-quantum roots this service trusts, with the record's own chain as untrusted
 * certificates (the token carries none); nothing when the record has no such token.
 */
async function pqTimestampInput(item: AnchoredEvidence, tsa: TokenTrust): Promise<{ timestampPq?: { verdict: TimestampVerdict; rootTrusted: boolean } }> {
  if (!item.tsa_pq_response) return {};
  return { timestampPq: { verdict: await timestampVerdict(item.image_hash, item.tsa_pq_response, tsa, tsa.pqRoots, item.tsa_pq_certificates ?? []), rootTrusted: true } };
}
