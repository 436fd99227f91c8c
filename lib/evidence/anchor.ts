import { randomUUID } from 'node:crypto';
import { newHoldId, quotaCounterKey, type QuotaReservation } from '../accounts/limits.js';
import { quotaExceeded } from '../accounts/quota-holds.js';
import type { TierName } from '../accounts/tiers.js';
import { conflictError, invalid, unavailable } from '../errors.js';
import { describeError, log } from '../log.js';
import {
  type AnchorDeps,
  ClaimLostError,
  DEFAULT_LEASE_MS,
  finishPublishing,
  type PublishProgress,
  releaseAnchor,
  signAndPublish,
  stored503,
} from './anchor-steps.js';
import { checkDeviceProof, type DeviceProof, requestFingerprint } from './device-proof.js';
import type { AnchorClaim, AnchoredEvidence, EvidenceItem } from './records.js';

export type { AnchorDeps } from './anchor-steps.js';

/** One anchoring request, v1 or v2, after schema validation (hashes lower-case hex). */
export interface AnchorInput extends DeviceProof {
  deviceId?: string | undefined;
  accountId: string;
  /** The caller's tier: its monthly quota pays for the anchor. */
  tier: TierName;
  apiVersion: 'v1' | 'v2';
}

/**
 * Anchors one hash (decisions.md "Device chains", "Evidence", "Faults and retries"), along the
 * transitions of EVIDENCE_ITEM (lib/state-machines.ts, docs/state-machines.md):
 * 1. the device's proof is checked (400s, before anything is written);
 * 2. claim: the hash is claimed (`accepting`, under a lease) while one unit of the monthly quota
 *    is held for it, side by side; then the chain position, for this hash for good;
 * 3. publish: statement, ML-DSA-65 signature and RFC 3161 token; the ledger signs the transaction,
 *    and every proof is stored with it (`publishing`) BEFORE it can reach a node (batch mode: with
 *    the batch of the window open now); the quota unit is kept from here, because a publishing
 *    anchor is always finished;
 * 4. anchor: broadcast (or the batch sealed), receipt awaited up to the configured time,
 *    `anchored`, then the chain link.
 * A failure before publishing gives the claim back (release) and refunds the unit (503; the retry
 * succeeds). A failure after it leaves the anchor publishing: the identical retry, the start-up
 * replay or the scheduled reconciler finishes it with the proofs and transaction already made.
 *
 * The identical request (same fingerprint) never waits for a lease: it resumes the claim at once
 * (`accepting`: it becomes the holder) or finishes it (`publishing`), and answers as if it were the
 * first. Any other request for the hash gets 409.
 */
export async function anchorEvidence(deps: AnchorDeps, input: AnchorInput): Promise<AnchoredEvidence> {
  const clock = deps.clock ?? (() => new Date());
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  const previousHash = checkDeviceProof(input);
  const fingerprint = requestFingerprint(input, previousHash);

  for (let attempt = 0; attempt < 4; attempt++) {
    const now = clock();
    const claimId = randomUUID();
    const claim: AnchorClaim = {
      image_hash: input.imageHash,
      claim_id: claimId,
      fingerprint,
      account_id: input.accountId,
      api_version: input.apiVersion,
      device_id: input.deviceId,
      public_key_hex: input.publicKeyHex,
      signature_hex: input.signatureHex,
      chain_index: input.chainIndex,
      chain_hash: input.chainHash,
      previous_hash: previousHash,
      anchored_at: now.toISOString(),
      lease_expires_at: now.getTime() + leaseMs,
      quota_counter: quotaCounterKey(input.accountId, now),
      quota_hold: newHoldId('a', now, `${input.imageHash}:${claimId}`),
    };
    // The claim and the quota hold side by side (one round trip); each is undone if the other fails.
    const [held, claimedResult] = await Promise.allSettled([
      deps.quota.reserve(input.accountId, input.tier, claim.quota_hold),
      stored503(() => deps.repo.claimHash(claim)),
    ]);
    const reservation = held.status === 'fulfilled' ? held.value : undefined;
    const refund = async () => {
      if (reservation) await endHold(deps, reservation, 'refund');
    };
    if (held.status === 'rejected' || !reservation?.allowed) {
      if (claimedResult.status === 'fulfilled' && claimedResult.value.ok) {
        await releaseAnchor(deps, claimedResult.value.item).catch(() => undefined); // else the identical retry or the reconciler does
      }
      if (held.status === 'rejected') {
        log.warn('quota reservation failed', describeError(held.reason));
        throw unavailable('database_unavailable', 'The database is unavailable. Retry the identical request.');
      }
      throw quotaExceeded(reservation as QuotaReservation, input.tier);
    }
    if (claimedResult.status === 'rejected') {
      await refund();
      throw claimedResult.reason;
    }
    const claimed = claimedResult.value;
    if (claimed.ok) return acceptAndPublish(deps, { ...claim, ...claimed.item }, reservation);

    const current = claimed.current;
    if (!current?.anchor_state) {
      await refund(); // released meanwhile: claim again
      continue;
    }
    if (current.anchor_state === 'anchored') {
      await refund();
      throw conflictError('hash_already_anchored', `The hash ${input.imageHash} is already anchored; verify it at GET /api/v2/evidence/verify/${input.imageHash}.`);
    }
    const identical = current.fingerprint === fingerprint;
    if (identical && current.anchor_state === 'publishing') {
      // The proofs and the transaction exist: finish exactly those. The unit held for the
      // interrupted request pays for the anchor; this request's own goes back.
      await refund();
      return finishPublishing(deps, current, deps.receiptTimeoutMs);
    }
    if (identical) {
      // resume: the identical request takes the claim over at once, whoever held it (an
      // interrupted request, or one still running: it loses its next conditional write and
      // follows). The claim's old quota hold is no longer named by the item: it goes back now.
      const resumed = await stored503(() => deps.repo.resumeClaim(current, claim));
      if (!resumed) {
        await refund(); // it moved on meanwhile: read it again
        continue;
      }
      if (current.quota_counter && current.quota_hold) await endHold(deps, { counterKey: current.quota_counter, holdId: current.quota_hold }, 'refund');
      return acceptAndPublish(deps, { ...claim, ...resumed }, reservation);
    }
    const nowMs = clock().getTime();
    if (current.anchor_state === 'accepting' && (current.lease_expires_at ?? 0) < nowMs) {
      // Another request's claim lapsed without being released: release it (as the reconciler
      // would), then claim again.
      await refund();
      await releaseAnchor(deps, current).catch((error: unknown) => log.warn('release of a lapsed claim failed', { image_hash: input.imageHash, ...describeError(error) }));
      continue;
    }
    await refund();
    const retryAfter = current.anchor_state === 'accepting' ? Math.max(1, Math.ceil(((current.lease_expires_at ?? nowMs) - nowMs) / 1000)) : 2;
    throw conflictError(
      'hash_already_anchored',
      `The hash ${input.imageHash} is being anchored by another request; it cannot be anchored twice. Verify it at GET /api/v2/evidence/verify/${input.imageHash}.`,
      {},
      retryAfter,
    );
  }
  throw conflictError('hash_already_anchored', `The hash ${input.imageHash} is contended by other requests; retry.`, {}, 1);
}

/** From a claim this request holds (state accepting, the version it read) to the anchored item. */
async function acceptAndPublish(deps: AnchorDeps, claimed: EvidenceItem & AnchorClaim, reservation: QuotaReservation): Promise<AnchoredEvidence> {
  const progress: PublishProgress = {};
  let published: { item: EvidenceItem; sent: boolean };
  try {
    const link = await stored503(() =>
      deps.repo.claimLink({
        public_key_hex: claimed.public_key_hex,
        chain_index: claimed.chain_index,
        image_hash: claimed.image_hash,
        chain_hash: claimed.chain_hash,
        previous_hash: claimed.previous_hash,
        signature_hex: claimed.signature_hex,
        device_id: claimed.device_id,
        state: 'claimed',
        claim_id: claimed.claim_id,
      }),
    );
    if (!link.ok) {
      if (link.reason === 'previous_mismatch') {
        throw invalid('previous_hash_mismatch', `previous_hash does not match the chain_hash stored at index ${claimed.chain_index - 1} of this device's chain.`, {
          expected_previous_hash: link.expectedPrevious,
        });
      }
      throw conflictError(
        'chain_index_conflict',
        link.reason === 'index_taken'
          ? `Index ${claimed.chain_index} of this device's chain is already used; the next free index is ${link.nextIndex}.`
          : `Index ${claimed.chain_index} does not follow this device's chain; the next free index is ${link.nextIndex}.`,
        { next_index: link.nextIndex },
      );
    }
    published = await signAndPublish(deps, claimed, progress);
  } catch (error) {
    if (progress.item) {
      // Publishing: never undone. The identical retry, the replay or the reconciler finishes it.
      // This request's unit pays for it (the item names this request's hold).
      await endHold(deps, reservation, 'settle');
      throw error;
    }
    // Nothing was published: give the claim back (conditional on the version this request
    // holds), so that the identical retry starts afresh. A claim the identical request resumed
    // meanwhile is not ours any more: our unit goes back, and this request follows it.
    let releasedNow = false;
    try {
      releasedNow = await releaseAnchor(deps, claimed);
    } catch (undoError) {
      log.warn('undo of a failed anchor failed; the identical retry resumes it, or the reconciler releases it', { image_hash: claimed.image_hash, ...describeError(undoError) });
    }
    if (!releasedNow) {
      // Our unit goes back only when the item is read and no longer names it. Unread (the
      // database does not answer), the item may name it still: a write that timed out may have
      // landed (a frozen database applies it when it wakes), even the move to publishing. The
      // hold is then left to the reconciliation, which settles it if the item names it and is
      // published, and refunds it otherwise: never a unit refunded for an anchor that completes.
      const read = await deps.repo.get(claimed.image_hash).then(
        (item) => ({ ok: true as const, item }),
        () => ({ ok: false as const, item: undefined }),
      );
      if (read.ok && read.item?.quota_hold !== claimed.quota_hold) await endHold(deps, reservation, 'refund');
      if (error instanceof ClaimLostError) return followIdentical(deps, claimed, read.item);
    }
    if (error instanceof ClaimLostError) {
      throw conflictError('hash_already_anchored', `The hash ${claimed.image_hash} was claimed by another request meanwhile.`, {}, 1);
    }
    throw error;
  }
  // A publishing anchor is always finished: the unit is kept (settled) now, side by side with the receipt.
  const [anchored] = await Promise.all([finishPublishing(deps, published.item, deps.receiptTimeoutMs, { sent: published.sent }), endHold(deps, reservation, 'settle')]);
  return anchored;
}

/**
 * This request's claim was resumed by its identical twin (a retry of the same device request):
 * the twin holds it now. Follow it: finish it once it is publishing, as any identical retry would.
 */
async function followIdentical(deps: AnchorDeps, claimed: EvidenceItem & AnchorClaim, item: EvidenceItem | undefined): Promise<AnchoredEvidence> {
  if (item?.fingerprint === claimed.fingerprint && (item.anchor_state === 'publishing' || item.anchor_state === 'anchored')) {
    return finishPublishing(deps, item, deps.receiptTimeoutMs);
  }
  throw conflictError(
    'hash_already_anchored',
    `The hash ${claimed.image_hash} is being anchored by an identical request. Retry this identical request in 1 s: it then resumes.`,
    {},
    1,
  );
}

/** Ends a quota hold; a failure is left to the reconciler (logged, never thrown). */
async function endHold(deps: AnchorDeps, hold: { counterKey: string; holdId: string }, outcome: 'settle' | 'refund'): Promise<void> {
  await deps.quota.end({ counterKey: hold.counterKey, holdId: hold.holdId }, outcome).catch((error: unknown) =>
    log.warn(`quota ${outcome} failed; the reconciler ends the hold`, { counter: hold.counterKey, ...describeError(error) }),
  );
}
