import { hexToBytes } from '../crypto/hash.js';
import type { IssuedTimestamp, PqSigner, TimestampAuthority } from '../crypto/ports.js';
import { DomainError, unavailable } from '../errors.js';
import { describeError, log } from '../log.js';
import type { LedgerPublisher, LedgerReceipt, QuotaPort, ResumeOutcome, SignedTx } from './ports.js';
import type { AnchorClaim, AnchoredEvidence, EvidenceItem, SignedProofs, StoredTx } from './records.js';
import type { EvidenceRepository } from './repository.js';
import { buildStatement, canonicalStatement, computeServerHash } from './statement.js';
import type { StatsPort } from './stats.js';
import { type BatchingDeps, currentBatchKey, finishBatched, joinBatch } from './batch-publish.js';

/**
 * The steps of the anchor's state machine (repository.ts AnchorState), each resumable by any
 * invocation: the request itself, its identical retry, the start-up replay and the scheduled
 * reconciler (reconcile.ts) call the same functions.
 */
export interface AnchorDeps {
  repo: EvidenceRepository;
  signer: PqSigner;
  tsa: TimestampAuthority;
  ledger: LedgerPublisher;
  quota: QuotaPort;
  /** Encodes the ledger input data: image_hash || server_hash. */
  encodeAnchorData(imageHash: string, serverHash: string): Uint8Array;
  /** How long a request waits for the receipt before it answers with the transaction pending. */
  receiptTimeoutMs: number;
  clock?: () => Date;
  /** How long an `accepting` claim is protected before it may be released or taken over. */
  leaseMs?: number;
  /** Public statistics (anchors, new devices, transactions); best-effort, never fails a request. */
  stats?: StatsPort;
  /**
   * Ledger batching (CONTRACT "Ledger batching", batch-publish.ts): with `windowMs` > 0 anchors
   * share one transaction per window. Present in direct mode too, so that anchors a batch-mode
   * run left publishing are still finished.
   */
  batching?: BatchingDeps;
}

export const DEFAULT_LEASE_MS = 20_000;

/** The claim of an `accepting` item is no longer the caller's (released or taken over meanwhile). */
export class ClaimLostError extends Error {
  constructor(readonly imageHash: string) {
    super(`the claim on ${imageHash} was released or taken over`);
    this.name = 'ClaimLostError';
  }
}

/**
 * accepting → publishing: builds the statement, signs it with ML-DSA-65 and time-stamps the image
 * hash (side by side), then has the ledger sign the transaction and stores every proof with it
 * BEFORE the transaction can go out. Returns once the transaction was handed to the node.
 * Throws ClaimLostError when the claim was lost before publishing (nothing went out), a 503
 * DomainError when a dependency failed; `published.txHash` names the transaction the item holds
 * once it reached publishing.
 */
export async function signAndPublish(deps: AnchorDeps, claim: AnchorClaim, published: { txHash?: string }): Promise<EvidenceItem> {
  const statement = buildStatement({
    image_hash: claim.image_hash,
    chain_index: claim.chain_index,
    chain_hash: claim.chain_hash,
    previous_hash: claim.previous_hash,
    device_public_key: claim.public_key_hex,
    device_signature: claim.signature_hex,
    anchored_at: claim.anchored_at,
  });
  const serverHash = computeServerHash(statement);
  const [pqSignature, pqPublicKey, timestamp, tsaCertificates] = await Promise.all([
    dependency('signer_unavailable', 'The post-quantum signer', () => deps.signer.sign(hexToBytes(serverHash))),
    dependency('signer_unavailable', 'The post-quantum signer', () => deps.signer.publicKey()),
    dependency<IssuedTimestamp>('tsa_unavailable', 'The time-stamping authority', () => deps.tsa.timestamp(hexToBytes(claim.image_hash))),
    dependency('tsa_unavailable', 'The time-stamping authority', () => deps.tsa.certificates()),
  ]);
  const proofs: SignedProofs = {
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
  };
  if (deps.batching && deps.batching.windowMs > 0) return publishBatched({ ...deps, batching: deps.batching }, claim, proofs);
  let announced: StoredTx | undefined;
  await dependency('ledger_unavailable', 'The ledger', () =>
    deps.ledger.publish(deps.encodeAnchorData(claim.image_hash, serverHash), claim.image_hash, async (tx) => {
      const stored = storedTx(tx, deps.ledger.chainId);
      // The first signature moves the item to publishing; a later one (the sender gave the nonce
      // of the previous one back, unsent) replaces the transaction the item names. A write whose
      // outcome is unknown is fine: the sender gives this nonce back, and an item left naming
      // the unsent transaction finds it dead when resumed and signs a new one.
      const ok = await stored503(() =>
        announced
          ? deps.repo.replaceTx(claim.image_hash, announced.tx_hash, stored)
          : deps.repo.markPublishing(claim.image_hash, claim.claim_id, proofs, stored),
      );
      if (!ok) throw new ClaimLostError(claim.image_hash);
      announced = stored;
      published.txHash = stored.tx_hash;
    }),
  );
  // The item as stored by the last announcement (no read needed).
  const { lease_expires_at: _lease, ...rest } = claim;
  return { ...rest, ...proofs, ...(announced as StoredTx), anchor_state: 'publishing', pending_shard: 'pending' };
}

/**
 * accepting → publishing in batch mode: the proofs are stored with the batch of the window open
 * now (the item first, then its leaf: batch-publish.ts). Nothing reaches the ledger here; the
 * batch's sealer signs one transaction for the window.
 */
async function publishBatched(deps: AnchorDeps & { batching: BatchingDeps }, claim: AnchorClaim, proofs: SignedProofs): Promise<EvidenceItem> {
  const clock = deps.clock ?? (() => new Date());
  const pk = await dependency('ledger_unavailable', 'The ledger', () => currentBatchKey({ ...deps, batching: deps.batching }, clock().getTime()));
  const batch = { batch_pk: pk, ledger_address: pk.split('#')[1] as string, ledger_chain_id: deps.ledger.chainId };
  if (!(await stored503(() => deps.repo.markPublishing(claim.image_hash, claim.claim_id, proofs, batch)))) throw new ClaimLostError(claim.image_hash);
  await stored503(() => joinBatch({ ...deps, batching: deps.batching }, pk, claim.image_hash, proofs.server_hash));
  const { lease_expires_at: _lease, ...rest } = claim;
  return { ...rest, ...proofs, ...batch, anchor_state: 'publishing', pending_shard: 'pending' };
}

/**
 * publishing → anchored: finishes the transaction the item names (re-sent byte for byte if the
 * node lost it; replaced by a new one only when it provably can never be mined), waits up to
 * `receiptWaitMs` for its receipt, records the anchor, then its chain link. Idempotent; the
 * statistics count the anchor once (only the call that made the move records them).
 */
export async function finishPublishing(
  deps: AnchorDeps,
  item: EvidenceItem,
  receiptWaitMs: number,
  options: { sent?: boolean } = {},
): Promise<AnchoredEvidence> {
  if (item.batch_pk && item.anchor_state === 'publishing') {
    if (!deps.batching) throw unavailable('ledger_unavailable', 'This anchor was batched; batching is not configured here.');
    const anchored = await finishBatched({ ...deps, batching: deps.batching }, item, receiptWaitMs, { fresh: options.sent === true });
    return linked(deps, anchored);
  }
  const clock = deps.clock ?? (() => new Date());
  let current = item;
  let receipt: LedgerReceipt | null = null;
  // `sent`: the caller just handed the named transaction to the node (no need to resume it).
  let sent = options.sent === true;
  for (let attempt = 0; ; attempt++) {
    if (current.anchor_state === 'anchored') return linked(deps, current as AnchoredEvidence);
    if (current.anchor_state !== 'publishing' || !current.tx_hash || current.tx_raw === undefined || current.tx_nonce === undefined) {
      throw new Error(`finishPublishing: ${current.image_hash} is not publishing`);
    }
    const named = current.tx_hash;
    const outcome: ResumeOutcome = sent
      ? { outcome: 'sent', txHash: named }
      : await dependency('ledger_unavailable', 'The ledger', () =>
          deps.ledger.resume({ txHash: named, nonce: current.tx_nonce as number, raw: current.tx_raw as string, ref: current.image_hash }),
        );
    sent = false;
    if (outcome.outcome === 'dead') {
      if (attempt >= 3) throw unavailable('ledger_unavailable', 'The ledger keeps refusing the transaction; the anchor will be finished later.');
      log.warn('anchor: its transaction can never be mined; signing a new one', { image_hash: current.image_hash, tx_hash: named });
      await republish(deps, current);
      current = (await deps.repo.get(current.image_hash)) ?? current;
      continue;
    }
    receipt =
      outcome.outcome === 'mined'
        ? outcome.receipt
        : await deps.ledger.waitForReceipt(outcome.txHash, receiptWaitMs, current.tx_nonce).catch(() => null);
    const anchored = await deps.repo.markAnchored(
      current.image_hash,
      named,
      receipt ? { status: receipt.status, blockNumber: receipt.blockNumber, at: clock().toISOString(), minedTxHash: receipt.txHash ?? named, txHashes: receipt.txHashes } : null,
    );
    if (anchored) {
      await deps.stats?.record({ anchored: 1, transactions: 1, devices: anchored.chain_index === 0 ? 1 : 0 });
      return linked(deps, anchored);
    }
    // Another resumer moved it (or replaced its transaction): read it and go on from there.
    const again = await deps.repo.get(current.image_hash);
    if (!again?.anchor_state) throw new Error(`finishPublishing: ${current.image_hash} vanished`);
    current = again;
  }
}

/** A publishing item whose transaction is dead: a new transaction with the same data, replacing it. */
async function republish(deps: AnchorDeps, item: EvidenceItem): Promise<void> {
  let named = item.tx_hash as string;
  await dependency('ledger_unavailable', 'The ledger', () =>
    deps.ledger.publish(deps.encodeAnchorData(item.image_hash, item.server_hash as string), item.image_hash, async (tx) => {
      const stored = storedTx(tx, deps.ledger.chainId);
      if (!(await stored503(() => deps.repo.replaceTx(item.image_hash, named, stored)))) throw new ClaimLostError(item.image_hash);
      named = stored.tx_hash;
    }),
  ).catch((error: unknown) => {
    // Another resumer replaced it first: it finishes that one.
    if (!(error instanceof ClaimLostError)) throw error;
  });
}

/** The chain link follows its anchored evidence (the crash between the two writes changes nothing readers see). */
async function linked(deps: AnchorDeps, item: AnchoredEvidence): Promise<AnchoredEvidence> {
  await deps.repo.anchorLink(item.public_key_hex, item.chain_index, item.image_hash, item.anchored_at, item.tx_hash);
  return item;
}

/**
 * accepting → released (nothing was published): the evidence item first, then the chain link,
 * then the quota hold, in that order, so that "evidence anchored, link free" is never observable
 * and a crash between the steps leaves only what the next pass finishes (an orphan link is freed
 * by the next claim of its index; an open hold by the quota reconciliation). False when the claim
 * was not released by this call (it moved on, or was already released).
 */
export async function releaseAnchor(deps: Pick<AnchorDeps, 'repo' | 'quota'>, item: EvidenceItem, unsentTx?: string): Promise<boolean> {
  if (!item.claim_id) return false;
  const released = await deps.repo.release(item.image_hash, item.claim_id, unsentTx);
  if (!released) return false;
  if (item.public_key_hex !== undefined && item.chain_index !== undefined) {
    await deps.repo.releaseLink(item.public_key_hex, item.chain_index, item.claim_id);
  }
  if (item.quota_counter && item.quota_hold) await deps.quota.end({ counterKey: item.quota_counter, holdId: item.quota_hold }, 'refund');
  return true;
}

function storedTx(tx: SignedTx, chainId: number): StoredTx {
  return { tx_hash: tx.txHash, tx_nonce: tx.nonce, tx_raw: tx.raw, ledger_address: tx.from, ledger_chain_id: chainId };
}

/** A write of the evidence store; its failure is a 503 `database_unavailable` (the SDK's message is logged, not sent). */
export function stored503<T>(step: () => Promise<T>): Promise<T> {
  return dependency('database_unavailable', 'The database', step);
}

/** Runs one external step; a failure becomes a 503 with a stable code (the cause is logged, not sent). */
export async function dependency<T>(code: string, what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof DomainError || error instanceof ClaimLostError) throw error;
    log.warn('dependency failed', { code, ...describeError(error) });
    throw unavailable(code, `${what} is unavailable. Retry the identical request: it resumes where this one stopped.`);
  }
}
