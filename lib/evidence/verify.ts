import { sha256Hex } from '../crypto/hash.js';
import { verifyTimestampResponse } from '../crypto/tsa/verify.js';
import type { RpcReader } from '../ledger/rpc-reader.js';
import {
  checkLedgerTransaction,
  checkStoredEvidence,
  checkTimestamp,
  evidenceVerified,
  type StoredEvidenceVerdicts,
} from './proof-check.js';
import { finalLedgerCheck, type LedgerCheck, storedFinalReceipt } from './final-ledger.js';
import type { AnchoredEvidence, EvidenceItem } from './records.js';
import type { EvidenceRepository } from './repository.js';
import { isAnchored } from './records.js';

export interface VerifyDeps {
  repo: EvidenceRepository;
  rpc: Pick<RpcReader, 'getTransaction' | 'getTransactionReceipt' | 'blockNumber'>;
  /** Roots the RFC 3161 token must chain to (the embedded TSA's root or the configured TSA roots). */
  tsaRoots(): Promise<string[]>;
  /** Fingerprints (SHA-256 hex) of the ML-DSA public keys this service signs or has signed with. */
  trustedPqKeys(): Promise<string[]>;
}

/**
 * The ledger transaction as read from the chain now, or its stored final receipt (final-ledger.ts);
 * the verdict: lib/evidence/proof-check.ts.
 */
export type { LedgerCheck } from './final-ledger.js';

/** Every proof of one hash, checked from the stored bytes (never from stored flags). */
export interface EvidenceVerification {
  image_hash: string;
  found: boolean;
  registered_at: string | null;
  anchored: boolean;
  /** Every proof checks out (proof-check.ts evidenceVerified): statement, ML-DSA-65, timestamp, ledger, device chain entry. */
  verified: boolean;
  checks: {
    statement: boolean;
    pq_signature: boolean;
    pq_key_trusted: boolean;
    timestamp: boolean;
    ledger: LedgerCheck;
    /** The device's Ed25519 signature over image_hash. */
    device_signature: boolean;
    /** chain_hash = SHA-256(prev || image_hash) and previous_hash is well-formed for the index. */
    chain_hash: boolean;
  };
  timestamp_time: string | null;
  record: AnchoredEvidence | null;
}

const NO_LEDGER: LedgerCheck = { found: false, valid: false, status: 'not_found', block_number: null, confirmations: 0, data_matches: false, from: null };

/**
 * Verifies a hash's evidence: the statement hashes to server_hash and names this image; the
 * ML-DSA-65 signature over server_hash verifies with a key we publish; the RFC 3161 token's
 * imprint is image_hash, its signature, ESSCertIDv2, EKU and chain to our TSA root hold; the
 * ledger transaction exists on the chain, succeeded, comes from the recorded wallet and carries
 * image_hash || server_hash (batch mode: the batch's Merkle root, to which the anchor's inclusion
 * path leads). A chain node that cannot be reached throws (503): a verdict is
 * never given on a proof that was not checked.
 */
/** Options of {@link verifyEvidence}. */
export interface VerifyOptions {
  /**
   * Ask the chain even when the record is final and its receipt stored (`?recheck=1`), and read
   * the record from the table even when this instance holds it.
   */
  recheck?: boolean;
}

/**
 * Final records this instance has read (image hash → record): a final record no longer changes
 * (its proofs are immutable, its transaction final and its receipt stored), so verifying it again
 * needs no read at all. Small and bounded (least recently used out first); a Lambda instance keeps
 * it between invocations, a cold one starts empty.
 */
const finalRecords = new Map<string, AnchoredEvidence>();
const FINAL_RECORDS_MAX = 2000;

function rememberFinal(item: AnchoredEvidence): void {
  finalRecords.delete(item.image_hash);
  finalRecords.set(item.image_hash, item);
  if (finalRecords.size > FINAL_RECORDS_MAX) finalRecords.delete(finalRecords.keys().next().value ?? '');
}

function recallFinal(imageHash: string): AnchoredEvidence | undefined {
  const hit = finalRecords.get(imageHash);
  if (hit) {
    finalRecords.delete(imageHash); // most recently used last
    finalRecords.set(imageHash, hit);
  }
  return hit;
}

/** Forgets the final records this instance holds (tests). */
export function forgetFinalRecords(): void {
  finalRecords.clear();
}

export async function verifyEvidence(deps: VerifyDeps, imageHash: string, options: VerifyOptions = {}): Promise<EvidenceVerification> {
  // One strongly consistent read, or none for a final record this instance already holds.
  const item: EvidenceItem | undefined = (options.recheck ? undefined : recallFinal(imageHash)) ?? (await deps.repo.get(imageHash));
  if (!isAnchored(item)) {
    return {
      image_hash: imageHash,
      found: item?.registered_at !== undefined,
      registered_at: item?.registered_at ?? null,
      anchored: false,
      verified: false,
      checks: { statement: false, pq_signature: false, pq_key_trusted: false, timestamp: false, ledger: NO_LEDGER, device_signature: false, chain_hash: false },
      timestamp_time: null,
      record: null,
    };
  }

  // A final transaction is served from its stored receipt: no chain read, unless asked to recheck.
  const final = storedFinalReceipt(item);
  if (final) rememberFinal(item);
  const [proofs, ledger] = await Promise.all([
    checkProofBytes(deps, item),
    final && !options.recheck ? Promise.resolve(finalLedgerCheck(final, item)) : checkLedger(deps.rpc, item),
  ]);
  return {
    image_hash: imageHash,
    found: true,
    registered_at: item.registered_at ?? null,
    anchored: true,
    verified: evidenceVerified(proofs, ledger),
    checks: {
      statement: proofs.statement.ok,
      pq_signature: proofs.pq_signature.ok,
      pq_key_trusted: proofs.pq_key_trusted.ok,
      timestamp: proofs.timestamp.ok,
      ledger,
      device_signature: proofs.device_signature.ok,
      chain_hash: proofs.chain_hash.ok && proofs.previous_hash.ok,
    },
    timestamp_time: proofs.timestamp.genTime ? proofs.timestamp.genTime.toISOString() : null,
    record: item,
  };
}

/**
 * Results of the checks over immutable bytes (statement, ML-DSA-65 signature, RFC 3161 token),
 * memoised per process by the SHA-256 of exactly those bytes and of the trust anchors they were
 * checked against: the same bytes always verify the same way, so a cache hit is the same
 * computation, never a stored flag. The ledger is read from the chain on every request.
 */
const proofCache = new Map<string, Promise<StoredEvidenceVerdicts>>();
const PROOF_CACHE_MAX = 5000;

/**
 * The same memo by record object: a final record served from this instance (recallFinal) is the
 * very object verified before, so its verdicts are found without hashing its ~10 KB of proofs
 * again, as long as the trust anchors are the very same too.
 */
const proofsByRecord = new WeakMap<AnchoredEvidence, { roots: string[]; keys: string[]; verdicts: Promise<StoredEvidenceVerdicts> }>();

async function checkProofBytes(deps: VerifyDeps, item: AnchoredEvidence): Promise<StoredEvidenceVerdicts> {
  const [roots, keys] = await Promise.all([deps.tsaRoots(), deps.trustedPqKeys()]);
  const known = proofsByRecord.get(item);
  if (known && known.roots === roots && known.keys === keys) return known.verdicts;
  const verdicts = checkProofBytesOnce(item, roots, keys);
  proofsByRecord.set(item, { roots, keys, verdicts });
  verdicts.catch(() => proofsByRecord.delete(item));
  return verdicts;
}

async function checkProofBytesOnce(item: AnchoredEvidence, roots: string[], keys: string[]): Promise<StoredEvidenceVerdicts> {
  const key = sha256Hex(
    JSON.stringify([
      item.image_hash, item.statement, item.server_hash, item.chain_hash, item.chain_index, item.previous_hash, item.public_key_hex, item.signature_hex,
      item.anchored_at, item.pq_public_key, item.pq_signature, item.tsa_response, roots, keys,
    ]),
  );
  const hit = proofCache.get(key);
  if (hit) return hit;
  const computed = (async (): Promise<StoredEvidenceVerdicts> => {
    // The RFC 3161 verification builds the path to the roots this service trusts (the reader's part);
    // every verdict is the checker's.
    const timestamp = await verifyTimestampResponse(Buffer.from(item.tsa_response, 'base64'), {
      imprint: Buffer.from(item.image_hash, 'hex'),
      roots,
      hashAlgorithm: 'SHA-256',
    });
    return checkStoredEvidence(item, { timestamp: checkTimestamp(timestamp), trustedPqKeys: keys });
  })();
  if (proofCache.size >= PROOF_CACHE_MAX) proofCache.delete(proofCache.keys().next().value ?? '');
  proofCache.set(key, computed);
  computed.catch(() => proofCache.delete(key));
  return computed;
}

/** Reads the transaction and its receipt from the chain; the verdict is the checker's. */
export async function checkLedger(rpc: VerifyDeps['rpc'], item: AnchoredEvidence): Promise<LedgerCheck> {
  const tx = await rpc.getTransaction(item.tx_hash);
  const [receipt, latestBlock] = tx && tx.blockNumber !== null ? await Promise.all([rpc.getTransactionReceipt(item.tx_hash), rpc.blockNumber()]) : [null, undefined];
  const { transaction: _t, data: _d, ...check } = checkLedgerTransaction(
    { tx, receipt, ...(latestBlock !== undefined ? { latestBlock } : {}) },
    { image_hash: item.image_hash, server_hash: item.server_hash, from: item.ledger_address, merkle: item.merkle },
  );
  return check;
}
