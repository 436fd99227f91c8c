import { randomUUID } from 'node:crypto';
import { verifyDeviceSignature } from '../crypto/ed25519.js';
import { computeChainHash, hexToBytes } from '../crypto/hash.js';
import type { IssuedTimestamp, PqSigner, TimestampAuthority } from '../crypto/ports.js';
import { badRequest, conflict, HttpError, serviceUnavailable } from '../http/errors.js';
import { describeError, log } from '../log.js';
import type { AnchorProofs, EvidenceRepository } from './repository.js';
import { buildStatement, canonicalStatement, computeServerHash } from './statement.js';
import type { StatsPort } from './stats.js';

/** What the anchoring pipeline needs of the ledger (lib/ledger's sender behind it). */
export interface LedgerPort {
  readonly chainId: number;
  address(): Promise<string>;
  /** Signs, persists and broadcasts a transaction carrying `data`; throws a 503-class error when nothing was sent. */
  submit(data: Uint8Array, meta: { kind: 'anchor'; ref: string }): Promise<{ txHash: string; nonce: number }>;
  /** The receipt, or null when it has not arrived within `timeoutMs` (the transaction stays pending). */
  waitForReceipt(txHash: string, timeoutMs: number): Promise<{ status: 'confirmed' | 'failed'; blockNumber: number } | null>;
}

export interface AnchorDeps {
  repo: EvidenceRepository;
  signer: PqSigner;
  tsa: TimestampAuthority;
  ledger: LedgerPort;
  /** Encodes the ledger input data: image_hash || server_hash. */
  encodeAnchorData(imageHash: string, serverHash: string): Uint8Array;
  receiptTimeoutMs: number;
  clock?: () => Date;
  /** How long a claim protects an unfinished anchor before another request may take the hash over. */
  claimTtlMs?: number;
  /** Public statistics (anchors, new devices, transactions); best-effort, never fails a request. */
  stats?: StatsPort;
}

/** One anchoring request, v1 or v2, after schema validation (hashes lower-case hex). */
export interface AnchorInput {
  imageHash: string;
  chainIndex: number;
  chainHash: string;
  previousHash: string | null;
  signatureHex: string;
  publicKeyHex: string;
  deviceId?: string | undefined;
  accountId: string;
  apiVersion: 'v1' | 'v2';
}

const ZERO_HASH = '0'.repeat(64);
const DEFAULT_CLAIM_TTL_MS = 5 * 60_000;

/**
 * The evidence pipeline (CONTRACT "Device chains" and "Evidence"):
 * 1. check the device's key, Ed25519 signature and chain hash (400s, before anything is written);
 * 2. claim the hash, then the chain position, with conditional writes (409 for the losers);
 * 3. build the canonical statement and server_hash, then sign it with ML-DSA-65 and obtain the
 *    RFC 3161 token over image_hash, in parallel;
 * 4. send the ledger transaction carrying image_hash and server_hash;
 * 5. store every proof and mark the hash anchored: from here the anchor is accepted;
 * 6. await the receipt up to the configured time; past it the transaction stays pending and the
 *    scheduled job (functions/jobs/ledger-finish-pending.ts) records it.
 * A failure in 3 or 4 undoes both claims (503, nothing half-made remains, a retry works).
 */
export async function anchorEvidence(deps: AnchorDeps, input: AnchorInput): Promise<AnchorProofs & { image_hash: string }> {
  const clock = deps.clock ?? (() => new Date());
  const previousHash = checkDeviceProof(input);

  const claimId = randomUUID();
  const claimTtl = deps.claimTtlMs ?? DEFAULT_CLAIM_TTL_MS;
  const claim = await deps.repo.claimHash(input.imageHash, claimId, clock().getTime(), claimTtl);
  if (claim === 'anchored') {
    throw conflict('hash_already_anchored', `The hash ${input.imageHash} is already anchored; verify it at GET /api/v2/evidence/verify/${input.imageHash}.`);
  }
  if (claim === 'in_progress') {
    throw conflict('hash_already_anchored', `The hash ${input.imageHash} is being anchored by another request; it cannot be anchored twice.`);
  }

  let linkClaimed = false;
  const undo = async () => {
    if (linkClaimed) await deps.repo.releaseLink(input.publicKeyHex, input.chainIndex, claimId);
    await deps.repo.releaseHash(input.imageHash, claimId);
  };

  try {
    const linkResult = await deps.repo.claimLink(
      {
        public_key_hex: input.publicKeyHex,
        chain_index: input.chainIndex,
        image_hash: input.imageHash,
        chain_hash: input.chainHash,
        previous_hash: previousHash,
        signature_hex: input.signatureHex,
        device_id: input.deviceId,
        state: 'claimed',
        claim_id: claimId,
        claim_expires_at: clock().getTime() + claimTtl,
      },
      clock().getTime(),
    );
    if (!linkResult.ok) {
      if (linkResult.reason === 'previous_mismatch') {
        throw badRequest(
          'previous_hash_mismatch',
          `previous_hash does not match the chain_hash stored at index ${input.chainIndex - 1} of this device's chain.`,
          { expected_previous_hash: linkResult.expectedPrevious },
        );
      }
      throw conflict(
        'chain_index_conflict',
        linkResult.reason === 'index_taken'
          ? `Index ${input.chainIndex} of this device's chain is already used; the next free index is ${linkResult.nextIndex}.`
          : `Index ${input.chainIndex} does not follow this device's chain; the next free index is ${linkResult.nextIndex}.`,
        { next_index: linkResult.nextIndex },
      );
    }
    linkClaimed = true;

    const anchoredAt = clock().toISOString();
    const statement = buildStatement({
      image_hash: input.imageHash,
      chain_index: input.chainIndex,
      chain_hash: input.chainHash,
      previous_hash: previousHash,
      device_public_key: input.publicKeyHex,
      device_signature: input.signatureHex,
      anchored_at: anchoredAt,
    });
    const serverHash = computeServerHash(statement);

    const [pqSignature, pqPublicKey, timestamp, tsaCertificates] = await Promise.all([
      dependency('signer_unavailable', 'The post-quantum signer', () => deps.signer.sign(hexToBytes(serverHash))),
      dependency('signer_unavailable', 'The post-quantum signer', () => deps.signer.publicKey()),
      dependency<IssuedTimestamp>('tsa_unavailable', 'The time-stamping authority', () => deps.tsa.timestamp(hexToBytes(input.imageHash))),
      dependency('tsa_unavailable', 'The time-stamping authority', () => deps.tsa.certificates()),
    ]);

    const [address, sent] = await Promise.all([
      dependency('ledger_unavailable', 'The ledger', () => deps.ledger.address()),
      dependency('ledger_unavailable', 'The ledger', () =>
        deps.ledger.submit(deps.encodeAnchorData(input.imageHash, serverHash), { kind: 'anchor', ref: input.imageHash }),
      ),
    ]);

    const proofs: AnchorProofs = {
      anchored_at: anchoredAt,
      api_version: input.apiVersion,
      account_id: input.accountId,
      device_id: input.deviceId,
      public_key_hex: input.publicKeyHex,
      signature_hex: input.signatureHex,
      chain_index: input.chainIndex,
      chain_hash: input.chainHash,
      previous_hash: previousHash,
      statement: canonicalStatement(statement),
      server_hash: serverHash,
      pq_algorithm: 'ML-DSA-65',
      pq_key_id: deps.signer.keyId,
      pq_public_key: Buffer.from(pqPublicKey).toString('base64'),
      pq_signature: Buffer.from(pqSignature).toString('base64'),
      tsa_response: Buffer.from(timestamp.response).toString('base64'),
      tsa_gen_time: timestamp.genTime.toISOString(),
      tsa_serial: timestamp.serial,
      tsa_policy: timestamp.policy,
      tsa_certificates: tsaCertificates,
      ledger_chain_id: deps.ledger.chainId,
      ledger_address: address,
      tx_hash: sent.txHash,
      tx_nonce: sent.nonce,
      tx_status: 'pending',
    };
    const completed = await deps.repo.completeAnchor(input.imageHash, claimId, proofs);
    if (!completed) {
      // Only possible if this request outlived its claim (minutes) and another took the hash over.
      log.error('anchor claim lost before completion', { image_hash: input.imageHash, tx_hash: sent.txHash });
      throw conflict('hash_already_anchored', `The hash ${input.imageHash} was anchored by another request.`);
    }
    linkClaimed = false;
    // Independent writes (the statistics never throw): side by side.
    await Promise.all([
      deps.stats?.record({ anchored: 1, transactions: 1, devices: input.chainIndex === 0 ? 1 : 0 }),
      deps.repo.anchorLink(input.publicKeyHex, input.chainIndex, claimId, anchoredAt, sent.txHash),
    ]);

    // Accepted. The receipt is awaited up to the configured time; past it the job records it.
    try {
      const receipt = await deps.ledger.waitForReceipt(sent.txHash, deps.receiptTimeoutMs);
      if (receipt) {
        proofs.tx_status = receipt.status;
        proofs.block_number = receipt.blockNumber;
        proofs.confirmed_at = clock().toISOString();
        await deps.repo.setTxStatus(input.imageHash, sent.txHash, receipt.status, receipt.blockNumber, proofs.confirmed_at);
      }
    } catch (error) {
      log.warn('receipt not recorded; the finishing job will', { image_hash: input.imageHash, tx_hash: sent.txHash, ...describeError(error) });
    }
    return { image_hash: input.imageHash, ...proofs };
  } catch (error) {
    // Still claimed (anything accepted has cleared linkClaimed and never reaches an undo of the hash).
    if (!(error instanceof HttpError && error.status === 409 && error.code === 'hash_already_anchored' && !linkClaimed)) {
      await undo().catch((undoError: unknown) =>
        log.error('undo of a failed anchor failed; its claim expires by itself', { image_hash: input.imageHash, ...describeError(undoError) }),
      );
    }
    throw error;
  }
}

/**
 * Device-side rules, checked before anything is written: the public key and signature are
 * well-formed and the signature verifies, index 0 has no previous hash and later indexes have one,
 * and chain_hash = SHA-256(prev || image_hash). Returns the normalised previous hash.
 */
function checkDeviceProof(input: AnchorInput): string | null {
  if (!/^[0-9a-f]{64}$/.test(input.publicKeyHex)) {
    throw badRequest('invalid_public_key', 'public_key_hex must be a 32-byte Ed25519 public key in hex (64 characters).');
  }
  if (!/^[0-9a-f]{128}$/.test(input.signatureHex)) {
    throw badRequest('invalid_signature', 'signature_hex must be a 64-byte Ed25519 signature in hex (128 characters).');
  }
  let previous = input.previousHash;
  if (input.chainIndex === 0) {
    if (previous !== null && previous !== ZERO_HASH) {
      throw badRequest('invalid_previous_hash', 'At chain_index 0, previous_hash must be null (the first entry has no predecessor).');
    }
    previous = null;
  } else if (previous === null) {
    throw badRequest('invalid_previous_hash', `At chain_index ${input.chainIndex}, previous_hash must be the chain_hash of entry ${input.chainIndex - 1}.`);
  }
  const expected = computeChainHash(previous, input.imageHash);
  if (expected !== input.chainHash) {
    throw badRequest('invalid_chain_hash', 'chain_hash must be SHA-256(previous chain_hash, or 32 zero bytes at index 0, || image_hash) over raw bytes.', {
      expected_chain_hash: expected,
    });
  }
  let valid: boolean;
  try {
    valid = verifyDeviceSignature(input.signatureHex, input.imageHash, input.publicKeyHex);
  } catch {
    throw badRequest('invalid_public_key', 'public_key_hex is not a valid Ed25519 public key.');
  }
  if (!valid) {
    throw badRequest('invalid_signature', 'The Ed25519 signature does not verify for this image_hash and public_key_hex.');
  }
  return previous;
}

/** Runs one external step; a failure becomes a 503 with a stable code (the cause is logged, not sent). */
async function dependency<T>(code: string, what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof HttpError) throw error;
    log.warn('dependency failed', { code, ...describeError(error) });
    throw serviceUnavailable(code, `${what} is unavailable; nothing was recorded. Retry the request.`);
  }
}
