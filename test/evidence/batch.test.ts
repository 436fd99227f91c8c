import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { getAnchorDeps } from '../../lib/deps/anchoring.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { getEvidenceRepo, getRpcReader } from '../../lib/deps/evidence.js';
import { anchorEvidence, type AnchorDeps } from '../../lib/evidence/anchor.js';
import { Wallet } from 'ethers';
import { parseBatchKey } from '../../lib/evidence/batch-publish.js';
import type { BatchLeaf, BatchSeal } from '../../lib/evidence/batch-store.js';
import { BatchTable } from '../../lib/store/batch-table.js';
import type { LedgerPublisher } from '../../lib/evidence/ports.js';
import { anchorLeafHash, verifyInclusion } from '../../lib/evidence/merkle.js';
import { isAnchored, type AnchoredEvidence } from '../../lib/evidence/records.js';
import { readLedgerFinality } from '../../lib/evidence/ledger-finality.js';
import { reconcileAnchors } from '../../lib/evidence/reconcile.js';
import { decodeLedgerData } from '../../lib/ledger/anchor-data.js';
import { createLedgerProvider, LedgerSender } from '../../lib/ledger/sender.js';
import { anchorInputFor, createAccount, Device } from '../support/client.js';
import { transactionsWithRoot } from '../support/ledger-batches.js';
import { useStack } from '../support/stack.js';
import { waitFor } from '../support/wait.js';

/**
 * Batch mode (decisions.md "Ledger batching") on the real embedded parts: anchors of one window share
 * one transaction whose input is the Merkle root, each inclusion proof leads from the anchor's leaf
 * to that root as read back from the chain; late leaves move on; a sealer that died (its claim
 * left behind, or its transaction stored but never sent) is taken over; the reconciler and the
 * identical retry finish what a dead invocation left.
 */

let baseDeps: AnchorDeps;
let account: Awaited<ReturnType<typeof createAccount>>;
const never = () => new Promise<never>(() => undefined);

let wallet: Wallet;

before(async () => {
  await useStack();
  baseDeps = await getAnchorDeps();
  account = await createAccount('pro');
  // A wallet of this file's own, so that a nonce a "dead" sealer holds never delays other files' transactions.
  wallet = Wallet.createRandom() as unknown as Wallet;
  const provider = createLedgerProvider({ rpcUrl: getConfig().ledger.rpcUrl, chainId: getConfig().ledger.chainId, pollingIntervalMs: 50 });
  await provider.send('hardhat_setBalance', [wallet.address, '0x' + (10n ** 21n).toString(16)]);
  provider.destroy();
});

/** A ledger publisher of one "process" over this file's wallet; `afterPersist` runs once the transaction is stored, before it is sent. */
function publisher(hooks: { afterPersist?: () => Promise<void> } = {}): LedgerPublisher {
  const { ledger, tables } = getConfig();
  const provider = createLedgerProvider({ rpcUrl: ledger.rpcUrl, chainId: ledger.chainId, pollingIntervalMs: 50 });
  const sender = new LedgerSender({
    provider,
    signer: new Wallet(wallet.privateKey, provider),
    db: getDb(),
    table: tables.ledger,
    chainId: ledger.chainId,
    priorityFeeGwei: 1,
    maxFeeGwei: 100,
    pollingIntervalMs: 50,
  });
  return {
    chainId: ledger.chainId,
    address: () => sender.address(),
    publish: async (data, ref, persist) =>
      sender.submit(data, { kind: 'anchor', ref }, {
        beforePersist: async (tx) => {
          await persist(tx);
          await hooks.afterPersist?.();
        },
      }),
    resume: (tx) => sender.resume({ ...tx, kind: 'anchor' }),
    waitForReceipt: (txHash, timeoutMs, nonce) => sender.waitForReceipt(txHash, timeoutMs, nonce),
  };
}

/** The deps of one "process": its own batch store instance (so its waiters share nothing with another's). */
function proc(windowMs: number, overrides: Partial<AnchorDeps> = {}, batching: Partial<NonNullable<AnchorDeps['batching']>> = {}): AnchorDeps {
  return { ...baseDeps, batching: { store: new BatchTable(getDb(), getConfig().tables.batches), windowMs, ...batching }, ...overrides };
}

/** The transaction as the chain has it: its sender and the Merkle root its input carries. */
async function rootOnChain(txHash: string): Promise<{ root: string; from: string }> {
  const provider = createLedgerProvider({ rpcUrl: getConfig().ledger.rpcUrl, chainId: getConfig().ledger.chainId, pollingIntervalMs: 50 });
  try {
    const tx = await provider.getTransaction(txHash);
    assert.ok(tx, `transaction ${txHash} is on the chain`);
    const data = decodeLedgerData(tx.data);
    assert.equal(data.kind, 'batch');
    return { root: data.kind === 'batch' ? data.root : '', from: tx.from.toLowerCase() };
  } finally {
    provider.destroy();
  }
}

/** The anchor's inclusion proof leads from its own leaf to the root its transaction carries on the chain. */
async function assertIncluded(item: AnchoredEvidence): Promise<void> {
  assert.ok(item.merkle, `${item.image_hash} has an inclusion proof`);
  const { root, from } = await rootOnChain(item.tx_hash);
  assert.equal(item.merkle.root, root);
  assert.equal(from, item.ledger_address.toLowerCase());
  const ok = verifyInclusion(
    anchorLeafHash(item.image_hash, item.server_hash),
    item.merkle.leaf_index,
    item.merkle.tree_size,
    item.merkle.path.map((p) => Buffer.from(p, 'hex')),
    Buffer.from(root, 'hex'),
  );
  assert.ok(ok, `inclusion of ${item.image_hash}`);
}

/**
 * The local chain's rule (`latest`: mined is final): the anchor write itself stored the final
 * receipt of the batch's transaction, the one the chain holds (read again here), and took the
 * record off the unfinished index, so the reconciler never reads it.
 */
async function assertFinalAtOnce(imageHash: string): Promise<void> {
  const stored = await getEvidenceRepo().get(imageHash);
  assert.ok(stored && isAnchored(stored), `${imageHash} is anchored`);
  assert.equal(stored.pending_shard, undefined, 'off the unfinished index');
  const final = stored.ledger_final;
  assert.ok(final, 'the anchor write carried the final receipt');
  assert.equal(final.finality, 'latest');
  assert.equal(final.tx_hash, stored.tx_hash.toLowerCase());
  const again = await readLedgerFinality({ rpc: getRpcReader(), confirmationTag: 'latest' }, { ...stored, ledger_final: undefined }, new Date());
  assert.equal(again.check.valid, true);
  assert.deepEqual(
    { block: final.block_number, hash: final.block_hash, time: final.block_time, from: final.from, input: final.input_data },
    { block: again.final?.block_number, hash: again.final?.block_hash, time: again.final?.block_time, from: again.final?.from, input: again.final?.input_data },
  );
}

/** Waits (real time) until the window open now has at least `ms` left, so a burst lands in one window. */
async function startOfWindow(windowMs: number, ms: number): Promise<void> {
  const left = windowMs - (Date.now() % windowMs);
  if (left < ms) await new Promise((r) => setTimeout(r, left + 5));
}

describe('ledger batching', () => {
  it('anchors of one window share one transaction carrying the Merkle root; each proof leads to it', async () => {
    const deps = proc(2000);
    await startOfWindow(2000, 1600);
    const devices = Array.from({ length: 5 }, () => new Device());
    const anchored = await Promise.all(devices.map((d) => anchorEvidence(deps, anchorInputFor(d, account.accountId))));
    // Grouped by the batch each record names (on a very slow machine the burst could straddle two windows).
    const byBatch = new Map<string, AnchoredEvidence[]>();
    for (const a of anchored) {
      const stored = await getEvidenceRepo().get(a.image_hash);
      assert.equal(stored?.anchor_state, 'anchored');
      const pk = stored?.batch_pk ?? '';
      assert.equal(parseBatchKey(pk).windowMs, 2000, 'the record names its batch');
      byBatch.set(pk, [...(byBatch.get(pk) ?? []), a]);
    }
    assert.ok(byBatch.size < 5, 'anchors were batched');
    for (const members of byBatch.values()) {
      assert.equal(new Set(members.map((a) => a.tx_hash)).size, 1, 'one transaction per batch');
      assert.deepEqual(members.map((a) => a.merkle?.tree_size), members.map(() => members.length));
      assert.deepEqual(members.map((a) => a.merkle?.leaf_index).sort(), members.map((_, i) => i));
    }
    for (const a of anchored) {
      assert.equal(a.tx_status, 'confirmed');
      await assertIncluded(a);
      await assertFinalAtOnce(a.image_hash);
    }
  });

  it('under the `finalized` rule the anchor write carries no final receipt: the record waits on the unfinished index for the reconciler', async () => {
    const deps = proc(500, { finality: { rpc: getRpcReader(), confirmationTag: 'finalized' } });
    const a = await anchorEvidence(deps, anchorInputFor(new Device(), account.accountId));
    assert.equal(a.tx_status, 'confirmed');
    const stored = await getEvidenceRepo().get(a.image_hash);
    assert.equal(stored?.ledger_final, undefined);
    assert.ok(stored?.pending_shard !== undefined, 'on the unfinished index');
  });

  it('a leaf written after the seal moves to the next window and is anchored there, once', async () => {
    const windowMs = 2000;
    await startOfWindow(windowMs, 1600);
    const onTime = new Device();
    const late = new Device();
    const lateInput = anchorInputFor(late, account.accountId);
    const lateHash = lateInput.imageHash;
    const a = proc(windowMs, { ledger: publisher() });
    // Process B's leaf write for `late` is slow: it lands only after process A sealed the window.
    const slowStore = new (class extends BatchTable {
      override async putLeaf(pk: string, leaf: BatchLeaf, nowMs: number): Promise<void> {
        if (leaf.image_hash === lateHash && !this.delayed) {
          this.delayed = true;
          await waitFor('the window to be sealed', 20_000, async () => ((await this.getSeal(pk))?.state === 'sealed' ? true : undefined));
        }
        return super.putLeaf(pk, leaf, nowMs);
      }
      delayed = false;
    })(getDb(), getConfig().tables.batches);
    const b: AnchorDeps = { ...baseDeps, ledger: publisher(), batching: { store: slowStore, windowMs } };
    const [first, second] = await Promise.all([
      anchorEvidence(a, anchorInputFor(onTime, account.accountId)),
      anchorEvidence(b, lateInput),
    ]);
    assert.notEqual(first.tx_hash, second.tx_hash, 'the late leaf went into a later batch');
    assert.equal(first.merkle?.tree_size, 1);
    assert.equal(second.merkle?.tree_size, 1);
    await assertIncluded(first);
    await assertIncluded(second);
    assert.deepEqual(await transactionsWithRoot(second.merkle?.root ?? '', wallet.address), [second.tx_hash], 'one transaction carries the late leaf');
  });

  it('a sealer that died holding the claim is taken over when its lease lapses; one transaction per batch', async () => {
    const windowMs = 500;
    await startOfWindow(windowMs, 400);
    // Process A: its first winning claim dies on the spot (a SIGKILL right after the conditional put).
    const claims: { pk: string; sealerId: string }[] = [];
    const dyingStore = new (class extends BatchTable {
      override async claimSeal(pk: string, sealerId: string, leaseExpiresAt: number): Promise<BatchSeal | null> {
        const won = await super.claimSeal(pk, sealerId, leaseExpiresAt);
        if (won && claims.length === 0) {
          claims.push({ pk, sealerId });
          return never();
        }
        return won;
      }
    })(getDb(), getConfig().tables.batches);
    const a: AnchorDeps = { ...baseDeps, ledger: publisher(), batching: { store: dyingStore, windowMs, sealLeaseMs: 800 } };
    // Process B waits a little longer after the window's end, so that A claims first.
    const b = proc(windowMs, { ledger: publisher() }, { graceMs: 250 });
    const toA = [anchorInputFor(new Device(), account.accountId), anchorInputFor(new Device(), account.accountId)];
    const toB = [anchorInputFor(new Device(), account.accountId), anchorInputFor(new Device(), account.accountId)];
    for (const input of toA) void anchorEvidence(a, input);
    const fromB = await Promise.all(toB.map((input) => anchorEvidence(b, input)));
    assert.equal(claims.length, 1, 'a sealer of A died holding its claim');
    // A's requests died with it; the phones retry them identically (at B).
    const retried = await Promise.all(toA.map((input) => anchorEvidence(b, input)));
    const all = [...fromB, ...retried];
    const batches = new Map<string, Set<string>>();
    for (const x of all) {
      await assertIncluded(x);
      const stored = await getEvidenceRepo().get(x.image_hash);
      batches.set(stored?.batch_pk as string, (batches.get(stored?.batch_pk as string) ?? new Set()).add(x.tx_hash));
    }
    for (const [pk, txs] of batches) {
      assert.equal(txs.size, 1, `one transaction for batch ${pk}`);
      const seal = await b.batching!.store.getSeal(pk);
      assert.equal(seal?.state, 'sealed');
      assert.equal(parseBatchKey(pk).windowMs, windowMs);
      assert.deepEqual(await transactionsWithRoot(seal?.root ?? '', wallet.address), [...txs], 'the batch is on the chain once');
    }
    // The window whose claim died was taken over and sealed by a live waiter.
    const dead = claims[0] as { pk: string; sealerId: string };
    assert.ok(batches.has(dead.pk), 'the dead claim was on a batch of these anchors');
    const taken = await b.batching!.store.getSeal(dead.pk);
    assert.equal(taken?.state, 'sealed');
    assert.notEqual(taken?.sealer_id, dead.sealerId);
  });

  it('a sealer that died after storing the transaction, before sending it: the identical retry sends that very transaction', async () => {
    const windowMs = 300;
    await startOfWindow(windowMs, 200);
    const device = new Device();
    const input = anchorInputFor(device, account.accountId);
    const dead = proc(windowMs, { ledger: publisher({ afterPersist: never }) });
    void anchorEvidence(dead, input); // hangs forever once the sealed batch is stored
    const item = await waitFor('the batch to be sealed', 20_000, async () => {
      const it = await getEvidenceRepo().get(input.imageHash);
      if (!it?.batch_pk) return undefined;
      return (await dead.batching!.store.getSeal(it.batch_pk))?.state === 'sealed' ? it : undefined;
    });
    const seal = await dead.batching!.store.getSeal(item.batch_pk as string);
    const retried = await anchorEvidence(proc(windowMs, { ledger: publisher() }), input);
    assert.equal(retried.tx_hash, seal?.tx_hash, 'the stored transaction, not a new one');
    assert.equal(retried.tx_status, 'confirmed');
    await assertIncluded(retried);
    assert.deepEqual(await transactionsWithRoot(seal?.root ?? '', wallet.address), [retried.tx_hash]);
  });

  it('the reconciler seals and finishes a batch whose every waiter died before sealing', async () => {
    const windowMs = 300;
    await startOfWindow(windowMs, 200);
    const device = new Device();
    const input = anchorInputFor(device, account.accountId);
    // The invocation dies while it waits for the window's end: it never reads the seal.
    const dying = new (class extends BatchTable {
      override getSeal(): Promise<undefined> {
        return never();
      }
    })(getDb(), getConfig().tables.batches);
    void anchorEvidence({ ...baseDeps, ledger: publisher(), batching: { store: dying, windowMs } }, input);
    const item = await waitFor('the leaf to be written', 20_000, async () => {
      const it = await getEvidenceRepo().get(input.imageHash);
      if (!it?.batch_pk) return undefined;
      const leaves = await dying.listLeaves(it.batch_pk);
      return leaves.some((l) => l.image_hash === input.imageHash) ? it : undefined;
    });
    assert.equal(item.anchor_state, 'publishing');
    // The reconciler, past the grace it leaves a live request (its clock 30 s on), over this item only.
    const repo = getEvidenceRepo();
    const onlyThis = Object.assign(Object.create(repo) as typeof repo, { listUnfinished: async () => [input.imageHash] });
    const report = await reconcileAnchors({ ...proc(windowMs, { ledger: publisher(), repo: onlyThis }), clock: () => new Date(Date.now() + 30_000) });
    assert.equal(report.finished, 1, JSON.stringify(report));
    const done = (await repo.get(input.imageHash)) as AnchoredEvidence;
    assert.equal(done.anchor_state, 'anchored');
    await assertIncluded(done);
    assert.deepEqual(await transactionsWithRoot(done.merkle?.root ?? '', wallet.address), [done.tx_hash]);
  });
});
