import { hexToBytes } from '../crypto/hash.js';
import type { IssuedTimestamp, PqSigner, TimestampAuthority } from '../crypto/ports.js';
import { DomainError, unavailable } from '../errors.js';
import { describeError, log } from '../log.js';
import type { LedgerPublisher, QuotaPort, ResumeOutcome, SignedTx } from './ports.js';
import { isStoreUnavailable } from '../errors.js';
import type { AnchorClaim, AnchoredEvidence, EvidenceItem, SignedProofs, StoredTx } from './records.js';
import type { EvidenceRepository } from './repository.js';
import { buildStatement, canonicalStatement, computeServerHash } from './statement.js';
import { type BatchingDeps, currentBatchKey, finishBatched, joinBatch } from './batch-publish.js';
import { type FinalityReader, judgeFinality, readFinalAtOnce } from './ledger-finality.js';

/**
 * The steps of the anchor's state machine (repository.ts AnchorState), each resumable by any
 * invocation: the request itself, its identical retry, the start-up replay and the scheduled
 * reconciler (reconcile.ts) call the same functions.
 */
export interface AnchorDeps {
  repo: EvidenceRepository;
  signer: PqSigner;
  tsa: TimestampAuthority;
  /**
   * The post-quantum TSA (ML-DSA-65, RFC 9882), when it is on: every anchor then carries its token
   * next to the classic one (decisions.md "Post-quantum time"), made side by side with it.
   */
  pqTsa?: TimestampAuthority;
  ledger: LedgerPublisher;
  quota: QuotaPort;
  /** Encodes the ledger input data: image_hash || server_hash. */
  encodeAnchorData(imageHash: string, serverHash: string): Uint8Array;
  /** How long a request waits for the receipt before it answers with the transaction pending. */
  receiptTimeoutMs: number;
  clock?: () => Date;
  /** How long a request's chain link is protected before another request for its index may bar its claim and free it. */
  leaseMs?: number;
  /**
   * Ledger batching (decisions.md "Ledger batching", batch-publish.ts): with `windowMs` > 0 anchors
   * share one transaction per window. Present in direct mode too, so that anchors a batch-mode
   * run left publishing are still finished.
   */
  batching?: BatchingDeps;
  /** Reads finality (ledger-finality.ts): under the `latest` rule the anchor write carries its final receipt. */
  finality?: FinalityReader;
}

export const DEFAULT_LEASE_MS = 20_000;

/**
 * The publish of a claim was refused: the hash has an anchor already (another request's, or this
 * very request's from an identical retry), or the claim was barred (it lapsed). Nothing went out.
 */
export class PublishRefusedError extends Error {
  /** The ledger sender's cue: this owner refused the transaction, so it never stores it (its nonce can go back). */
  readonly ownerRefused = true;
  constructor(
    readonly imageHash: string,
    /** The item as it stands (undefined: none, or only barred claims). */
    readonly current: EvidenceItem | undefined,
  ) {
    super(`the publish of ${imageHash} was refused`);
    this.name = 'PublishRefusedError';
  }
}

/** Where a publish got to: the item once it reached `publishing` (from then on it is never undone). */
export interface PublishProgress {
  item?: EvidenceItem;
}

/**
 * The proofs of a claim, made before anything of the anchor is written: the statement, its
 * ML-DSA-65 signature and the RFC 3161 token(s) of the image hash, side by side. A dependency that
 * fails is a 503 DomainError (nothing was stored).
 */
export async function makeProofs(deps: AnchorDeps, claim: AnchorClaim): Promise<SignedProofs> {
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
  const pqTsa = deps.pqTsa;
  const [pqSignature, pqPublicKey, timestamp, tsaCertificates, pqTimestamp] = await Promise.all([
    dependency('signer_unavailable', 'The post-quantum signer', () => deps.signer.sign(hexToBytes(serverHash))),
    dependency('signer_unavailable', 'The post-quantum signer', () => deps.signer.publicKey()),
    dependency<IssuedTimestamp>('tsa_unavailable', 'The time-stamping authority', () => deps.tsa.timestamp(hexToBytes(claim.image_hash))),
    dependency('tsa_unavailable', 'The time-stamping authority', () => deps.tsa.certificates()),
    pqTsa
      ? dependency('tsa_unavailable', 'The post-quantum time-stamping authority', async () => {
          const [issued, certificates] = await Promise.all([pqTsa.timestamp(hexToBytes(claim.image_hash)), pqTsa.certificates()]);
          return { issued, certificates };
        })
      : undefined,
  ]);
  return {
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
    ...(pqTimestamp
      ? {
          tsa_pq_response: Buffer.from(pqTimestamp.issued.response).toString('base64'),
          tsa_pq_gen_time: pqTimestamp.issued.genTime.toISOString(),
          tsa_pq_serial: pqTimestamp.issued.serial,
          tsa_pq_policy: pqTimestamp.issued.policy,
          tsa_pq_certificates: pqTimestamp.certificates,
        }
      : {}),
  };
}

/**
 * publish (none → publishing): stores the claim with every proof and either the signed transaction
 * (direct mode: the ledger signs it and calls back BEFORE it can reach a node) or the batch of the
 * window open now (batch mode: the item first, then its leaf). This one write claims the hash.
 * `progress.item` is set the moment the item is publishing: a failure after that leaves it
 * publishing, to be finished by any invocation. Throws PublishRefusedError when the hash was taken
 * or the claim barred (nothing went out; the ledger gives the nonce back), a 503 DomainError when a
 * dependency failed.
 */
export async function publishClaim(
  deps: AnchorDeps,
  claim: AnchorClaim,
  proofs: SignedProofs,
  progress: PublishProgress,
  batch: BatchPublishOptions = {},
): Promise<{ item: EvidenceItem; sent: boolean; leafDeferred?: boolean }> {
  if (deps.batching && deps.batching.windowMs > 0) {
    const item = await publishBatched({ ...deps, batching: deps.batching }, claim, proofs, progress, batch);
    return batch.deferLeaf ? { item, sent: false, leafDeferred: true } : { item, sent: true };
  }
  const sent = await dependency('ledger_unavailable', 'The ledger', () =>
    deps.ledger.publish(deps.encodeAnchorData(claim.image_hash, proofs.server_hash), claim.image_hash, async (tx) => {
      const stored = storedTx(tx, deps.ledger.chainId);
      // The first signature publishes; a later one (the sender gave the nonce of the previous one
      // back before its slot was written, and signed again) replaces the transaction the item
      // names, from the item as stored.
      if (progress.item) {
        const next = await stored503(() => deps.repo.replaceTx(progress.item as EvidenceItem, stored));
        if (!next) throw new PublishRefusedError(claim.image_hash, await stored503(() => deps.repo.get(claim.image_hash)));
        progress.item = next;
        return;
      }
      const published = await stored503(() => deps.repo.publish(claim, proofs, stored));
      if (!published.ok) throw new PublishRefusedError(claim.image_hash, published.current);
      progress.item = published.item;
    }),
  );
  if (!progress.item) throw new Error(`publishClaim: ${claim.image_hash} was published without being stored`);
  return { item: progress.item, sent: sent.broadcast === 'accepted' };
}

/** How a publish in batch mode names its batch and writes its leaf (the batch anchor's choices: anchor-batch.ts). */
export interface BatchPublishOptions {
  /**
   * The batch to name instead of the window open now. A batch sealed before the leaf is written
   * leaves it out, and the finish moves it on to the window open then (batch-publish.ts step 4).
   */
  batchKey?: string;
  /**
   * The caller writes the leaf itself, with others (BatchStore.putLeaves), before it finishes the
   * anchor. Until then the item names a batch its leaf is missing from, as after a crash between
   * the two writes: whoever resumes it writes the leaf again (batch-publish.ts step 1).
   */
  deferLeaf?: boolean;
}

/**
 * publish in batch mode: the proofs are stored with the batch of the window open now, or the one
 * the caller names (the item first, then its leaf: batch-publish.ts). Nothing reaches the ledger
 * here; the batch's sealer signs one transaction for the window.
 */
async function publishBatched(
  deps: AnchorDeps & { batching: BatchingDeps },
  claim: AnchorClaim,
  proofs: SignedProofs,
  progress: PublishProgress,
  options: BatchPublishOptions,
): Promise<EvidenceItem> {
  const clock = deps.clock ?? (() => new Date());
  const pk = options.batchKey ?? (await dependency('ledger_unavailable', 'The ledger', () => currentBatchKey({ ...deps, batching: deps.batching }, clock().getTime())));
  const batch = { batch_pk: pk, ledger_address: pk.split('#')[1] as string, ledger_chain_id: deps.ledger.chainId };
  const published = await stored503(() => deps.repo.publish(claim, proofs, batch));
  if (!published.ok) throw new PublishRefusedError(claim.image_hash, published.current);
  progress.item = published.item;
  if (!options.deferLeaf) await stored503(() => joinBatch({ ...deps, batching: deps.batching }, pk, claim.image_hash, proofs.server_hash));
  return published.item;
}

/**
 * publishing → anchored: finishes the transaction the item names (re-sent byte for byte if the
 * node lost it; replaced by a new one only when it provably can never be mined, by the one
 * invocation whose conditional write wins), waits up to `receiptWaitMs` for its receipt, records
 * the anchor, then its chain link. Idempotent; the statistics count the anchor once (only the
 * call that made the move records them).
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
  // `sent`: the caller just handed the named transaction to the node (no need to resume it).
  let sent = options.sent === true;
  for (let attempt = 0; attempt < 8; attempt++) {
    if (current.anchor_state === 'anchored') return linked(deps, current as AnchoredEvidence);
    if (current.anchor_state !== 'publishing' || !current.tx_hash || current.tx_raw === undefined || current.tx_nonce === undefined) {
      throw new Error(`finishPublishing: ${current.image_hash} is not publishing`);
    }
    const named = current.tx_hash;
    const from = current;
    const fresh = sent;
    const outcome: ResumeOutcome = sent
      ? { outcome: 'sent', txHash: named }
      : await dependency('ledger_unavailable', 'The ledger', () =>
          deps.ledger.resume({ txHash: named, nonce: from.tx_nonce as number, raw: from.tx_raw as string, ref: from.image_hash }),
        );
    sent = false;
    if (outcome.outcome === 'dead') {
      if (await republish(deps, current)) log.warn('anchor: its transaction can never be mined; replaced by a new one', { image_hash: current.image_hash, tx_hash: named });
      current = await reread(deps, current);
      continue;
    }
    const receipt =
      outcome.outcome === 'mined'
        ? outcome.receipt
        : // Just broadcast: no other version of its nonce yet, so its slot need not be read (lib/ledger/receipts.ts).
          await deps.ledger.waitForReceipt(outcome.txHash, receiptWaitMs, fresh ? undefined : current.tx_nonce).catch(() => null);
    const minedTxHash = receipt?.txHash ?? named;
    const read = await readFinalAtOnce(deps.finality, receipt && { status: receipt.status, txHash: minedTxHash });
    const at = clock();
    const final = read && judgeFinality('latest', read, { ...from, server_hash: from.server_hash as string, ledger_address: from.ledger_address as string, tx_hash: minedTxHash }, at).final;
    const anchored = await stored503(() =>
      deps.repo.markAnchored(
        from,
        receipt ? { status: receipt.status, blockNumber: receipt.blockNumber, at: at.toISOString(), minedTxHash, txHashes: receipt.txHashes, final: final ?? undefined } : null,
      ),
    );
    if (anchored) {
      return linked(deps, anchored);
    }
    // Another invocation moved it (anchored it, or replaced its transaction): go on from there.
    current = await reread(deps, current);
  }
  throw unavailable('ledger_unavailable', 'The anchor could not be finished yet; retry the identical request: it resumes.');
}

/**
 * replace (publishing → publishing): a publishing item whose transaction is dead gets a new one
 * with the same data, stored conditional on the version this invocation read: of any number of
 * resumers that found it dead, exactly one replaces it and the others' transactions are never
 * sent. True when this invocation replaced it.
 */
async function republish(deps: AnchorDeps, item: EvidenceItem): Promise<boolean> {
  let current = item;
  let replaced = false;
  await dependency('ledger_unavailable', 'The ledger', () =>
    deps.ledger.publish(deps.encodeAnchorData(item.image_hash, item.server_hash as string), item.image_hash, async (tx) => {
      const next = await stored503(() => deps.repo.replaceTx(current, storedTx(tx, deps.ledger.chainId)));
      if (!next) throw new PublishRefusedError(item.image_hash, undefined);
      current = next;
      replaced = true;
    }),
  ).catch((error: unknown) => {
    // Another resumer replaced it first: it finishes that one.
    if (!(error instanceof PublishRefusedError)) throw error;
  });
  return replaced;
}

/** The item as it stands now (after a lost condition); one that vanished is an error, never a step back. */
async function reread(deps: Pick<AnchorDeps, 'repo'>, item: EvidenceItem): Promise<EvidenceItem> {
  const again = await stored503(() => deps.repo.get(item.image_hash));
  if (!again?.anchor_state) throw new Error(`the anchor of ${item.image_hash} vanished while publishing`);
  return again;
}

/**
 * The chain link of an anchored item is marked anchored from the evidence table's changes
 * (derived.ts: the evidence-stream function, `npm start`'s change feed), not on the request path;
 * until then readers derive its state from the item (proof-check.ts deriveLinkState).
 */
function linked(_deps: AnchorDeps, item: AnchoredEvidence): AnchoredEvidence {
  return item;
}

/**
 * A request that did not publish gives its claim back: its chain link (only while it still names
 * this claim: an identical retry may have moved it) and its quota hold. A failure is left to the
 * next claim of the index (which frees a lapsed link) and to the quota reconciliation.
 */
export async function releaseClaim(deps: Pick<AnchorDeps, 'repo' | 'quota'>, claim: AnchorClaim, link: boolean, hold = true): Promise<void> {
  await Promise.all([
    link ? deps.repo.releaseLink(claim.public_key_hex, claim.chain_index, claim.claim_id).catch((error: unknown) => log.warn('chain link not given back; the next claim of its index frees it once its lease lapsed', { image_hash: claim.image_hash, ...describeError(error) })) : undefined,
    hold && deps.quota.end({ counterKey: claim.quota_counter, holdId: claim.quota_hold }, 'refund').catch((error: unknown) => log.warn('quota refund failed; the reconciler ends the hold', { counter: claim.quota_counter, ...describeError(error) })),
  ]);
}

function storedTx(tx: SignedTx, chainId: number): StoredTx {
  return { tx_hash: tx.txHash, tx_nonce: tx.nonce, tx_raw: tx.raw, ledger_address: tx.from, ledger_chain_id: chainId };
}

/**
 * A call to the evidence store: an outage (unreachable, timed out, failing) is a 503
 * `database_unavailable`, the SDK's message logged, not sent. Anything else (a request the store
 * refused: a bug) passes through as it is, never disguised as "retry".
 */
export async function stored503<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (!isStoreUnavailable(error)) throw error;
    log.warn('dependency failed', { code: 'database_unavailable', ...describeError(error) });
    throw unavailable('database_unavailable', 'The database is unavailable. Retry the identical request: it resumes where this one stopped.');
  }
}

/** Runs one external step; a failure becomes a 503 with a stable code (the cause is logged, not sent). */
export async function dependency<T>(code: string, what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof DomainError || error instanceof PublishRefusedError) throw error;
    log.warn('dependency failed', { code, ...describeError(error) });
    throw unavailable(code, `${what} is unavailable. Retry the identical request: it resumes where this one stopped.`);
  }
}
