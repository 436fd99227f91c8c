import { verifyMlDsa65 } from '../crypto/ml-dsa.js';
import { sha256Hex } from '../crypto/hash.js';
import { verifyTimestampResponse } from '../crypto/tsa/verify.js';
import { decodeAnchorData } from '../ledger/anchor-data.js';
import type { RpcReader } from '../ledger/rpc-reader.js';
import type { AnchoredEvidence, EvidenceItem, EvidenceRepository } from './repository.js';
import { isAnchored } from './repository.js';

export interface VerifyDeps {
  repo: EvidenceRepository;
  rpc: Pick<RpcReader, 'getTransaction' | 'getTransactionReceipt' | 'blockNumber'>;
  /** Roots the RFC 3161 token must chain to (the embedded TSA's root or the configured TSA roots). */
  tsaRoots(): Promise<string[]>;
  /** Fingerprints (SHA-256 hex) of the ML-DSA public keys this service signs or has signed with. */
  trustedPqKeys(): Promise<string[]>;
}

/** The ledger transaction as read from the chain now. */
export interface LedgerCheck {
  found: boolean;
  /** Mined, successful, from our wallet, and its input data carries image_hash and server_hash. */
  valid: boolean;
  status: 'confirmed' | 'pending' | 'failed' | 'not_found';
  block_number: number | null;
  confirmations: number;
  data_matches: boolean;
  from: string | null;
}

/** Every proof of one hash, checked from the stored bytes (never from stored flags). */
export interface EvidenceVerification {
  image_hash: string;
  found: boolean;
  registered_at: string | null;
  anchored: boolean;
  /** All three proofs check out and the statement matches the hash. */
  verified: boolean;
  checks: {
    statement: boolean;
    pq_signature: boolean;
    pq_key_trusted: boolean;
    timestamp: boolean;
    ledger: LedgerCheck;
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
 * image_hash || server_hash. A chain node that cannot be reached throws (503): a verdict is
 * never given on a proof that was not checked.
 */
export async function verifyEvidence(deps: VerifyDeps, imageHash: string): Promise<EvidenceVerification> {
  const item: EvidenceItem | undefined = await deps.repo.get(imageHash);
  if (!isAnchored(item)) {
    return {
      image_hash: imageHash,
      found: item?.registered_at !== undefined,
      registered_at: item?.registered_at ?? null,
      anchored: false,
      verified: false,
      checks: { statement: false, pq_signature: false, pq_key_trusted: false, timestamp: false, ledger: NO_LEDGER },
      timestamp_time: null,
      record: null,
    };
  }

  const [proofs, ledger] = await Promise.all([checkProofBytes(deps, item), checkLedger(deps.rpc, item)]);
  const { statement, pqSignature, pqKeyTrusted, timestamp } = proofs;

  const verified = statement && pqSignature && pqKeyTrusted && timestamp.ok && ledger.valid;
  return {
    image_hash: imageHash,
    found: true,
    registered_at: item.registered_at ?? null,
    anchored: true,
    verified,
    checks: { statement, pq_signature: pqSignature, pq_key_trusted: pqKeyTrusted, timestamp: timestamp.ok, ledger },
    timestamp_time: timestamp.genTime ? timestamp.genTime.toISOString() : null,
    record: item,
  };
}

interface ProofBytesCheck {
  statement: boolean;
  pqSignature: boolean;
  pqKeyTrusted: boolean;
  timestamp: { ok: boolean; genTime?: Date | undefined };
}

/**
 * Results of the checks over immutable bytes (statement, ML-DSA-65 signature, RFC 3161 token),
 * memoised per process by the SHA-256 of exactly those bytes and of the trust anchors they were
 * checked against: the same bytes always verify the same way, so a cache hit is the same
 * computation, never a stored flag. The ledger is read from the chain on every request.
 */
const proofCache = new Map<string, Promise<ProofBytesCheck>>();
const PROOF_CACHE_MAX = 5000;

async function checkProofBytes(deps: VerifyDeps, item: AnchoredEvidence): Promise<ProofBytesCheck> {
  const [roots, keys] = await Promise.all([deps.tsaRoots(), deps.trustedPqKeys()]);
  const key = sha256Hex(
    JSON.stringify([
      item.image_hash, item.statement, item.server_hash, item.chain_hash, item.chain_index, item.public_key_hex, item.signature_hex,
      item.anchored_at, item.pq_public_key, item.pq_signature, item.tsa_response, roots, keys,
    ]),
  );
  const hit = proofCache.get(key);
  if (hit) return hit;
  const computed = (async (): Promise<ProofBytesCheck> => {
    const pqPublicKey = Buffer.from(item.pq_public_key, 'base64');
    const timestamp = await verifyTimestampResponse(Buffer.from(item.tsa_response, 'base64'), {
      imprint: Buffer.from(item.image_hash, 'hex'),
      roots,
      hashAlgorithm: 'SHA-256',
    });
    return {
      statement: checkStatement(item),
      pqSignature: verifyMlDsa65(Buffer.from(item.pq_signature, 'base64'), Buffer.from(item.server_hash, 'hex'), pqPublicKey),
      pqKeyTrusted: keys.includes(sha256Hex(pqPublicKey)),
      timestamp: { ok: timestamp.ok, genTime: timestamp.genTime },
    };
  })();
  if (proofCache.size >= PROOF_CACHE_MAX) proofCache.delete(proofCache.keys().next().value ?? '');
  proofCache.set(key, computed);
  computed.catch(() => proofCache.delete(key));
  return computed;
}

/** server_hash = SHA-256(statement), and the statement speaks of this image, chain and device. */
export function checkStatement(item: AnchoredEvidence): boolean {
  if (sha256Hex(item.statement) !== item.server_hash) return false;
  try {
    const s = JSON.parse(item.statement) as Record<string, unknown>;
    return (
      s.image_hash === item.image_hash &&
      s.chain_hash === item.chain_hash &&
      s.chain_index === item.chain_index &&
      s.device_public_key === item.public_key_hex &&
      s.device_signature === item.signature_hex &&
      s.anchored_at === item.anchored_at
    );
  } catch {
    return false;
  }
}

/** Reads the transaction and its receipt from the chain and checks them against the record. */
export async function checkLedger(rpc: VerifyDeps['rpc'], item: AnchoredEvidence): Promise<LedgerCheck> {
  const tx = await rpc.getTransaction(item.tx_hash);
  if (!tx) return NO_LEDGER;
  let dataMatches = false;
  try {
    const data = decodeAnchorData(tx.input);
    dataMatches = data.imageHash === item.image_hash && data.serverHash === item.server_hash;
  } catch {
    dataMatches = false;
  }
  const fromMatches = tx.from === item.ledger_address.toLowerCase();
  if (tx.blockNumber === null) {
    return { found: true, valid: false, status: 'pending', block_number: null, confirmations: 0, data_matches: dataMatches, from: tx.from };
  }
  const [receipt, latest] = await Promise.all([rpc.getTransactionReceipt(item.tx_hash), rpc.blockNumber()]);
  const succeeded = receipt?.status === 'success';
  return {
    found: true,
    valid: succeeded && dataMatches && fromMatches,
    status: succeeded ? 'confirmed' : 'failed',
    block_number: tx.blockNumber,
    confirmations: Math.max(0, latest - tx.blockNumber + 1),
    data_matches: dataMatches,
    from: tx.from,
  };
}
