import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { mkdtempSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { Wallet } from 'ethers';
import { getAnchorDeps } from '../../lib/deps/anchoring.js';
import { getConfig, getDb } from '../../lib/deps/core.js';
import { getEvidenceRepo } from '../../lib/deps/evidence.js';
import { anchorEvidence, type AnchorDeps, type AnchorInput } from '../../lib/evidence/anchor.js';
import { RemoteTsa } from '../../lib/crypto/tsa/remote.js';
import { DomainError } from '../../lib/errors.js';
import { createLedgerProvider, LedgerSender } from '../../lib/ledger/sender.js';
import { startLocalChain, type LocalChain } from '../../lib/local/chain.js';
import { ChainTable } from '../../lib/store/chain-table.js';
import { useStack, freePort } from '../support/stack.js';
import { anchorInputFor, Device } from '../support/client.js';

let baseDeps: AnchorDeps;

before(async () => {
  await useStack();
  baseDeps = await getAnchorDeps();
});

function inputFor(device: Device): AnchorInput {
  return anchorInputFor(device, 'acc_fault_test');
}

async function assertNothingHalfMade(input: AnchorInput) {
  const item = await getEvidenceRepo().get(input.imageHash);
  assert.equal(item?.anchor_state, undefined, 'the hash must not stay claimed or anchored');
  assert.equal(item?.pq_signature, undefined, 'no proof may be stored');
  assert.equal(await getEvidenceRepo().getLink(input.publicKeyHex, input.chainIndex), undefined, 'the chain position must be free again');
}

const STATUS_OF_KIND: Record<string, number> = { invalid: 400, conflict: 409, limited: 429, unavailable: 503 };

async function rejectsWith(promise: Promise<unknown>, status: number, code: string) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof DomainError, `expected a DomainError, got ${String(error)}`);
    assert.equal(STATUS_OF_KIND[error.kind], status);
    assert.equal(error.code, code);
    return true;
  });
}

describe('a time-stamping authority that fails mid-request', () => {
  let server: Server;
  let url: string;

  before(async () => {
    // A real HTTP TSA endpoint that answers every request with an error.
    server = createServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('TSA backend down');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/tsa`;
  });

  it('answers 503 tsa_unavailable, leaves nothing half-made, and a retry succeeds', async () => {
    const roots = await baseDeps.tsa.certificates();
    const failingTsa = new RemoteTsa({ url, rootsPem: [roots[roots.length - 1] ?? ''], timeoutMs: 2000 });
    const device = new Device();
    const input = inputFor(device);

    await rejectsWith(anchorEvidence({ ...baseDeps, tsa: failingTsa }, input), 503, 'tsa_unavailable');
    await assertNothingHalfMade(input);

    const result = await anchorEvidence(baseDeps, input);
    assert.equal(result.image_hash, input.imageHash);
    assert.equal((await getEvidenceRepo().get(input.imageHash))?.anchor_state, 'anchored');
    server.close();
  });
});

describe('a chain node that is stopped mid-request', () => {
  let chain: LocalChain;
  let port: number;
  let sender: LedgerSender;
  const wallet = Wallet.createRandom();

  async function startChain() {
    chain = await startLocalChain({
      port,
      blockTimeMs: 0,
      chainId: getConfig().ledger.chainId,
      accounts: [{ privateKey: wallet.privateKey, balanceWei: 10n ** 21n }],
      logFile: path.join(mkdtempSync(path.join(os.tmpdir(), 'fault-chain-')), 'chain.log'),
    });
  }

  before(async () => {
    port = await freePort();
    await startChain();
    const provider = createLedgerProvider({ rpcUrl: chain.url, chainId: chain.chainId, pollingIntervalMs: 50, requestTimeoutMs: 3000 });
    sender = new LedgerSender({
      provider,
      signer: wallet.connect(provider),
      db: getDb(),
      table: getConfig().tables.ledger,
      chainId: chain.chainId,
      priorityFeeGwei: 1,
      maxFeeGwei: 100,
      pollingIntervalMs: 50,
    });
  });

  const depsWith = (): AnchorDeps => ({
    ...baseDeps,
    ledger: {
      chainId: chain.chainId,
      address: () => sender.address(),
      publish: async (data, ref, persist) => sender.submit(data, { kind: 'anchor', ref }, { beforePersist: persist }),
      resume: (tx) => sender.resume({ ...tx, kind: 'anchor' }),
      waitForReceipt: (tx, ms, nonce) => sender.waitForReceipt(tx, ms, nonce),
    },
  });

  it('answers 503 ledger_unavailable and keeps what it made; the retry after the node is back sends that very transaction', async () => {
    // One anchor while the node runs, so the wallet's nonce state is real.
    const first = await anchorEvidence(depsWith(), inputFor(new Device()));
    assert.equal(first.tx_status, 'confirmed');

    await chain.stop();
    const device = new Device();
    const input = inputFor(device);
    await rejectsWith(anchorEvidence(depsWith(), input), 503, 'ledger_unavailable');
    // Either nothing was made (the node was found down before signing), or the proofs and the
    // signed transaction are stored and its nonce is held for it (LEDGER_SLOT: a persisted
    // transaction is never given back, so it can never be replaced by a second one).
    const stuck = await getEvidenceRepo().get(input.imageHash);
    if (stuck?.anchor_state !== undefined) {
      assert.equal(stuck.anchor_state, 'publishing');
      assert.ok(stuck.pq_signature && stuck.tsa_response && stuck.tx_raw, 'the proofs and the signed transaction are stored');
      assert.equal(stuck.tx_nonce, first.tx_nonce + 1);
    } else await assertNothingHalfMade(input);

    // The node comes back empty (Hardhat keeps no state): replay what was sent, then retry.
    await startChain();
    await sender.replay();
    const retried = await anchorEvidence(depsWith(), input);
    assert.equal(retried.tx_status, 'confirmed');
    const stored = await getEvidenceRepo().get(input.imageHash);
    assert.equal(stored?.anchor_state, 'anchored');
    assert.equal(stored?.tx_hash, retried.tx_hash);
    if (stuck?.tx_hash) assert.equal(retried.tx_hash, stuck.tx_hash, 'the transaction stored before the outage is the one sent');
    // No gap blocks later transactions: the next nonce follows.
    assert.equal(retried.tx_nonce, first.tx_nonce + 1);
    await chain.stop();
  });
});

describe('a request that died holding its chain link, before it published', () => {
  /** The link a request of the same device left when it died, for another photo at the same index (its lease ends at `leaseEnd`). */
  async function deadLink(input: AnchorInput, leaseEnd: number): Promise<{ imageHash: string; claimId: string }> {
    const claimId = `dead-${randomBytes(4).toString('hex')}`;
    const imageHash = randomBytes(32).toString('hex');
    const put = await new ChainTable(getDb(), getConfig().tables.chains).putLink({
      public_key_hex: input.publicKeyHex,
      chain_index: input.chainIndex,
      image_hash: imageHash,
      chain_hash: randomBytes(32).toString('hex'),
      previous_hash: input.previousHash,
      signature_hex: input.signatureHex,
      state: 'claimed',
      claim_id: claimId,
      lease_expires_at: leaseEnd,
    });
    assert.equal(put, true);
    return { imageHash, claimId };
  }

  it('does not block the index once its lease lapsed: its claim is barred, the link freed and this photo anchored there', async () => {
    const input = inputFor(new Device());
    const dead = await deadLink(input, Date.now() - 60_000);
    const result = await anchorEvidence(baseDeps, input);
    assert.equal(result.image_hash, input.imageHash);
    assert.equal(result.chain_index, input.chainIndex);
    // The dead request, were it to wake up, can never publish its photo into the index it lost.
    const item = await getEvidenceRepo().get(dead.imageHash);
    assert.ok(item?.dead_claims?.has(dead.claimId), 'the lapsed claim is barred');
    assert.equal(item?.anchor_state, undefined);
  });

  it('still refuses the index to another photo while its lease stands, saying when to retry', async () => {
    const input = inputFor(new Device());
    await deadLink(input, Date.now() + 60_000);
    await assert.rejects(anchorEvidence(baseDeps, input), (error: unknown) => {
      assert.ok(error instanceof DomainError);
      assert.equal(error.kind, 'conflict');
      assert.equal(error.code, 'chain_index_conflict');
      assert.ok((error.retryAfterSeconds ?? 0) >= 1 && (error.retryAfterSeconds ?? 0) <= 60, `Retry-After ${error.retryAfterSeconds}`);
      return true;
    });
  });
});

describe('a database that applies the move to publishing but whose answer is lost, and then does not answer', () => {
  it('leaves the quota hold to the reconciliation, which settles it once the retry finished the anchor: charged exactly once', async () => {
    const { StoreUnavailableError } = await import('../../lib/errors.js');
    const { reconcileAnchors } = await import('../../lib/evidence/reconcile.js');
    const { getReconcileDeps } = await import('../../lib/deps/anchoring.js');
    const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
    const input = anchorInputFor(new Device(), `acc_fault_${randomBytes(4).toString('hex')}`);
    let down = false;
    const repo = new Proxy(baseDeps.repo, {
      get(target, prop, receiver) {
        const real = Reflect.get(target, prop, receiver) as unknown;
        if (typeof real !== 'function') return real;
        return async (...args: unknown[]) => {
          if (down) throw new StoreUnavailableError('TimeoutError frozen');
          const result = await (real as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          // The write landed; its answer is lost, and the database stops answering.
          if (prop === 'publish') {
            down = true;
            throw new StoreUnavailableError('TimeoutError frozen');
          }
          return result;
        };
      },
    });
    const ended: string[] = [];
    const quota = { charge: baseDeps.quota.charge.bind(baseDeps.quota), end: (hold: { counterKey: string; holdId: string }, outcome: 'settle' | 'refund') => (ended.push(outcome), baseDeps.quota.end(hold, outcome)) };
    await assert.rejects(anchorEvidence({ ...baseDeps, repo, quota }, input), (error: unknown) => (error as { status?: number }).status === 503 || (error as DomainError).kind === 'unavailable');
    const item = await getEvidenceRepo().get(input.imageHash);
    assert.equal(item?.anchor_state, 'publishing', 'the move to publishing landed');
    assert.deepEqual(ended, [], 'the request could not read the item: its unit is neither refunded nor settled by it');

    // The phone retries the identical request: it finishes the anchor (its own unit goes back);
    // the reconciliation then settles the hold the item names.
    const result = await anchorEvidence(baseDeps, input);
    assert.equal(result.image_hash, input.imageHash);
    const done = await getEvidenceRepo().get(input.imageHash);
    assert.equal(done?.anchor_state, 'anchored');
    // Its scheduled pass, a minute on: a hold younger than OWNER_GRACE_MS is left to its request.
    await reconcileAnchors({ ...(await getReconcileDeps()), clock: () => new Date(Date.now() + 60_000) }, { fullScan: true });
    const meter = (await getDb().send(new GetCommand({ TableName: getConfig().tables.counters, Key: { pk: done?.quota_counter }, ConsistentRead: true }))).Item;
    assert.equal(meter?.[`h#${done?.quota_hold ?? ''}`], undefined, 'the hold is ended');
    assert.equal(meter?.used, 1, 'one unit for one anchor');
  });
});
