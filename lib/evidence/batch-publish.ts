import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DomainError, unavailable } from '../errors.js';
import { encodeBatchData } from '../ledger/anchor-data.js';
import { describeError, log } from '../log.js';
import type { BatchLeaf, BatchSeal, BatchStore } from './batch-store.js';
import { type FinalityReader, judgeFinality, readFinalAtOnce, type TransactionFinality } from './ledger-finality.js';
import { anchorLeafHash, MerkleTree } from './merkle.js';
import type { LedgerPublisher, LedgerReceipt, ResumeOutcome } from './ports.js';
import type { AnchoredEvidence, EvidenceItem, MerkleInclusion, StoredTx } from './records.js';
import type { EvidenceRepository } from './repository.js';
import { whileIdle } from '../work-slots.js';

/**
 * Batch mode (decisions.md "Ledger batching", docs/state-machines.md): the anchors accepted
 * within one window of `windowMs` share one transaction whose input data is the RFC 6962 Merkle
 * root of their leaves. On DynamoDB's single-item conditional writes, across any number of
 * concurrent invocations (Lambdas, processes):
 *
 * 1. An anchor reaching `publishing` names the batch of the window open now (`batch_pk`: chain id,
 *    wallet, window size, window start; batches never mix chains or wallets), then writes its leaf
 *    into that batch's partition (batch-store.ts). The item is written first, so a crash between
 *    the two leaves an item that names a batch its leaf is missing from: resumed, it writes the
 *    leaf again (while the batch is unsealed) or moves on (step 4).
 * 2. After the window ends (plus a short grace for leaf writes in flight), every waiter tries to
 *    claim the batch's seal (conditional put): exactly one wins. The claim has a lease; a waiter
 *    that finds it lapsed takes it over, so a sealer that died is replaced.
 * 3. The sealer reads every leaf of the batch with a strongly consistent Query (image-hash order,
 *    at most `maxLeaves`), builds the tree, and has the ledger sign one transaction carrying the
 *    root; the leaf list, the root and that transaction are stored on the seal (`sealed`,
 *    conditional on still holding the claim) BEFORE the transaction can reach a node. A sealer
 *    that lost its claim stores nothing and its transaction is given back unsent: one transaction
 *    per batch, and a hash is in at most one sealed batch, so it goes on the ledger at most once.
 * 4. Each waiter reads the sealed batch. A leaf in it: the item becomes `anchored` with the batch's
 *    transaction and its inclusion proof (leaf index, path, root). A leaf not in it (written after
 *    the sealer's Query, or past `maxLeaves`): the item moves to the window open now (conditional on
 *    the batch it named) and waits again.
 *
 * The sealed batch's transaction is finished like a direct one: re-sent byte for byte when the node
 * lost it, replaced (same root, conditional on the seal naming the dead one) only when it provably
 * can never be mined. The identical retry, the start-up replay and the reconciler all resume a
 * batched anchor through {@link finishBatched}, the same steps.
 */
export interface BatchingDeps {
  store: BatchStore;
  /** The window; 0 (direct mode) still lets anchors that a batch-mode run left publishing be finished. */
  windowMs: number;
  /** Wait this long after a window's end before sealing it (leaf writes in flight). Default 40 ms. */
  graceMs?: number;
  /** The sealer's lease: a claim older than this may be taken over. Default 5 s. */
  sealLeaseMs?: number;
  /** How often a waiter reads the seal while another invocation seals. Default 25 ms. */
  pollMs?: number;
  /** At most this many leaves per batch (the seal item stays far below DynamoDB's 400 KB). Default 2000. */
  maxLeaves?: number;
  /** A waiter gives up (503; the anchor stays publishing and is resumed) after this long. Default 20 s. */
  maxWaitMs?: number;
}

/** What the batch steps need from the anchoring dependencies. */
export interface BatchStepDeps {
  repo: EvidenceRepository;
  ledger: LedgerPublisher;
  batching: BatchingDeps;
  clock?: () => Date;
  finality?: FinalityReader;
}

/** A batch's identity, as its partition key says it. */
export interface BatchKey {
  chainId: number;
  address: string;
  windowMs: number;
  startMs: number;
}

export function formatBatchKey(k: BatchKey): string {
  return `${k.chainId}#${k.address.toLowerCase()}#${k.windowMs}#${k.startMs}`;
}

export function parseBatchKey(pk: string): BatchKey {
  const m = /^(\d+)#(0x[0-9a-f]{40})#(\d+)#(\d+)$/.exec(pk);
  if (!m) throw new Error(`not a batch key: ${pk}`);
  return { chainId: Number(m[1]), address: m[2] as string, windowMs: Number(m[3]), startMs: Number(m[4]) };
}

/** The batch of the window open at `nowMs` for this ledger's chain and wallet. */
export async function currentBatchKey(deps: BatchStepDeps, nowMs: number, windowMs = deps.batching.windowMs): Promise<string> {
  const address = (await deps.ledger.address()).toLowerCase();
  const w = Math.max(1, windowMs);
  return formatBatchKey({ chainId: deps.ledger.chainId, address, windowMs: w, startMs: Math.floor(nowMs / w) * w });
}

/** A sealed batch as a waiter reads it. */
interface SealedBatch {
  pk: string;
  /** The seal as read (its version: a replacement is conditional on it). */
  seal: BatchSeal;
  images: string[];
  tree: MerkleTree;
  root: string;
  tx: StoredTx;
}

/** Per-process sharing between the waiters of one batch (one seal read loop, one receipt wait per transaction). */
interface Shared {
  seals: Map<string, Promise<SealedBatch>>;
  settles: Map<string, Promise<Settled>>;
  /** Transactions this process has just broadcast (no need to resume them). */
  broadcast: Set<string>;
}
/** Keyed by the batch store object (the process's, or a test's), whose lifetime the state must follow: a WeakMap, not a ProcessCache. */
const sharedState = new WeakMap<BatchStore, Shared>();
function shared(deps: BatchStepDeps): Shared {
  let s = sharedState.get(deps.batching.store);
  if (!s) {
    s = { seals: new Map(), settles: new Map(), broadcast: new Set() };
    sharedState.set(deps.batching.store, s);
  }
  return s;
}

const now = (deps: BatchStepDeps) => (deps.clock ?? (() => new Date()))().getTime();

/** Writes an anchor's leaf into a batch (idempotent). */
export async function joinBatch(deps: BatchStepDeps, pk: string, imageHash: string, serverHash: string): Promise<void> {
  await deps.batching.store.putLeaf(pk, { image_hash: imageHash, leaf_hash: anchorLeafHash(imageHash, serverHash).toString('hex') }, now(deps));
}

/**
 * publishing (batched) → anchored: waits for the item's batch to be sealed (sealing it when this
 * invocation is the one to), moves the item on while its leaf is left out, finishes the batch's
 * transaction, waits up to `receiptWaitMs` for its receipt and records the anchor with its
 * inclusion proof. Idempotent: any invocation may run it at any time. `fresh`: the caller has just
 * written the leaf (no need to check for it).
 */
export async function finishBatched(deps: BatchStepDeps, item: EvidenceItem, receiptWaitMs: number, options: { fresh?: boolean } = {}): Promise<AnchoredEvidence> {
  let current = item;
  let fresh = options.fresh === true;
  for (let attempt = 0; attempt < 12; attempt++) {
    if (current.anchor_state === 'anchored') return current as AnchoredEvidence;
    const pk = current.batch_pk;
    if (current.anchor_state !== 'publishing' || !pk || !current.server_hash) throw new Error(`finishBatched: ${current.image_hash} is not publishing in a batch`);
    const key = parseBatchKey(pk);
    const address = (await deps.ledger.address()).toLowerCase();
    if (key.chainId !== deps.ledger.chainId || key.address !== address) {
      // Never mix chains or wallets: only an invocation with this batch's chain and wallet finishes it.
      throw unavailable('ledger_unavailable', 'This anchor was batched on another chain or wallet; it is finished by the service configured for it.');
    }
    if (!fresh) {
      const seal = await deps.batching.store.getSeal(pk);
      if (seal?.state !== 'sealed') await joinBatch(deps, pk, current.image_hash, current.server_hash);
    }
    fresh = false;
    // Waiting for the window's end and the seal (done by one waiter, shared): no work of this
    // anchor's own, so its work slot is given back meanwhile (lib/work-slots.ts).
    const batch = await whileIdle(sealedBatch(deps, pk));
    const index = batch.images.indexOf(current.image_hash);
    if (index < 0) {
      // Left out (a late leaf): on to the window open now, then wait again. Never the sealed one
      // itself: a sealer whose clock ran ahead of this one may have sealed it "early".
      const next = await currentBatchKey(deps, Math.max(now(deps), key.startMs + key.windowMs), key.windowMs);
      const moved = await deps.repo.moveToBatch(current, next);
      if (moved) {
        await joinBatch(deps, next, current.image_hash, current.server_hash);
        current = moved;
        fresh = true;
        log.info('batch: a late leaf moved to the next window', { image_hash: current.image_hash, from: pk, to: next });
      } else {
        current = await reread(deps, current);
      }
      continue;
    }
    const { batch: final, receipt, finality } = await whileIdle(settle(deps, batch, receiptWaitMs));
    const merkle: MerkleInclusion = {
      root: final.root,
      leaf_index: index,
      tree_size: final.images.length,
      path: final.tree.path(index).map((h) => h.toString('hex')),
    };
    const { tx_raw: _raw, ...tx } = final.tx;
    const minedTxHash = receipt?.txHash ?? final.tx.tx_hash;
    const at = new Date(now(deps));
    const finalReceipt = finality ? judgeFinality('latest', finality, { image_hash: current.image_hash, server_hash: current.server_hash, ledger_address: tx.ledger_address, merkle, tx_hash: minedTxHash }, at).final : null;
    const anchored = await deps.repo.markAnchored(
      current,
      receipt ? { status: receipt.status, blockNumber: receipt.blockNumber, at: at.toISOString(), minedTxHash, txHashes: receipt.txHashes, final: finalReceipt ?? undefined } : null,
      { tx, merkle },
    );
    if (anchored) {
      return anchored;
    }
    current = await reread(deps, current);
  }
  throw unavailable('ledger_unavailable', 'The anchor could not join a batch yet; retry the identical request: it resumes.');
}

/** The sealed batch, once some invocation sealed it; this process's waiters of one batch share one wait. */
function sealedBatch(deps: BatchStepDeps, pk: string): Promise<SealedBatch> {
  const s = shared(deps);
  let p = s.seals.get(pk);
  if (!p) {
    p = waitForSeal(deps, pk);
    s.seals.set(pk, p);
    // Kept while waiting only: a later reader sees a replaced transaction.
    void p.then(
      () => s.seals.delete(pk),
      () => s.seals.delete(pk),
    );
  }
  return p;
}

async function waitForSeal(deps: BatchStepDeps, pk: string): Promise<SealedBatch> {
  const { store } = deps.batching;
  const key = parseBatchKey(pk);
  const grace = deps.batching.graceMs ?? 40;
  const lease = deps.batching.sealLeaseMs ?? 5000;
  const poll = deps.batching.pollMs ?? 25;
  // Until the window ends (plus the grace): nobody seals an open window.
  const untilEnd = key.startMs + key.windowMs + grace - now(deps);
  if (untilEnd > 0) await sleep(Math.min(untilEnd, key.windowMs + grace));
  const giveUp = Date.now() + (deps.batching.maxWaitMs ?? 20_000);
  // The first waiter of a window usually finds no seal: it claims at once (one conditional put,
  // no read first); the others read the seal once their claim failed.
  let seal: BatchSeal | undefined | 'unread' = 'unread';
  for (;;) {
    if (seal !== 'unread' && seal?.state === 'sealed') return readSealed(pk, seal);
    const sealerId = randomUUID();
    const t = now(deps);
    const claimed =
      seal === 'unread' || !seal
        ? await store.claimSeal(pk, sealerId, t + lease)
        : seal.lease_expires_at < t
          ? await store.takeOverSeal(pk, seal, sealerId, t + lease, t)
          : null;
    if (claimed) {
      if (seal !== 'unread' && seal) log.warn('batch: a sealer lapsed; its batch is taken over', { batch: pk, previous: seal.sealer_id });
      const sealed = await sealAs(deps, pk, claimed);
      if (sealed) return sealed; // what this sealer stored, without reading it back
      seal = await store.getSeal(pk); // lost to a take-over, or sent ambiguously: read what was stored
      continue;
    }
    if (seal !== 'unread') {
      if (Date.now() > giveUp) throw unavailable('ledger_unavailable', 'The batch was not sealed in time; retry the identical request: it resumes.');
      await sleep(poll);
    }
    seal = await store.getSeal(pk);
  }
}

/**
 * The sealer's work under its claim: the leaves (strongly consistent), the tree, one transaction
 * with the root, stored on the seal before it can reach a node. Returns the batch as stored when
 * this sealer stored it and the node took the transaction; null when the caller must read the
 * seal (lost to a take-over, or the broadcast did not go through: the stored transaction is then
 * resumed). When nothing was stored (the ledger or the database failed first) the claim is given
 * back so that another waiter seals at once, and the failure is thrown (503; the anchors stay
 * publishing and are resumed).
 */
async function sealAs(deps: BatchStepDeps, pk: string, claim: BatchSeal): Promise<SealedBatch | null> {
  const { store } = deps.batching;
  let stored: BatchSeal | undefined;
  try {
    const leaves: BatchLeaf[] = (await store.listLeaves(pk)).slice(0, deps.batching.maxLeaves ?? 2000);
    if (leaves.length === 0) throw new Error(`batch ${pk} has no leaf to seal`);
    // Validated as readSealed validates a stored seal: 64 hex characters each.
    if (!leaves.every((l) => /^[0-9a-f]{64}$/.test(l.image_hash) && /^[0-9a-f]{64}$/.test(l.leaf_hash))) throw new Error(`batch ${pk} holds a malformed leaf`);
    const tree = new MerkleTree(leaves.map((l) => Buffer.from(l.leaf_hash, 'hex')));
    const root = tree.root().toString('hex');
    const contents = {
      images: Buffer.concat(leaves.map((l) => Buffer.from(l.image_hash, 'hex'))),
      leaves: Buffer.concat(leaves.map((l) => Buffer.from(l.leaf_hash, 'hex'))),
      root,
      tree_size: leaves.length,
      sealed_at: new Date(now(deps)).toISOString(),
    };
    const sent = await deps.ledger.publish(Buffer.from(encodeBatchData(root).slice(2), 'hex'), pk, async (signed) => {
      const tx: StoredTx = { tx_hash: signed.txHash, tx_nonce: signed.nonce, tx_raw: signed.raw, ledger_address: signed.from, ledger_chain_id: deps.ledger.chainId };
      // The first signature seals the batch; a later one (the sender gave that nonce back unsent
      // and signed again) replaces the transaction the seal names, from the seal as stored.
      const next = stored ? await store.replaceSealTx(pk, stored, tx) : await store.markSealed(pk, claim, contents, tx);
      if (!next) throw new SealLostError(pk);
      stored = next;
    });
    if (sent.broadcast !== 'accepted' || !stored?.tx_hash) return null;
    shared(deps).broadcast.add(sent.txHash);
    return { pk, seal: stored, images: leaves.map((l) => l.image_hash), tree, root, tx: storedTxOf(stored) };
  } catch (error) {
    if (error instanceof SealLostError) return null;
    if (stored) {
      // Sealed, but the broadcast failed: the waiters finish the stored transaction (resume).
      log.warn('batch: sealed, broadcast failed; the stored transaction is resumed', { batch: pk, ...describeError(error) });
      return null;
    }
    await store.abandonSeal(pk, claim).catch(() => undefined);
    if (error instanceof DomainError) throw error;
    log.warn('batch: sealing failed; the claim is given back', { batch: pk, ...describeError(error) });
    throw unavailable('ledger_unavailable', 'The ledger is unavailable. Retry the identical request: it resumes where this one stopped.');
  }
}

class SealLostError extends Error {
  /** The ledger sender's cue: this seal refused the transaction, so it never stores it (its nonce can go back). */
  readonly ownerRefused = true;
  constructor(pk: string) {
    super(`the seal of ${pk} was taken over`);
    this.name = 'SealLostError';
  }
}

function readSealed(pk: string, seal: BatchSeal): SealedBatch {
  const images = Buffer.from(seal.images ?? new Uint8Array());
  const leaves = Buffer.from(seal.leaves ?? new Uint8Array());
  const size = seal.tree_size ?? 0;
  if (size < 1 || images.length !== size * 32 || leaves.length !== size * 32 || !seal.tx_hash || seal.tx_nonce === undefined || !seal.tx_raw || !seal.root) {
    throw new Error(`batch ${pk}: the seal is incomplete`);
  }
  const leafHashes = Array.from({ length: size }, (_, i) => leaves.subarray(i * 32, i * 32 + 32));
  const tree = new MerkleTree(leafHashes);
  if (tree.root().toString('hex') !== seal.root) throw new Error(`batch ${pk}: the stored root does not match its leaves`);
  return {
    pk,
    seal,
    images: Array.from({ length: size }, (_, i) => images.subarray(i * 32, i * 32 + 32).toString('hex')),
    tree,
    root: seal.root,
    tx: storedTxOf(seal),
  };
}

function storedTxOf(seal: BatchSeal): StoredTx {
  return { tx_hash: seal.tx_hash ?? '', tx_nonce: seal.tx_nonce ?? 0, tx_raw: seal.tx_raw ?? '', ledger_address: seal.ledger_address ?? '', ledger_chain_id: seal.ledger_chain_id ?? 0 };
}

/** The item as it stands now (after a lost condition); one that vanished is an error, never a step back. */
async function reread(deps: BatchStepDeps, item: EvidenceItem): Promise<EvidenceItem> {
  const again = await deps.repo.get(item.image_hash);
  if (!again?.anchor_state) throw new Error(`batch: the anchor of ${item.image_hash} vanished while publishing`);
  return again;
}

interface Settled {
  batch: SealedBatch;
  receipt: LedgerReceipt | null;
  /** The mined transaction as read once for every anchor of the batch (the `latest` rule: final at once). */
  finality: TransactionFinality | null;
}

/** The batch's transaction finished (resumed unless this process just sent it) and its receipt awaited; shared per transaction. */
function settle(deps: BatchStepDeps, batch: SealedBatch, receiptWaitMs: number): Promise<Settled> {
  const s = shared(deps);
  const key = `${batch.tx.tx_hash}:${receiptWaitMs}`;
  let p = s.settles.get(key);
  if (!p) {
    p = settleOnce(deps, batch, receiptWaitMs);
    s.settles.set(key, p);
    void p.then(
      () => s.settles.delete(key),
      () => s.settles.delete(key),
    );
  }
  return p;
}

async function settleOnce(deps: BatchStepDeps, first: SealedBatch, receiptWaitMs: number): Promise<Settled> {
  let batch = first;
  for (let attempt = 0; attempt < 4; attempt++) {
    const { tx } = batch;
    const fresh = shared(deps).broadcast.has(tx.tx_hash);
    const outcome: ResumeOutcome = fresh
      ? { outcome: 'sent', txHash: tx.tx_hash }
      : await ledgerStep(() => deps.ledger.resume({ txHash: tx.tx_hash, nonce: tx.tx_nonce, raw: tx.tx_raw, ref: batch.pk }));
    if (outcome.outcome === 'dead') {
      if (await republish(deps, batch)) log.warn('batch: its transaction can never be mined; replaced by a new one with the same root', { batch: batch.pk, tx_hash: tx.tx_hash });
      const seal = await deps.batching.store.getSeal(batch.pk);
      if (!seal) throw new Error(`batch ${batch.pk} vanished`);
      batch = readSealed(batch.pk, seal);
      continue;
    }
    // Just broadcast by this process: no other version of its nonce can exist yet, so the slot
    // need not be read for them (one DynamoDB read less; lib/ledger/receipts.ts).
    const receipt =
      outcome.outcome === 'mined' ? outcome.receipt : await deps.ledger.waitForReceipt(outcome.txHash, receiptWaitMs, fresh ? undefined : tx.tx_nonce).catch(() => null);
    const finality = await readFinalAtOnce(deps.finality, receipt && { status: receipt.status, txHash: receipt.txHash ?? tx.tx_hash });
    return { batch, receipt, finality };
  }
  throw unavailable('ledger_unavailable', 'The ledger keeps refusing the batch transaction; the anchor will be finished later.');
}

/**
 * replace (sealed → sealed): a sealed batch whose transaction is dead gets a new one with the same
 * root, stored on the seal conditional on the version this invocation read, so of any number of
 * resumers that found it dead exactly one replaces it; the others' transactions are given back
 * unsent. True when this invocation replaced it.
 */
async function republish(deps: BatchStepDeps, batch: SealedBatch): Promise<boolean> {
  let current = batch.seal;
  let replaced = false;
  await ledgerStep(() =>
    deps.ledger.publish(Buffer.from(encodeBatchData(batch.root).slice(2), 'hex'), batch.pk, async (signed) => {
      const stored: StoredTx = { tx_hash: signed.txHash, tx_nonce: signed.nonce, tx_raw: signed.raw, ledger_address: signed.from, ledger_chain_id: deps.ledger.chainId };
      const next = await deps.batching.store.replaceSealTx(batch.pk, current, stored);
      if (!next) throw new SealLostError(batch.pk);
      current = next;
      replaced = true;
    }),
  ).catch((error: unknown) => {
    if (!(error instanceof SealLostError)) throw error; // another resumer replaced it first: it finishes that one
  });
  return replaced;
}

async function ledgerStep<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof SealLostError || error instanceof DomainError) throw error;
    log.warn('dependency failed', { code: 'ledger_unavailable', ...describeError(error) });
    throw unavailable('ledger_unavailable', 'The ledger is unavailable. Retry the identical request: it resumes where this one stopped.');
  }
}
