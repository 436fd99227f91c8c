import { conflictError, DomainError, invalid } from '../errors.js';
import { describeError, log } from '../log.js';
import { type BatchStepDeps, currentBatchKey } from './batch-publish.js';
import type { BatchLeaf } from './batch-store.js';
import { anchorLeafHash } from './merkle.js';
import { type AnchorDeps, type AnchorInput, chargeClaim, claimLinkOf, givePreparedBack, type PreparedAnchor, prepareAnchor, publishAnchor, type PublishedAnchor } from './anchor.js';
import { finishPublishing, makeProofs } from './anchor-steps.js';
import type { AnchorClaim, AnchoredEvidence } from './records.js';

/**
 * Many anchors in one request (POST /api/v2/evidence/anchor/batch; decisions.md "Batch anchoring"):
 * a phone's queue of device-chain entries, each anchored exactly as POST /evidence/anchor anchors it
 * alone ({@link publishAnchor}, {@link finishPublishing}: the same state machine, the same charge,
 * the same identical-retry rules), with three rules of the batch's own:
 *
 * 1. Chain order. The entries of one device (one public key) are published one after the other,
 *    in request order, and their chain indexes must rise; an entry whose index does not is refused
 *    (400 `chain_order`) and nothing of it is written. Entries of different devices run side by
 *    side (at most {@link LANES} devices at once).
 * 2. A broken link fails only what builds on it. An entry whose previous_hash is the chain_hash of
 *    an entry of this request that was not published gets 409 `previous_entry_failed` naming that
 *    entry, and nothing of it is written or charged (the unit it was charged ahead goes back
 *    before the request answers); the device's other entries go on. An entry that failed after
 *    its publish (a 503 while finishing) is published: what builds on it goes on.
 * 3. One batch. In batch mode every entry names the batch of the window open when the request's
 *    first entry publishes, and no entry is finished (no waiter seals that window on this request's
 *    behalf) before every entry has published: the whole request goes into one Merkle tree when no
 *    other waiter seals the window meanwhile, and into two when one does (the leaves written after
 *    that seal move on together to the window open then).
 *
 * An entry that fails does not fail the others: each entry's outcome is what the single endpoint
 * would have answered it, in its slot. The identical request sent again answers each entry as the
 * single endpoint answers its identical retry: it anchors nothing twice and charges nothing twice.
 */

/** One entry of a batch: an anchor request, or one refused before anything of it ran (its schema). */
export type BatchEntry =
  | { kind: 'anchor'; input: AnchorInput }
  | {
      kind: 'refused';
      error: unknown;
      /** The device and the chain_hash the entry names, when they can be read: what builds on it fails too. */
      publicKeyHex?: string;
      chainHash?: string;
    };

export type BatchOutcome = { ok: true; item: AnchoredEvidence } | { ok: false; error: unknown };

/** Devices whose entries are published side by side. */
const LANES = 8;
/** How many entries of a device have their proofs made ahead of the one being published. */
const LOOKAHEAD = 2;
/**
 * How many entries of a device are charged ahead of the one being published: the account's meter
 * groups charges that wait for its write (MeterTable: up to 50 to a write), so a device's 100
 * entries cost a few meter writes instead of 100. Topped up when half of them are used.
 */
const CHARGE_AHEAD = 50;

export async function anchorBatch(deps: AnchorDeps, entries: readonly BatchEntry[]): Promise<BatchOutcome[]> {
  const outcomes: (BatchOutcome | undefined)[] = entries.map((e) => (e.kind === 'refused' ? { ok: false, error: e.error } : undefined));
  const published = new Map<number, PublishedAnchor>();
  // The charges of entries skipped at their turn, on their way back.
  const givingBack: Promise<void>[] = [];

  // Entries by device, in request order; the chain order checked before anything runs.
  const lanes = new Map<string, number[]>();
  for (const [i, e] of entries.entries()) {
    const key = e.kind === 'anchor' ? e.input.publicKeyHex : e.publicKeyHex;
    if (key === undefined) continue;
    const lane = lanes.get(key) ?? [];
    lanes.set(key, lane);
    lane.push(i);
  }

  // In batch mode the batch the whole request names (rule 3), taken when the first entry publishes.
  let batchKey: Promise<string> | undefined;
  const batching: BatchStepDeps | undefined = deps.batching && deps.batching.windowMs > 0 ? { ...deps, batching: deps.batching } : undefined;
  const requestBatch = () => {
    if (!batching) return Promise.resolve(undefined);
    batchKey ??= currentBatchKey(batching, (deps.clock ?? (() => new Date()))().getTime());
    return batchKey;
  };

  const runLane = async (lane: number[]) => {
    // Each entry's claim and charge are made up to CHARGE_AHEAD entries ahead, all at once (one
    // group of the meter's), its proofs up to LOOKAHEAD entries ahead (CPU: the signatures and
    // tokens, made while the entry before waits on the database), and its chain link while the
    // entry it builds on publishes (claimNextAhead). Nothing else of an entry is written until its
    // own turn; an entry skipped then gives its charge and its link back (givePreparedBack) before
    // the request answers.
    const prepared = new Map<number, PreparedAnchor | { error: unknown }>();
    let chargedTo = 0;
    const prepareAhead = (from: number) => {
      if (chargedTo - from <= CHARGE_AHEAD / 2) {
        for (const i of lane.slice(chargedTo, from + CHARGE_AHEAD)) {
          const entry = entries[i] as BatchEntry;
          if (entry.kind !== 'anchor') continue;
          try {
            const p = prepareAnchor(deps, entry.input);
            const charge = chargeClaim(deps, entry.input, p.claim);
            charge.catch(() => undefined); // its rejection is handled at the entry's turn
            prepared.set(i, { ...p, charge });
          } catch (error) {
            prepared.set(i, { error });
          }
        }
        chargedTo = Math.max(chargedTo, Math.min(lane.length, from + CHARGE_AHEAD));
      }
      for (const i of lane.slice(from, from + LOOKAHEAD + 1)) {
        const p = prepared.get(i);
        if (!p || 'error' in p || p.proofs) continue;
        p.proofs = makeProofs(deps, p.claim);
        p.proofs.catch(() => undefined); // its rejection is handled at the entry's turn (or never needed)
      }
    };
    // The next entry's link, claimed while this entry publishes, when it builds on this entry:
    // its claim may skip the read of its neighbours (the shortcut of a previous link known to stay
    // with its previous_hash) because the next entry is published only once this one is, and is
    // given back, link and unit, when this one is not (skip). A crash between leaves both links
    // claimed under their leases, as two requests in flight leave them: the identical retry takes
    // them over.
    const claimNextAhead = (position: number, input: AnchorInput) => {
      const next = lane[position + 1];
      const entry = next === undefined ? undefined : entries[next];
      const p = next === undefined ? undefined : prepared.get(next);
      if (entry?.kind !== 'anchor' || !p || 'error' in p || p.link) return;
      if (entry.input.previousHash !== input.chainHash || entry.input.chainIndex !== input.chainIndex + 1) return;
      p.link = claimLinkOf(deps, p.claim, (deps.clock ?? (() => new Date()))().getTime(), true);
      p.link.catch(() => undefined); // its rejection is handled at the entry's turn
    };
    const skip = (i: number) => {
      const p = prepared.get(i);
      if (p && !('error' in p)) givingBack.push(givePreparedBack(deps, p));
    };
    // The chain_hashes of this device's entries that were not published: what builds on them fails.
    const broken = new Map<string, number>();
    // The chain_hash of this device's entry published last by this request (the next link's shortcut).
    let publishedHash: string | undefined;
    let lastIndex = -1;
    let lastEntry = -1;
    for (const [position, i] of lane.entries()) {
      prepareAhead(position);
      const entry = entries[i] as BatchEntry;
      if (entry.kind === 'refused') {
        if (entry.chainHash !== undefined) broken.set(entry.chainHash, i);
        continue;
      }
      const { input } = entry;
      const failedOn = input.previousHash === null ? undefined : broken.get(input.previousHash);
      if (failedOn !== undefined) {
        outcomes[i] = { ok: false, error: previousEntryFailed(i, failedOn, input.chainIndex) };
        broken.set(input.chainHash, i);
        skip(i);
        continue;
      }
      if (input.chainIndex <= lastIndex) {
        outcomes[i] = { ok: false, error: outOfOrder(i, lastEntry, input.chainIndex, lastIndex) };
        broken.set(input.chainHash, i);
        skip(i);
        continue;
      }
      lastIndex = input.chainIndex;
      lastEntry = i;
      try {
        const batch = await requestBatch();
        const previousPublished = publishedHash !== undefined && publishedHash === input.previousHash;
        const ahead = prepared.get(i);
        if (ahead && 'error' in ahead) throw ahead.error;
        published.set(
          i,
          await publishAnchor(deps, input, {
            previousPublished,
            onClaimed: () => claimNextAhead(position, input),
            ...(ahead ? { prepared: ahead } : {}),
            ...(batch ? { batchKey: batch, deferLeaf: true } : {}),
          }),
        );
        publishedHash = input.chainHash;
      } catch (error) {
        outcomes[i] = { ok: false, error };
        const claimed = prepared.get(i);
        if (!claimed || 'error' in claimed || !(await publishedAnyway(deps, claimed.claim, error))) broken.set(input.chainHash, i);
      }
    }
  };

  // The lanes, at most LANES at once.
  const queue = [...lanes.values()];
  await Promise.all(
    Array.from({ length: Math.min(LANES, queue.length) }, async () => {
      for (let lane = queue.shift(); lane; lane = queue.shift()) await runLane(lane);
    }),
  );

  // Every entry published: the leaves they left to this request, 25 to a write (when that fails,
  // each entry's finish writes its own again), then each entry finished, side by side (in batch
  // mode: waiters of one window).
  const written = await writeDeferredLeaves(batching, [...published.values()]);
  await Promise.all(
    [...published].map(async ([i, p]) => {
      try {
        outcomes[i] = { ok: true, item: await finishPublishing(deps, p.item, deps.receiptTimeoutMs, { sent: p.leafDeferred ? written : p.sent }) };
      } catch (error) {
        outcomes[i] = { ok: false, error };
      }
    }),
  );
  await Promise.all(givingBack);
  return outcomes.map((o, i) => o ?? { ok: false, error: new Error(`batch entry ${i} has no outcome`) });
}

/** Writes the leaves the entries left to this request; false when they could not all be written. */
async function writeDeferredLeaves(deps: BatchStepDeps | undefined, entries: PublishedAnchor[]): Promise<boolean> {
  const byBatch = new Map<string, BatchLeaf[]>();
  for (const { item, leafDeferred } of entries) {
    if (!leafDeferred || !item.batch_pk || !item.server_hash) continue;
    const leaves = byBatch.get(item.batch_pk) ?? [];
    byBatch.set(item.batch_pk, leaves);
    leaves.push({ image_hash: item.image_hash, leaf_hash: anchorLeafHash(item.image_hash, item.server_hash).toString('hex') });
  }
  if (!deps || byBatch.size === 0) return true;
  const nowMs = (deps.clock ?? (() => new Date()))().getTime();
  try {
    for (const [pk, leaves] of byBatch) await deps.batching.store.putLeaves(pk, leaves, nowMs);
    return true;
  } catch (error) {
    log.warn('batch anchor: the leaves were not all written; each entry writes its own', describeError(error));
    return false;
  }
}

/**
 * Whether an entry whose publish failed is published all the same (a failure after the publish, or
 * a write that timed out but landed): its item names this very request. Unread, it counts as not
 * published, so what builds on it is not written (the identical retry sends it again).
 */
async function publishedAnyway(deps: AnchorDeps, claim: AnchorClaim, error: unknown): Promise<boolean> {
  // A refusal (400, 409, 429) is answered before the publish: nothing of it was written.
  if (error instanceof DomainError && error.kind !== 'unavailable') return false;
  const item = await deps.repo.get(claim.image_hash).catch(() => undefined);
  return item?.anchor_state !== undefined && item.fingerprint === claim.fingerprint;
}

function previousEntryFailed(entry: number, failed: number, chainIndex: number) {
  return conflictError(
    'previous_entry_failed',
    `Entry ${entry} (chain index ${chainIndex}) builds on entry ${failed} of this request, which was not anchored; nothing of entry ${entry} was written or charged. Send both again once entry ${failed} is anchored.`,
    { entry, failed_entry: failed },
  );
}

function outOfOrder(entry: number, earlier: number, chainIndex: number, earlierIndex: number) {
  return invalid(
    'chain_order',
    `Entry ${entry} (chain index ${chainIndex}) comes after entry ${earlier} (chain index ${earlierIndex}) of the same device: a request gives each device's entries in chain order. Nothing of entry ${entry} was written or charged.`,
    { entry, earlier_entry: earlier },
  );
}
