import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Wallet } from 'ethers';
import { reconcileQuotaHolds } from '../../lib/accounts/quota-holds.js';
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

/** Ends the quota holds left open, as the reconciler would a few minutes later. */
async function settleHoldsLater(): Promise<void> {
  const deps = live();
  await reconcileAnchors({ ...deps, clock: () => new Date(Date.now() + 5 * 60_000) });
  await reconcileQuotaHolds(getKeyAuthDeps().limits, async (ref, holdId, age) => {
    const item = await getEvidenceRepo().get(ref.split(':')[0] ?? '');
    if (item?.quota_hold === holdId && (item.anchor_state === 'publishing' || item.anchor_state === 'anchored')) return 'settle';
    return age >= 0 ? 'refund' : 'wait';
  }, { nowMs: Date.now() + 5 * 60_000, requestMaxMs: 120_000 });
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
    const link = await getEvidenceRepo().getLink(input.publicKeyHex, input.chainIndex);
    assert.equal(link?.state, 'anchored');
    assert.deepEqual(await transactionsFor(input.imageHash), [publishing.tx_hash]);

    await assert.rejects(anchorEvidence(live(), input), { code: 'hash_already_anchored' }, 'once finished, the retry answers as for any anchored hash');
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

describe('an invocation that dies while accepting (claimed, nothing signed)', () => {
  const hangingSigner = () => ({ ...baseDeps.signer, keyId: baseDeps.signer.keyId, algorithm: 'ML-DSA-65' as const, publicKey: () => baseDeps.signer.publicKey(), sign: never });

  it('keeps its chain position for that hash only: another photo at the index gets 409', async () => {
    const account = `acc_${randomUUID()}`;
    const device = new Device();
    const input = inputFor(device, account);
    void anchorEvidence(live({ signer: hangingSigner() }), input);
    await waitFor(input.imageHash, 'accepting');
    const deadline = Date.now() + 5000;
    while (!(await getEvidenceRepo().getLink(input.publicKeyHex, 0))) {
      assert.ok(Date.now() < deadline, 'the link is claimed');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
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
    const accepting = await waitFor(input.imageHash, 'accepting');
    assert.ok((accepting.lease_expires_at ?? 0) > Date.now() + 30_000, 'the lease still stands');

    const result = await anchorEvidence(live(), input);
    assert.equal(result.tx_status, 'confirmed');
    assert.notEqual(result.claim_id, accepting.claim_id, 'the retry holds the claim now');
    assert.equal((await transactionsFor(input.imageHash)).length, 1);
    await settleHoldsLater();
    assert.equal(await used(account), 1, 'the interrupted invocation\'s unit is refunded, the retry\'s kept');
  });

  it('another request for the hash is refused while the claim stands', async () => {
    const account = `acc_${randomUUID()}`;
    const device = new Device();
    const input = inputFor(device, account);
    void anchorEvidence(live({ signer: hangingSigner(), leaseMs: 60_000 }), input);
    await waitFor(input.imageHash, 'accepting');
    // The same photo from another device: a different request (another fingerprint).
    const other = anchorInputOf(new Device().next(input.imageHash), account);
    await assert.rejects(anchorEvidence(live(), other), { code: 'hash_already_anchored' });
  });

  it('is released by the reconciler once its lease lapsed: evidence, link and unit, and the retry starts afresh', async () => {
    const account = `acc_${randomUUID()}`;
    const input = inputFor(new Device(), account);
    void anchorEvidence(live({ signer: hangingSigner(), leaseMs: 200 }), input);
    await waitFor(input.imageHash, 'accepting');
    assert.equal(await used(account), 1, 'the unit is held while accepting');

    const report = await reconcileAnchors({ ...live(), clock: () => new Date(Date.now() + 1000) });
    assert.equal(report.released, 1);
    assert.equal((await getEvidenceRepo().get(input.imageHash))?.anchor_state, undefined);
    assert.equal(await getEvidenceRepo().getLink(input.publicKeyHex, input.chainIndex), undefined, 'the index is free again');
    assert.equal(await used(account), 0, 'the unit is refunded');

    const result = await anchorEvidence(live(), input);
    assert.equal(result.tx_status, 'confirmed');
    assert.equal(await used(account), 1);
  });
});

describe('a crash between the anchored evidence and its link', () => {
  it('changes nothing: the next anchor of the device sets the link anchored', async () => {
    const account = `acc_${randomUUID()}`;
    const device = new Device();
    const first = inputFor(device, account);
    const anchored = await anchorEvidence(live(), first);
    // As if the link's write had not landed before the crash.
    await getDb().send(
      new UpdateCommand({
        TableName: getConfig().tables.chains,
        Key: { public_key_hex: first.publicKeyHex, chain_index: 0 },
        UpdateExpression: 'SET #s = :claimed REMOVE anchored_at, tx_hash',
        ExpressionAttributeNames: { '#s': 'state' },
        ExpressionAttributeValues: { ':claimed': 'claimed' },
      }),
    );
    device.advance({ chain_hash: first.chainHash });
    await anchorEvidence(live(), inputFor(device, account));
    const link = await getEvidenceRepo().getLink(first.publicKeyHex, 0);
    assert.equal(link?.state, 'anchored');
    assert.equal(link?.tx_hash, anchored.tx_hash);
  });
});
