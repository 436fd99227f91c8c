import { randomUUID } from 'node:crypto';
import { type Charge, newHoldId, quotaCounterKey, type QuotaReservation, rateLimitExceeded } from '../accounts/limits.js';
import { quotaExceeded } from '../accounts/quota-holds.js';
import type { TierName } from '../accounts/tiers.js';
import { conflictError, DomainError, invalid, unavailable } from '../errors.js';
import { describeError, log } from '../log.js';
import {
  type AnchorDeps,
  type BatchPublishOptions,
  DEFAULT_LEASE_MS,
  finishPublishing,
  makeProofs,
  publishClaim,
  PublishRefusedError,
  type PublishProgress,
  releaseClaim,
  stored503,
} from './anchor-steps.js';
import { checkDeviceProof, type DeviceProof, requestFingerprint } from './device-proof.js';
import type { AnchorClaim, AnchoredEvidence, EvidenceItem, SignedProofs } from './records.js';
import type { ChainClaimResult } from './repository.js';

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
 * 2. side by side: the request's charge (its rate unit and one quota unit, held under a hold named
 *    after the hash and the request's claim, one write), its chain position (the chain link, claimed
 *    for this hash and claim under a lease) and its proofs (statement, ML-DSA-65 signature, RFC 3161
 *    tokens: no write);
 * 3. publish: one conditional write stores every proof with the signed transaction (direct mode,
 *    BEFORE it can reach a node) or with the batch of the window open now, and claims the hash;
 *    from here the anchor is only ever finished, and the quota unit is kept;
 * 4. anchor: broadcast (or the batch sealed), receipt awaited up to the configured time,
 *    `anchored` (the chain link is marked from the table's changes, derived.ts).
 * Three to four writes on the request path besides the ledger's (the charge, the link, the publish,
 * the anchored state; the leaf in batch mode).
 *
 * A failure before publishing gives the link and the unit back (503; the identical retry succeeds).
 * A failure after it leaves the anchor publishing: the identical retry, the start-up replay or the
 * scheduled reconciler finishes it with the proofs and transaction already made.
 *
 * The identical request (same fingerprint) never waits: it takes the chain link over at once (its
 * claim, with a new lease) and publishes, or finishes the anchor another attempt published, or
 * answers the anchored result as the first request would have. Any other request for the hash gets 409.
 */
export async function anchorEvidence(deps: AnchorDeps, input: AnchorInput): Promise<AnchoredEvidence> {
  const published = await publishAnchor(deps, input);
  return finishPublishing(deps, published.item, deps.receiptTimeoutMs, { sent: published.sent });
}

/** An anchor past its publish: from here it is only ever finished ({@link finishPublishing}). */
export interface PublishedAnchor {
  /** The item as published (or as the identical request's earlier attempt left it: publishing or anchored). */
  item: EvidenceItem;
  /** This call just handed the named transaction to the node (direct mode) or wrote the leaf (batch mode). */
  sent?: boolean;
  /** Batch mode with `deferLeaf`: this call published the item and left its leaf to the caller. */
  leafDeferred?: boolean;
}

/** The batch anchor's choices (anchor-batch.ts): how a batched publish names its batch and writes its leaf, and what its link may skip. */
export interface PublishOptions extends BatchPublishOptions {
  /**
   * The previous link of the device's chain was published by this very caller, with this entry's
   * previous_hash as its chain_hash: the claim of the link may skip reading its neighbours
   * (EvidenceRepository.claimLink).
   */
  previousPublished?: boolean;
  /** The claim made ahead ({@link prepareAnchor}), with its proofs when they were started ahead too. */
  prepared?: PreparedAnchor;
  /**
   * Called once the charge, the link and the proofs are in hand, just before the publish: the
   * batch anchor claims the next entry's link then, beside this entry's publish.
   */
  onClaimed?: () => void;
}

/**
 * Steps 1 to 3 of {@link anchorEvidence}: checked, charged, linked, proven and published. Throws
 * what the request answers when it fails; a failure after the publish leaves the anchor publishing
 * (the item then names this request's claim, and the identical retry finishes it).
 */
export async function publishAnchor(deps: AnchorDeps, input: AnchorInput, options: PublishOptions = {}): Promise<PublishedAnchor> {
  const { claim } = options.prepared ?? prepareAnchor(deps, input);
  const now = (deps.clock ?? (() => new Date()))();

  // The charge, the chain position and the proofs, side by side: one round trip of writes.
  const [charged, linked, proven] = await Promise.allSettled([
    options.prepared?.charge ?? chargeClaim(deps, input, claim),
    options.prepared?.link ?? claimLinkOf(deps, claim, now.getTime(), options.previousPublished === true),
    options.prepared?.proofs ?? makeProofs(deps, claim),
  ]);
  return publishCharged(deps, input, claim, { charged, linked, proven }, options);
}

/**
 * The claim of a chain link for `claim` (EvidenceRepository.claimLink), under a lease that runs from
 * `nowMs`, the claim's own time (a claim prepared ahead may have waited for its turn): `shortcut`,
 * the previous link is known to stay with this entry's previous_hash (a put if absent, no read).
 */
export function claimLinkOf(deps: Pick<AnchorDeps, 'repo' | 'leaseMs'>, claim: AnchorClaim, nowMs: number, shortcut: boolean): Promise<ChainClaimResult> {
  const leaseExpiresAt = nowMs + (deps.leaseMs ?? DEFAULT_LEASE_MS);
  return stored503(() =>
    deps.repo.claimLink(
      {
        public_key_hex: claim.public_key_hex,
        chain_index: claim.chain_index,
        image_hash: claim.image_hash,
        chain_hash: claim.chain_hash,
        previous_hash: claim.previous_hash,
        signature_hex: claim.signature_hex,
        device_id: claim.device_id,
        state: 'claimed',
        claim_id: claim.claim_id,
        lease_expires_at: leaseExpiresAt,
      },
      nowMs,
      shortcut,
    ),
  );
}

/** An anchor request checked and turned into its claim, with its proofs and its charge on the way (the batch anchor makes them ahead). */
export interface PreparedAnchor {
  claim: AnchorClaim;
  proofs?: Promise<SignedProofs>;
  /**
   * The claim's charge made ahead ({@link chargeClaim}): the batch anchor charges the entries of a
   * device before their turn, so that the account's meter takes them in a few grouped writes. An
   * entry that does not publish gives its unit back ({@link givePreparedBack}).
   */
  charge?: Promise<Charge>;
  /** The claim's chain link, claimed ahead ({@link claimLinkOf}); given back with the charge when the entry does not publish. */
  link?: Promise<ChainClaimResult>;
}

/** The charge of a claim: its rate unit, and one quota unit held under the claim's hold. */
export function chargeClaim(deps: Pick<AnchorDeps, 'quota'>, input: AnchorInput, claim: AnchorClaim): Promise<Charge> {
  return deps.quota.charge(input.accountId, input.tier, claim.quota_hold, true);
}

/**
 * A claim prepared ahead that never reached its publish gives back what it took: its quota unit,
 * when its charge held one (its rate unit stays spent, as a refused request's does), and its chain
 * link, when it claimed one of its own. A failure is left to the reconciliation (the quota's) and
 * to the next claim of the index (the link's lease lapses), logged by releaseClaim.
 */
export async function givePreparedBack(deps: Pick<AnchorDeps, 'repo' | 'quota'>, prepared: PreparedAnchor): Promise<void> {
  const [charge, link] = await Promise.all([prepared.charge?.catch(() => undefined), prepared.link?.catch(() => undefined)]);
  const held = charge?.rate.allowed === true && charge.quota?.allowed === true;
  const ownLink = link?.ok === true && !link.held;
  if (held || ownLink) await releaseClaim(deps, prepared.claim, ownLink, held);
}

/**
 * Step 1 of {@link anchorEvidence}: the device's proof checked (a 400 DomainError, thrown before
 * anything is written) and the request's claim made: its id, the time the proofs will state, the
 * quota hold's name.
 */
export function prepareAnchor(deps: AnchorDeps, input: AnchorInput): PreparedAnchor {
  const clock = deps.clock ?? (() => new Date());
  const previousHash = checkDeviceProof(input);
  const fingerprint = requestFingerprint(input, previousHash);
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
    quota_counter: quotaCounterKey(input.accountId, now),
    quota_hold: newHoldId('a', now, `${input.imageHash}:${claimId}`),
  };
  return { claim };
}

/** Steps 2 (what came of the charge, the link and the proofs) and 3 (the publish) of {@link anchorEvidence}. */
async function publishCharged(
  deps: AnchorDeps,
  input: AnchorInput,
  claim: AnchorClaim,
  settled: { charged: PromiseSettledResult<Charge>; linked: PromiseSettledResult<ChainClaimResult>; proven: PromiseSettledResult<SignedProofs> },
  options: PublishOptions,
): Promise<PublishedAnchor> {
  const { charged, linked, proven } = settled;
  const fingerprint = claim.fingerprint;
  const charge = charged.status === 'fulfilled' ? charged.value : undefined;
  const held = charge?.rate.allowed === true && charge.quota?.allowed === true;
  const link = linked.status === 'fulfilled' ? linked.value : undefined;
  // A link this request made is its own to give back. One that held the hash before (`held`: its
  // identical twin's, published or about to be) is never freed by it: its anchor may need it.
  const ownLink = link?.ok === true && !link.held;
  if (!held || !link?.ok || proven.status === 'rejected') {
    // Nothing was published: the link and the unit go back, and the first refusal is the answer.
    await releaseClaim(deps, claim, ownLink, held);
    if (charged.status === 'rejected') {
      if (charged.reason instanceof DomainError) throw charged.reason;
      log.warn('quota reservation failed', describeError(charged.reason));
      throw unavailable('database_unavailable', 'The database is unavailable. Retry the identical request.');
    }
    if (!charge?.rate.allowed) throw rateLimitExceeded((charge as Charge).rate, input.tier);
    if (!charge.quota?.allowed) throw quotaExceeded(charge.quota as QuotaReservation, input.tier);
    if (linked.status === 'rejected') throw linked.reason;
    if (link && !link.ok) throw chainRefusal(link, claim.chain_index);
    throw (proven as PromiseRejectedResult).reason;
  }
  const reservation = charge.quota as QuotaReservation;
  const proofs = proven.value;

  options.onClaimed?.();
  const progress: PublishProgress = {};
  let published: PublishedAnchor;
  try {
    published = await publishClaim(deps, claim, proofs, progress, options);
  } catch (error) {
    if (progress.item) {
      // Publishing: never undone. The identical retry, the replay or the reconciler finishes it;
      // this request's unit pays for it (the item names this request's hold).
      await endHold(deps, reservation, 'settle');
      throw error;
    }
    if (error instanceof PublishRefusedError) return refused(deps, claim, error.current, fingerprint);
    // Nothing published, as far as this request knows. A write that timed out may have landed
    // (a frozen database applies it when it wakes): the item is read, and the claim given back
    // only when it does not name this request's claim. Unread, the hold is left to the
    // reconciliation, which settles it if the item names it, and bars the claim and refunds otherwise.
    const read = await deps.repo.get(claim.image_hash).then(
      (item) => ({ ok: true as const, item }),
      () => ({ ok: false as const, item: undefined }),
    );
    if (read.ok && read.item?.claim_id !== claim.claim_id) await releaseClaim(deps, claim, ownLink, true);
    else if (read.ok && read.item?.anchor_state) await endHold(deps, reservation, 'settle');
    throw error;
  }
  // A publishing anchor is always finished: the unit is kept.
  await endHold(deps, reservation, 'settle');
  return published;
}

/**
 * The publish was refused: the hash has an anchor (or this claim was barred). The identical
 * request's anchor is finished and answered as its own (this request's unit and link go back: the
 * item names the first attempt's); another request's is a 409.
 */
async function refused(deps: AnchorDeps, claim: AnchorClaim, current: EvidenceItem | undefined, fingerprint: string): Promise<PublishedAnchor> {
  const identical = current?.fingerprint === fingerprint && current.anchor_state !== undefined;
  const sameSlot = current?.public_key_hex === claim.public_key_hex && current.chain_index === claim.chain_index;
  // The link is this request's to give back unless the anchor on the hash holds that very slot.
  await releaseClaim(deps, claim, !sameSlot, true);
  if (identical) return { item: current };
  if (!current?.anchor_state) {
    // Barred: the claim lapsed (this request outlived its lease) and its link was freed.
    throw unavailable('database_unavailable', 'This request took too long and gave its claim up. Retry the identical request: it starts afresh.', 1);
  }
  throw conflictError(
    'hash_already_anchored',
    `The hash ${claim.image_hash} is already anchored${current.anchor_state === 'publishing' ? ' (its anchor is being finished)' : ''}; verify it at GET /api/v2/evidence/verify/${claim.image_hash}.`,
  );
}

/** The 400 or 409 of a chain position that could not be claimed. */
function chainRefusal(link: Extract<ChainClaimResult, { ok: false }>, index: number): DomainError {
  if (link.reason === 'previous_mismatch') {
    return invalid('previous_hash_mismatch', `previous_hash does not match the chain_hash stored at index ${index - 1} of this device's chain.`, {
      expected_previous_hash: link.expectedPrevious,
    });
  }
  return conflictError(
    'chain_index_conflict',
    link.reason === 'index_taken'
      ? `Index ${index} of this device's chain is already used; the next free index is ${link.nextIndex}.`
      : `Index ${index} does not follow this device's chain; the next free index is ${link.nextIndex}.`,
    { next_index: link.nextIndex },
    'retryAfterSeconds' in link ? link.retryAfterSeconds : undefined,
  );
}

/** Ends a quota hold; a failure is left to the reconciler (logged, never thrown). */
async function endHold(deps: AnchorDeps, hold: { counterKey: string; holdId: string }, outcome: 'settle' | 'refund'): Promise<void> {
  await deps.quota.end({ counterKey: hold.counterKey, holdId: hold.holdId }, outcome).catch((error: unknown) =>
    log.warn(`quota ${outcome} failed; the reconciler ends the hold`, { counter: hold.counterKey, ...describeError(error) }),
  );
}
