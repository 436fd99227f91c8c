import { randomUUID } from 'node:crypto';
import { newHoldId, quotaCounterKey, type QuotaReservation } from '../accounts/limits.js';
import { quotaExceeded } from '../accounts/quota-holds.js';
import type { TierName } from '../config.js';
import { conflictError, invalid, unavailable } from '../errors.js';
import { describeError, log } from '../log.js';
import {
  type AnchorDeps,
  ClaimLostError,
  DEFAULT_LEASE_MS,
  finishPublishing,
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
 * Anchors one hash (CONTRACT "Device chains", "Evidence", "Faults and retries"):
 * 1. the device's proof is checked (400s, before anything is written);
 * 2. the hash is claimed (`accepting`, under a lease) while one unit of the monthly quota is held
 *    for it, side by side; then the chain position, for this hash for good;
 * 3. statement, ML-DSA-65 signature and RFC 3161 token; the ledger signs the transaction, and
 *    every proof is stored with it (`publishing`) BEFORE it can reach a node; the quota unit is
 *    kept from here, because a publishing anchor is always finished;
 * 4. broadcast, receipt awaited up to the configured time, `anchored`, then the chain link.
 * A failure before publishing undoes the claim and refunds the unit (503; the retry succeeds).
 * A failure after it leaves the anchor publishing: the identical retry, the start-up replay or
 * the scheduled reconciler finishes it with the very transaction already signed.
 *
 * The identical retry (same fingerprint) resumes: a publishing anchor is finished and answered as
 * if this were the first request; a lapsed `accepting` claim is taken over. Any other request
 * for the hash gets 409.
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
        await deps.repo.release(claim.image_hash, claim.claim_id).catch(() => undefined); // else the reconciler does
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
    if (claimed.ok) return acceptAndPublish(deps, claim, reservation);

    const current = claimed.current;
    const nowMs = clock().getTime();
    const lapsed = current?.anchor_state === 'accepting' && (current.lease_expires_at ?? 0) < nowMs;
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
    if (identical && lapsed) {
      const taken = await stored503(() => deps.repo.takeOver(input.imageHash, current.claim_id as string, claim, clock().getTime()));
      if (!taken) {
        await refund();
        continue;
      }
      // The hold of the interrupted request is no longer named by the item: the reconciler refunds it.
      return acceptAndPublish(deps, claim, reservation);
    }
    if (lapsed) {
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
      `The hash ${input.imageHash} is being anchored by another request; it cannot be anchored twice. ` +
        (identical ? `Retry this identical request in ${retryAfter} s: it then resumes.` : `Verify it at GET /api/v2/evidence/verify/${input.imageHash}.`),
      {},
      retryAfter,
    );
  }
  throw conflictError('hash_already_anchored', `The hash ${input.imageHash} is contended by other requests; retry.`, {}, 1);
}

/** From a claim this request holds (state accepting) to the anchored item. */
async function acceptAndPublish(deps: AnchorDeps, claim: AnchorClaim, reservation: QuotaReservation): Promise<AnchoredEvidence> {
  const published: { txHash?: string } = {};
  let publishing: EvidenceItem;
  try {
    const link = await stored503(() =>
      deps.repo.claimLink({
        public_key_hex: claim.public_key_hex,
        chain_index: claim.chain_index,
        image_hash: claim.image_hash,
        chain_hash: claim.chain_hash,
        previous_hash: claim.previous_hash,
        signature_hex: claim.signature_hex,
        device_id: claim.device_id,
        state: 'claimed',
        claim_id: claim.claim_id,
      }),
    );
    if (!link.ok) {
      if (link.reason === 'previous_mismatch') {
        throw invalid('previous_hash_mismatch', `previous_hash does not match the chain_hash stored at index ${claim.chain_index - 1} of this device's chain.`, {
          expected_previous_hash: link.expectedPrevious,
        });
      }
      throw conflictError(
        'chain_index_conflict',
        link.reason === 'index_taken'
          ? `Index ${claim.chain_index} of this device's chain is already used; the next free index is ${link.nextIndex}.`
          : `Index ${claim.chain_index} does not follow this device's chain; the next free index is ${link.nextIndex}.`,
        { next_index: link.nextIndex },
      );
    }
    publishing = await signAndPublish(deps, claim, published);
  } catch (error) {
    // Nothing went out: undo the claim (and, when the item already names a transaction, that
    // transaction's record: the ledger refused it and gave its nonce back) so that the identical
    // retry starts afresh. A claim lost to a take-over belongs to the retry: release() leaves it
    // alone. An undo that fails is finished by the reconciler (the same steps).
    try {
      if (!(await releaseAnchor(deps, claim, published.txHash))) {
        // Not ours to release any more (taken over by the identical retry): our own unit goes back.
        const item = await deps.repo.get(claim.image_hash);
        if (item?.quota_hold !== claim.quota_hold) await endHold(deps, reservation, 'refund');
      }
    } catch (undoError) {
      log.warn('undo of a failed anchor failed; the reconciler settles it', { image_hash: claim.image_hash, ...describeError(undoError) });
    }
    if (error instanceof ClaimLostError) {
      throw conflictError('hash_already_anchored', `The hash ${claim.image_hash} was taken over by another request for it.`);
    }
    throw error;
  }
  // A publishing anchor is always finished: the unit is kept (settled) now, side by side with the receipt.
  const [anchored] = await Promise.all([finishPublishing(deps, publishing, deps.receiptTimeoutMs, { sent: true }), endHold(deps, reservation, 'settle')]);
  return anchored;
}

/** Ends this request's quota hold; a failure is left to the reconciler (logged, never thrown). */
async function endHold(deps: AnchorDeps, reservation: QuotaReservation, outcome: 'settle' | 'refund'): Promise<void> {
  await deps.quota.end({ counterKey: reservation.counterKey, holdId: reservation.holdId }, outcome).catch((error: unknown) =>
    log.warn(`quota ${outcome} failed; the reconciler ends the hold`, { counter: reservation.counterKey, ...describeError(error) }),
  );
}
