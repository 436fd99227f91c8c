import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { JsonRpcProvider, Network, Transaction, parseUnits, type Wallet } from 'ethers';
import { encodeAnchorData } from '../../lib/ledger/anchor-data.js';
import { createLedgerProvider, type LedgerSenderOptions, type LedgerSlot } from '../../lib/ledger/sender.js';
import { createEvidenceRepository } from '../../lib/deps/evidence.js';
import type { EvidenceItem, EvidenceRepository } from '../../lib/evidence/repository.js';
import { reconcileAnchors, type ReconcileDeps } from '../../lib/evidence/reconcile.js';
import { startLocalChain, type LocalChain } from '../../lib/local/chain.js';
import { CHAIN_ID, FUNDS, freePort, makeSender, newWallet, randomHash, startStore, tempLog, type Store } from './helpers.js';

/**
 * Real networks on a Hardhat node with automine OFF (blocks only when the test mines one):
 * EIP-1559 fees with a priority-fee floor and a cap, and the replacement of stuck transactions at
 * the same nonce with both fees bumped ≥ 10 %, the evidence record following the version that lands.
 */

const wallets = Array.from({ length: 6 }, () => newWallet());
const MINUTE = 60_000;
let store: Store;
let chain: LocalChain;
let provider: JsonRpcProvider;
let repo: EvidenceRepository;
/** The senders' clock runs `offsetMs` ahead of the real one (to age pending transactions). */
let offsetMs = 0;
const clock = () => new Date(Date.now() + offsetMs);

before(async () => {
  store = await startStore();
  chain = await startLocalChain({
    port: await freePort(),
    blockTimeMs: 0,
    chainId: CHAIN_ID,
    accounts: wallets.map((w) => ({ privateKey: w.privateKey, balanceWei: FUNDS })),
    logFile: tempLog('replacement'),
  });
  provider = createLedgerProvider({ rpcUrl: chain.url, chainId: CHAIN_ID, pollingIntervalMs: 50 });
  await provider.send('evm_setAutomine', [false]);
  repo = createEvidenceRepository(store.db, store.tables);
});

after(async () => {
  provider?.destroy();
  await chain?.stop();
  await store?.stop();
});

type LogLine = { level: string; message: string; fields: Record<string, unknown> };

function senderFor(wallet: Wallet, lines: LogLine[] = [], extra: Partial<LedgerSenderOptions> = {}) {
  return makeSender(store, provider, wallet, {
    clock,
    replaceAfterMs: 5 * MINUTE,
    log: (level, message, fields = {}) => lines.push({ level, message, fields }),
    onReplaced: async (r) => {
      if (r.kind === 'anchor') await repo.replaceTxHash(r.ref, r.previousTxHash, r.txHash, r.txHashes);
    },
    ...extra,
  });
}

async function slot(wallet: Wallet, nonce: number): Promise<LedgerSlot> {
  const r = await store.db.send(
    new GetCommand({ TableName: store.tables.ledger, Key: { pk: `tx#${wallet.address.toLowerCase()}`, sk: nonce }, ConsistentRead: true }),
  );
  assert.ok(r.Item, `slot ${nonce}`);
  return r.Item as LedgerSlot;
}

async function evidence(imageHash: string): Promise<EvidenceItem> {
  const item = await repo.get(imageHash);
  assert.ok(item);
  return item;
}

/** A pending anchor as anchorEvidence leaves it when the request answered before the receipt. */
async function pendingAnchor(imageHash: string, sent: { txHash: string; nonce: number }): Promise<string> {
  const publicKeyHex = randomHash();
  await store.db.send(
    new PutCommand({
      TableName: store.tables.evidence,
      Item: {
        image_hash: imageHash,
        anchor_state: 'anchored',
        anchored_at: clock().toISOString(),
        public_key_hex: publicKeyHex,
        chain_index: 0,
        tx_hash: sent.txHash,
        tx_nonce: sent.nonce,
        tx_status: 'pending',
        pending_shard: 'pending',
      },
    }),
  );
  await store.db.send(
    new PutCommand({
      TableName: store.tables.chains,
      Item: { public_key_hex: publicKeyHex, chain_index: 0, image_hash: imageHash, state: 'anchored', claim_id: 'c', tx_hash: sent.txHash },
    }),
  );
  return publicKeyHex;
}

/** The reconciler with what a pending anchor needs of it: the evidence store and this sender. */
function reconcilerOver(sender: ReturnType<typeof makeSender>): ReconcileDeps {
  return {
    repo,
    clock,
    ledger: { waitForReceipt: (txHash: string, timeoutMs: number, nonce?: number) => sender.waitForReceipt(txHash, timeoutMs, nonce) },
    rebroadcast: () => sender.rebroadcastPending(),
  } as unknown as ReconcileDeps;
}

async function linkTxHash(publicKeyHex: string): Promise<unknown> {
  const r = await store.db.send(new GetCommand({ TableName: store.tables.chains, Key: { public_key_hex: publicKeyHex, chain_index: 0 } }));
  return r.Item?.tx_hash;
}

/** Straight from the node: ethers' getTransactionReceipt reuses an identical call's answer for 250 ms. */
async function receiptOf(hash: string): Promise<{ status: number; blockNumber: number } | null> {
  const r = (await provider.send('eth_getTransactionReceipt', [hash])) as { status: string; blockNumber: string } | null;
  return r ? { status: Number(r.status), blockNumber: Number(r.blockNumber) } : null;
}

/** Mines one block; then waits out ethers' 250 ms reuse of identical calls, so "no receipt yet" answers are not replayed. */
async function mine(): Promise<void> {
  await provider.send('evm_mine', []);
  await new Promise((resolve) => setTimeout(resolve, 300));
}

describe('EIP-1559 fees and confirmation', () => {
  it('pays the configured priority-fee floor (Polygon: 25 gwei) when the node suggests less, under the cap', async () => {
    const wallet = wallets[0] as Wallet;
    const sender = senderFor(wallet, [], { priorityFeeGwei: 25, maxFeeGwei: 500 });
    const hash = randomHash();
    const sent = await sender.submit(encodeAnchorData(hash, randomHash()), { kind: 'anchor', ref: hash });
    const tx = Transaction.from((await slot(wallet, sent.nonce)).raw as string);
    assert.equal(tx.maxPriorityFeePerGas, parseUnits('25', 'gwei'));
    assert.ok((tx.maxFeePerGas ?? 0n) >= parseUnits('25', 'gwei') && (tx.maxFeePerGas ?? 0n) <= parseUnits('500', 'gwei'));
    await mine();
    assert.equal((await sender.waitForReceipt(sent.txHash, 5000))?.status, 'confirmed');
  });

  it('pays the node’s suggested priority fee when it is above the floor', async () => {
    const wallet = wallets[0] as Wallet;
    const suggested = BigInt((await provider.send('eth_maxPriorityFeePerGas', [])) as string);
    const sender = senderFor(wallet, [], { priorityFeeGwei: 0.000001, maxFeeGwei: 100 });
    const hash = randomHash();
    const sent = await sender.submit(encodeAnchorData(hash, randomHash()), { kind: 'anchor', ref: hash });
    assert.equal(Transaction.from((await slot(wallet, sent.nonce)).raw as string).maxPriorityFeePerGas, suggested);
    await mine();
  });
});

describe('confirmation by the finalized block tag', () => {
  it('counts a receipt only once its block is at or below the finalized block', async () => {
    const wallet = wallets[0] as Wallet;
    const network = Network.from(CHAIN_ID);
    let lag = 5;
    // Polygon finalizes blocks well behind the head; Hardhat finalizes at once, so the lag is added here.
    const lagging = new (class extends JsonRpcProvider {
      override async send(method: string, params: unknown[]): Promise<unknown> {
        if (method === 'eth_getBlockByNumber' && params[0] === 'finalized') {
          const head = Number(BigInt((await super.send('eth_blockNumber', [])) as string));
          return super.send(method, [`0x${Math.max(0, head - lag).toString(16)}`, params[1]]);
        }
        return super.send(method, params);
      }
    })(chain.url, network, { staticNetwork: network, pollingInterval: 50 });
    try {
      const sender = senderFor(wallet, [], { provider: lagging, confirmationTag: 'finalized' });
      const hash = randomHash();
      const sent = await sender.submit(encodeAnchorData(hash, randomHash()), { kind: 'anchor', ref: hash });
      await mine();
      assert.equal((await receiptOf(sent.txHash))?.status, 1, 'mined');
      assert.equal(await sender.waitForReceipt(sent.txHash, 300), null, 'not final yet');
      lag = 0;
      const receipt = await sender.waitForReceipt(sent.txHash, 5000);
      assert.equal(receipt?.status, 'confirmed');
      assert.equal(receipt?.txHash, sent.txHash);
    } finally {
      lagging.destroy();
    }
  });
});

describe('replacement of stuck transactions (automine off)', () => {
  it('re-signs a transaction stuck behind a base-fee spike at the same nonce with both fees ≥ 10 % higher; the replacement lands and the evidence follows it', async () => {
    offsetMs = 0;
    const wallet = wallets[1] as Wallet;
    const lines: LogLine[] = [];
    const sender = senderFor(wallet, lines);
    const imageHash = randomHash();
    const data = encodeAnchorData(imageHash, randomHash());
    const sent = await sender.submit(data, { kind: 'anchor', ref: imageHash });
    const publicKeyHex = await pendingAnchor(imageHash, sent);
    const original = Transaction.from((await slot(wallet, sent.nonce)).raw as string);

    // The base fee jumps above what the transaction offers: blocks are mined without it.
    await provider.send('hardhat_setNextBlockBaseFeePerGas', [`0x${((original.maxFeePerGas ?? 0n) * 3n).toString(16)}`]);
    await mine();
    assert.equal(await receiptOf(sent.txHash), null, 'stuck: its max fee is below the base fee');

    // Younger than the threshold: only re-sent.
    offsetMs = 4 * MINUTE;
    let report = await sender.rebroadcastPending({ receiptTimeoutMs: 0 });
    assert.equal(report.replaced, 0);
    assert.equal((await slot(wallet, sent.nonce)).tx_hash, sent.txHash);

    offsetMs = 6 * MINUTE;
    report = await sender.rebroadcastPending({ receiptTimeoutMs: 0 });
    assert.equal(report.replaced, 1);
    const replaced = await slot(wallet, sent.nonce);
    assert.notEqual(replaced.tx_hash, sent.txHash);
    assert.deepEqual(replaced.tx_hashes, [sent.txHash, replaced.tx_hash]);
    assert.equal(replaced.raws?.length, 2);
    const replacement = Transaction.from(replaced.raw as string);
    assert.equal(replacement.hash, replaced.tx_hash);
    assert.equal(replacement.nonce, original.nonce, 'same nonce');
    assert.equal(replacement.data, original.data, 'same anchor data');
    assert.ok((replacement.maxFeePerGas ?? 0n) * 100n >= (original.maxFeePerGas ?? 0n) * 110n, 'maxFeePerGas +10 % at least');
    assert.ok((replacement.maxPriorityFeePerGas ?? 0n) * 100n >= (original.maxPriorityFeePerGas ?? 0n) * 110n, 'maxPriorityFeePerGas +10 % at least');
    assert.ok((replacement.maxFeePerGas ?? 0n) <= parseUnits('100', 'gwei'), 'within the cap');
    assert.ok(lines.some((l) => l.fields.alert === 'ledger_tx_replaced' && l.fields.replacementTxHash === replaced.tx_hash));

    // The evidence record and its chain link already name the replacement, still pending.
    let item = await evidence(imageHash);
    assert.equal(item.tx_hash, replaced.tx_hash);
    assert.deepEqual(item.tx_hashes, [sent.txHash, replaced.tx_hash]);
    assert.equal(item.tx_status, 'pending');
    assert.equal(await linkTxHash(publicKeyHex), replaced.tx_hash);

    await mine();
    const landed = await receiptOf(replaced.tx_hash);
    assert.equal(landed?.status, 1, 'the replacement is mined');
    assert.equal(await receiptOf(sent.txHash), null, 'the original is not');

    const finished = await reconcileAnchors(reconcilerOver(sender));
    assert.equal(finished.confirmed, 1);
    item = await evidence(imageHash);
    assert.equal(item.tx_status, 'confirmed');
    assert.equal(item.tx_hash, replaced.tx_hash);
    assert.equal(item.block_number, landed?.blockNumber);
    const settled = await slot(wallet, sent.nonce);
    assert.equal(settled.status, 'confirmed');
    assert.equal(settled.tx_hash, replaced.tx_hash);
  });

  it('records the original when it lands although a replacement was persisted (the replacement never reached the node)', async () => {
    offsetMs = 0;
    const wallet = wallets[2] as Wallet;
    const sender = senderFor(wallet);
    const imageHash = randomHash();
    const sent = await sender.submit(encodeAnchorData(imageHash, randomHash()), { kind: 'anchor', ref: imageHash });
    const publicKeyHex = await pendingAnchor(imageHash, sent);
    const stored = await slot(wallet, sent.nonce);
    const original = Transaction.from(stored.raw as string);

    // Another process persisted a replacement and updated the record, then died before its broadcast.
    const lost = await wallet.signTransaction({
      type: 2,
      chainId: CHAIN_ID,
      nonce: sent.nonce,
      to: wallet.address,
      value: 0n,
      data: original.data,
      gasLimit: original.gasLimit,
      maxFeePerGas: ((original.maxFeePerGas ?? 0n) * 12n) / 10n,
      maxPriorityFeePerGas: ((original.maxPriorityFeePerGas ?? 0n) * 12n) / 10n,
    });
    const lostHash = Transaction.from(lost).hash as string;
    await store.db.send(
      new UpdateCommand({
        TableName: store.tables.ledger,
        Key: { pk: stored.pk, sk: stored.sk },
        UpdateExpression: 'SET tx_hash = :h, #raw = :r, tx_hashes = :hs, raws = :rs, replaced_at = :at',
        ExpressionAttributeNames: { '#raw': 'raw' },
        ExpressionAttributeValues: { ':h': lostHash, ':r': lost, ':hs': [sent.txHash, lostHash], ':rs': [stored.raw, lost], ':at': clock().toISOString() },
      }),
    );
    assert.equal(await repo.replaceTxHash(imageHash, sent.txHash, lostHash, [sent.txHash, lostHash]), true);
    assert.equal((await evidence(imageHash)).tx_hash, lostHash);

    await mine(); // the node only ever had the original
    assert.equal((await receiptOf(sent.txHash))?.status, 1);

    const finished = await reconcileAnchors(reconcilerOver(sender));
    assert.equal(finished.confirmed, 1);
    const item = await evidence(imageHash);
    assert.equal(item.tx_status, 'confirmed');
    assert.equal(item.tx_hash, sent.txHash, 'the record names the transaction that was mined');
    assert.deepEqual(item.tx_hashes, [sent.txHash, lostHash]);
    assert.equal(await linkTxHash(publicKeyHex), sent.txHash);
    const settled = await slot(wallet, sent.nonce);
    assert.equal(settled.status, 'confirmed');
    assert.equal(settled.tx_hash, sent.txHash);
    assert.equal(settled.raw, stored.raw, 'the slot keeps the raw bytes of the mined version (a local replay re-sends them)');
  });

  it('never signs a replacement above the fee cap and logs an alert instead', async () => {
    offsetMs = 0;
    const wallet = wallets[3] as Wallet;
    const lines: LogLine[] = [];
    await provider.send('hardhat_setNextBlockBaseFeePerGas', [`0x${(5n * 10n ** 8n).toString(16)}`]);
    await mine(); // a base fee under the cap below
    // Floor = cap: the first transaction already pays the cap, no bump fits under it.
    const sender = senderFor(wallet, lines, { priorityFeeGwei: 2, maxFeeGwei: 2 });
    const imageHash = randomHash();
    const sent = await sender.submit(encodeAnchorData(imageHash, randomHash()), { kind: 'anchor', ref: imageHash });
    const before = await slot(wallet, sent.nonce);

    offsetMs = 10 * MINUTE;
    const report = await sender.rebroadcastPending({ receiptTimeoutMs: 0 });
    assert.equal(report.replaced, 0);
    assert.equal(report.notReplaced, 1);
    const after = await slot(wallet, sent.nonce);
    assert.equal(after.tx_hash, sent.txHash);
    assert.equal(after.raw, before.raw);
    assert.equal(after.tx_hashes, undefined);
    const alert = lines.find((l) => l.fields.alert === 'ledger_fee_cap');
    assert.ok(alert, 'a fee-cap alert');
    assert.equal(alert.level, 'warn');
    assert.equal(alert.fields.txHash, sent.txHash);
    await mine();
    assert.equal((await receiptOf(sent.txHash))?.status, 1);
  });

  it('puts the original back when the node refuses the replacement', async () => {
    offsetMs = 0;
    const wallet = wallets[4] as Wallet;
    const lines: LogLine[] = [];
    const network = Network.from(CHAIN_ID);
    let originalHash = '';
    // A node that refuses every transaction but the original (e.g. "replacement transaction underpriced").
    const refusing = new (class extends JsonRpcProvider {
      override async send(method: string, params: unknown[]): Promise<unknown> {
        if (method === 'eth_sendRawTransaction' && originalHash !== '' && Transaction.from(params[0] as string).hash !== originalHash) {
          throw Object.assign(new Error('could not coalesce error'), { code: 'UNKNOWN_ERROR', info: { error: { code: -32000, message: 'replacement transaction underpriced' } } });
        }
        return super.send(method, params);
      }
    })(chain.url, network, { staticNetwork: network, pollingInterval: 50 });
    try {
      const sender = senderFor(wallet, lines, { provider: refusing });
      const imageHash = randomHash();
      const sent = await sender.submit(encodeAnchorData(imageHash, randomHash()), { kind: 'anchor', ref: imageHash });
      originalHash = sent.txHash;
      await pendingAnchor(imageHash, sent);

      offsetMs = 10 * MINUTE;
      const report = await sender.rebroadcastPending({ receiptTimeoutMs: 0 });
      assert.equal(report.replaced, 0);
      assert.equal(report.notReplaced, 1);
      assert.equal(report.alreadyKnown + report.resent, 1, 'the original was re-sent as usual');
      const after = await slot(wallet, sent.nonce);
      assert.equal(after.tx_hash, sent.txHash);
      assert.deepEqual(after.tx_hashes, [sent.txHash]);
      assert.equal((await evidence(imageHash)).tx_hash, sent.txHash, 'the record did not move');
      assert.ok(lines.some((l) => l.fields.alert === 'ledger_tx_replace_failed'));
      await mine();
      assert.equal((await sender.waitForReceipt(sent.txHash, 5000, sent.nonce))?.txHash, sent.txHash);
    } finally {
      refusing.destroy();
    }
  });

  it('logs one health line per rebroadcast run: balance, pending transactions and their age, clock drift against the chain', async () => {
    offsetMs = 0;
    const wallet = wallets[5] as Wallet;
    const lines: LogLine[] = [];
    const sender = senderFor(wallet, lines, { replaceAfterMs: 60 * MINUTE, lowBalanceWei: FUNDS * 2n });
    const imageHash = randomHash();
    await sender.submit(encodeAnchorData(imageHash, randomHash()), { kind: 'anchor', ref: imageHash });
    offsetMs = 3 * MINUTE;
    await sender.rebroadcastPending({ receiptTimeoutMs: 0 });
    const health = lines.find((l) => l.message === 'ledger: health');
    assert.ok(health);
    assert.equal(health.level, 'warn', 'warn while the balance is low');
    assert.equal(health.fields.lowBalance, 1);
    assert.equal(health.fields.pendingTxs, 1);
    assert.ok(Number(health.fields.oldestPendingSeconds) >= 179);
    assert.equal(typeof health.fields.balance, 'number');
    assert.ok(Math.abs(Number(health.fields.clockDriftSeconds) - 180) < 30, `drift ${String(health.fields.clockDriftSeconds)} s (the clock runs 3 min ahead)`);
    await mine();
    offsetMs = 0;
  });
});
