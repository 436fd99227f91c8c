import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { Wallet } from 'ethers';
import { type HoldVerdict, type OpenHold, reconcileQuotaHolds } from '../../lib/accounts/quota-holds.js';
import { getKeyAuthDeps } from '../../lib/deps/key-auth.js';
import { getAnchorDeps } from '../../lib/deps/anchoring.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { anchorEvidence, type AnchorDeps, type AnchorInput } from '../../lib/evidence/anchor.js';
import type { LedgerPublisher } from '../../lib/evidence/ports.js';
import { reconcileAnchors } from '../../lib/evidence/reconcile.js';
import type { EvidenceItem } from '../../lib/evidence/repository.js';
import { decodeLedgerData } from '../../lib/ledger/anchor-data.js';
import { createLedgerProvider, LedgerSender } from '../../lib/ledger/sender.js';
import { anchorInputFor, anchorInputOf, Device } from '../support/client.js';
import { useStack } from '../support/stack.js';
import { drainChangeFeed } from '../support/change-feed.js';
import { readChainPage } from '../../lib/evidence/v1-read.js';

/**
 * The anchor's state machine when the invocation running it dies at each step (simulated in
 * process: the "dead" invocation is left hanging forever at that line, with a ledger sender of
 * its own, as another Lambda would have). The identical retry and the reconciler must finish or
 * undo it: one transaction per hash, no fork, one quota unit per anchor held. The kill tests in
 * test/faults/ do the same with real SIGKILLs of the whole service.
 */

let baseDeps: AnchorDeps;
let wallet: Wallet;
const never = () => new Promise<never>(() => undefined);

before(async () => {
  await useStack();
  baseDeps = await getAnchorDeps();
  // A wallet of this file's own (funded on the node), so that a nonce the "dead" invocation
  // leaves unused for a moment never delays the other test files' transactions.
  wallet = Wallet.createRandom() as unknown as Wallet;
  const provider = createLedgerProvider({ rpcUrl: getConfig().ledger.rpcUrl, chainId: getConfig().ledger.chainId, pollingIntervalMs: 50 });
  await provider.send('hardhat_setBalance', [wallet.address, '0x' + (10n ** 21n).toString(16)]);
  provider.destroy();
});

/** One "process": its own ledger sender over this file's wallet. */
function newSender(): LedgerSender {
  const { ledger, tables } = getConfig();
  const provider = createLedgerProvider({ rpcUrl: ledger.rpcUrl, chainId: ledger.chainId, pollingIntervalMs: 50 });
  return new LedgerSender({
    provider,
    signer: new Wallet(wallet.privateKey, provider),
    db: getDb(),
    table: tables.ledger,
    chainId: ledger.chainId,
    priorityFeeGwei: 1,
    maxFeeGwei: 100,
    pollingIntervalMs: 50,
  });
}

function publisherOver(sender: LedgerSender, hooks: { afterPersist?: () => Promise<void>; afterBroadcast?: () => Promise<void> } = {}): LedgerPublisher {
  return {
    chainId: getConfig().ledger.chainId,
    address: () => sender.address(),
    publish: async (data, ref, persist) => {
      const r = await sender.submit(data, { kind: 'anchor', ref }, {
        beforePersist: async (tx) => {
          await persist(tx);
          await hooks.afterPersist?.();
        },
      });
      await hooks.afterBroadcast?.();
      return r;
    },
    resume: (tx) => sender.resume({ ...tx, kind: 'anchor' }),
    waitForReceipt: (txHash, timeoutMs, nonce) => sender.waitForReceipt(txHash, timeoutMs, nonce),
  };
}

/** The deps of a live invocation (its own sender), optionally overridden. */
/** The hashes this file anchors: its reconciler sees only those (the tables are shared with other test files, whose anchors go through other wallets). */
const mine = new Set<string>();

function live(overrides: Partial<AnchorDeps> = {}): AnchorDeps {
  const repo = baseDeps.repo;
  const own = Object.assign(Object.create(repo) as typeof repo, {
    listUnfinished: async (limit: number) => (await repo.listUnfinished(limit)).filter((h) => mine.has(h)),
    scanUnfinished: async () => (await repo.scanUnfinished()).filter((h) => mine.has(h)),
  });
  return { ...baseDeps, repo: own, ledger: publisherOver(newSender()), ...overrides };
}

function inputFor(device: Device, accountId: string): AnchorInput {
  const input = anchorInputFor(device, accountId);
  mine.add(input.imageHash);
  return input;
}

async function waitFor(imageHash: string, state: EvidenceItem['anchor_state']): Promise<EvidenceItem> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const item = await getEvidenceRepo().get(imageHash);
    if (item && item.anchor_state === state) return item;
    assert.ok(Date.now() < deadline, `${imageHash} never reached ${state} (is ${item?.anchor_state})`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function used(accountId: string): Promise<number> {
  return (await getKeyAuthDeps().limits.usage(accountId, 'pro')).used;
}

/** The transactions of this file's wallet on the chain that carry `imageHash`. */
async function transactionsFor(imageHash: string): Promise<string[]> {
  const provider = createLedgerProvider({ rpcUrl: getConfig().ledger.rpcUrl, chainId: getConfig().ledger.chainId, pollingIntervalMs: 50 });
  try {
    const latest = await provider.getBlockNumber();
    const found: string[] = [];
    for (let n = Math.max(0, latest - 400); n <= latest; n++) {
      const block = await provider.getBlock(n, true);
      for (const tx of block?.prefetchedTransactions ?? []) {
        if (tx.from.toLowerCase() !== wallet.address.toLowerCase()) continue;
        try {
          const data = decodeLedgerData(tx.data);
          if (data.kind === 'anchor' && data.imageHash === imageHash) found.push(tx.hash);
        } catch {
          // not one of ours (a filler, a PQ-key registration)
        }
      }
    }
    return found;
  } finally {
    provider.destroy();
  }
}

/** The reconciliation's judgement of an anchor's hold, as it would judge it a few minutes later (lib/evidence/reconcile.ts). */
async function judgeLater(hold: OpenHold): Promise<HoldVerdict> {
  const [imageHash = '', claimId = ''] = hold.ref.split(':');
  const item = await getEvidenceRepo().get(imageHash);
  if (item?.anchor_state) return item.quota_hold === hold.holdId ? 'settle' : 'refund';
  return (await getEvidenceRepo().barClaim(imageHash, claimId)) === 'barred' ? 'refund' : 'wait';
}

/** Ends the quota holds left open, as the reconciler would a few minutes later. */
async function settleHoldsLater(): Promise<void> {
  const deps = live();
  await reconcileAnchors({ ...deps, clock: () => new Date(Date.now() + 5 * 60_000) });
  await getKeyAuthDeps().limits.flushSettles();
  await reconcileQuotaHolds(getKeyAuthDeps().limits, judgeLater, { nowMs: Date.now() + 5 * 60_000, requestMaxMs: 120_000 });
}

describe('an invocation that dies after storing the proofs and the signed transaction, before the broadcast', () => {
  it('is finished by the identical retry with that very transaction: one transaction, one unit charged', async () => {
    const account = `acc_${randomUUID()}`;
    const input = inputFor(new Device(), account);
    void anchorEvidence(live({ ledger: publisherOver(newSender(), { afterPersist: never }) }), input);
    const publishing = await waitFor(input.imageHash, 'publishing');

    const result = await anchorEvidence(live(), input);
    assert.equal(result.tx_hash, publishing.tx_hash, 'the retry finishes the transaction already signed');
    assert.equal(result.server_hash, publishing.server_hash);
    assert.equal(result.tx_status, 'confirmed');
    assert.deepEqual(await transactionsFor(input.imageHash), [publishing.tx_hash]);

    await settleHoldsLater();
    assert.equal(await used(account), 1, 'one anchor held, one unit');
  });

  it('is finished by the reconciler when no retry comes', async () => {
    const account = `acc_${randomUUID()}`;
    const input = inputFor(new Device(), account);
    void anchorEvidence(live({ ledger: publisherOver(newSender(), { afterPersist: never }) }), input);
    const publishing = await waitFor(input.imageHash, 'publishing');

    const report = await reconcileAnchors({ ...live(), clock: () => new Date(Date.now() + 60_000) });
    assert.equal(report.finished, 1);
    const item = await getEvidenceRepo().get(input.imageHash);
    assert.equal(item?.anchor_state, 'anchored');
    assert.equal(item?.tx_hash, publishing.tx_hash);
    await drainChangeFeed();
    const link = await getEvidenceRepo().getLink(input.publicKeyHex, input.chainIndex);
    assert.equal(link?.state, 'anchored');
    assert.deepEqual(await transactionsFor(input.imageHash), [publishing.tx_hash]);

    const again = await anchorEvidence(live(), input);
    assert.equal(again.tx_hash, publishing.tx_hash, 'once finished, the identical retry answers the anchor as the first request would have');
    await settleHoldsLater();
    assert.equal(await used(account), 1);
  });
});

describe('an invocation that dies after the broadcast, before the anchor was recorded', () => {
  it('is finished by the identical retry from the receipt: still one transaction', async () => {
    const account = `acc_${randomUUID()}`;
    const input = inputFor(new Device(), account);
    void anchorEvidence(live({ ledger: publisherOver(newSender(), { afterBroadcast: never }) }), input);
    const publishing = await waitFor(input.imageHash, 'publishing');
    // The broadcast happens right after the slot write: wait until the node has it.
    const deadline = Date.now() + 10_000;
    while ((await transactionsFor(input.imageHash)).length === 0) {
      assert.ok(Date.now() < deadline, 'the dying invocation broadcast its transaction');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const result = await anchorEvidence(live(), input);
    assert.equal(result.tx_hash, publishing.tx_hash);
    assert.deepEqual(await transactionsFor(input.imageHash), [publishing.tx_hash]);
    await settleHoldsLater();
    assert.equal(await used(account), 1);
  });
});

describe('an invocation that dies before it publishes (its chain link claimed, nothing stored)', () => {
  const hangingSigner = () => ({ ...baseDeps.signer, keyId: baseDeps.signer.keyId, algorithm: 'ML-DSA-65' as const, publicKey: () => baseDeps.signer.publicKey(), sign: never });

  /** The link the hanging invocation claimed. */
  async function waitForLink(input: AnchorInput) {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const link = await getEvidenceRepo().getLink(input.publicKeyHex, input.chainIndex);
      if (link) return link;
      assert.ok(Date.now() < deadline, 'the link is claimed');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('keeps its chain position for that hash only: another photo at the index gets 409', async () => {
    const account = `acc_${randomUUID()}`;
    const device = new Device();
    const input = inputFor(device, account);
    void anchorEvidence(live({ signer: hangingSigner(), leaseMs: 60_000 }), input);
    await waitForLink(input);
    assert.equal((await getEvidenceRepo().get(input.imageHash))?.anchor_state, undefined, 'nothing of the anchor is on the item');
    // Another photo of the same device, at the same index.
    const rival = inputFor(device, account);
    assert.notEqual(rival.imageHash, input.imageHash);
    await assert.rejects(anchorEvidence(live(), rival), { code: 'chain_index_conflict' });
  });

  it('is resumed by the identical retry at once, without waiting for the lease: one transaction, one unit', async () => {
    const account = `acc_${randomUUID()}`;
    const input = inputFor(new Device(), account);
    // The interrupted invocation holds a long lease and hangs forever while signing.
    void anchorEvidence(live({ signer: hangingSigner(), leaseMs: 60_000 }), input);
    const link = await waitForLink(input);
    assert.ok((link.lease_expires_at ?? 0) > Date.now() + 30_000, 'the lease still stands');

    const result = await anchorEvidence(live(), input);
    assert.equal(result.tx_status, 'confirmed');
    assert.notEqual(result.claim_id, link.claim_id, 'the retry published under its own claim');
    assert.equal((await getEvidenceRepo().getLink(input.publicKeyHex, input.chainIndex))?.claim_id, result.claim_id, 'and holds the link');
    assert.equal((await transactionsFor(input.imageHash)).length, 1);
    await settleHoldsLater();
    assert.equal(await used(account), 1, 'the interrupted invocation\'s unit is refunded, the retry\'s kept');
  });

  it('does not keep the hash from another request: the first to publish anchors it', async () => {
    const account = `acc_${randomUUID()}`;
    const device = new Device();
    const input = inputFor(device, account);
    void anchorEvidence(live({ signer: hangingSigner(), leaseMs: 60_000 }), input);
    await waitForLink(input);
    // The same photo from another device: a different request (another fingerprint, another chain).
    const other = anchorInputOf(new Device().next(input.imageHash), account);
    const result = await anchorEvidence(live(), other);
    assert.equal(result.public_key_hex, other.publicKeyHex);
  });

  it('has its unit refunded by the reconciliation once the grace passed, its claim barred so that it can never publish, and the retry starts afresh', async () => {
    const account = `acc_${randomUUID()}`;
    const input = inputFor(new Device(), account);
    void anchorEvidence(live({ signer: hangingSigner(), leaseMs: 200 }), input);
    const link = await waitForLink(input);
    // The hold is taken beside the link: wait until it shows.
    for (let deadline = Date.now() + 5000; (await used(account)) !== 1; ) {
      assert.ok(Date.now() < deadline, 'the unit is held');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await reconcileQuotaHolds(getKeyAuthDeps().limits, (hold) => judgeLater(hold), { nowMs: Date.now() + 5 * 60_000, requestMaxMs: 120_000 });
    assert.equal(await used(account), 0, 'the unit is refunded');
    assert.ok((await getEvidenceRepo().get(input.imageHash))?.dead_claims?.has(link.claim_id), 'the claim is barred: it can never publish');

    const result = await anchorEvidence(live(), input);
    assert.equal(result.tx_status, 'confirmed');
    await settleHoldsLater();
    assert.equal(await used(account), 1);
  });
});

describe('the chain link of an anchored item', () => {
  it('is marked anchored from the evidence table’s changes, not on the request path; readers meanwhile derive it from the item', async () => {
    const account = `acc_${randomUUID()}`;
    const device = new Device();
    const first = inputFor(device, account);
    const anchored = await anchorEvidence(live(), first);
    // The request wrote the claimed link and the anchored item; the link's mark comes from the feed.
    const page = await readChainPage(getEvidenceRepo(), first.publicKeyHex, 0, 10);
    assert.equal(page?.entries[0]?.state, 'anchored', 'readers show it anchored at once');
    assert.equal(page?.entries[0]?.tx_hash, anchored.tx_hash);
    await drainChangeFeed();
    const link = await getEvidenceRepo().getLink(first.publicKeyHex, 0);
    assert.equal(link?.state, 'anchored');
    assert.equal(link?.tx_hash, anchored.tx_hash);
    assert.equal(link?.lease_expires_at, undefined);
  });
});
