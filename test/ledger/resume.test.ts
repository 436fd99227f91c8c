import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { JsonRpcProvider, Network, Transaction, type Wallet } from 'ethers';
import { encodeAnchorData } from '../../lib/ledger/anchor-data.js';
import { LedgerUnavailableError } from '../../lib/ledger/errors.js';
import type { RpcReader } from '../../lib/ledger/rpc-reader.js';
import { createLedgerProvider, gasLimitFor, type LedgerSlot, type SignedLedgerTx } from '../../lib/ledger/sender.js';
import type { LocalChain } from '../../lib/local/chain.js';
import { CHAIN_ID, freePort, makeSender, newWallet, randomHash, type Store, startLedgerFixture, type LedgerFixture } from './helpers.js';

/**
 * submit's `beforePersist` and resume(): a transaction signed before a crash is finished (or
 * declared dead when it can never be mined), never replaced by a second one while it may land.
 * Each test uses its own wallet, so that the states built by hand do not disturb each other.
 */

const wallets = Array.from({ length: 12 }, () => newWallet());
let store: Store;
let chain: LocalChain;
let provider: JsonRpcProvider;
let reader: RpcReader;
let fixture: LedgerFixture;

before(async () => {
  fixture = await startLedgerFixture('resume', wallets);
  ({ store, chain, provider, reader } = fixture);
});

after(async () => {
  await fixture?.stop();
});

const data = () => encodeAnchorData(randomHash(), randomHash());
const lower = (w: Wallet) => w.address.toLowerCase();

async function slot(wallet: Wallet, nonce: number): Promise<LedgerSlot | undefined> {
  const r = await store.db.send(new GetCommand({ TableName: store.tables.ledger, Key: { pk: `tx#${lower(wallet)}`, sk: nonce }, ConsistentRead: true }));
  return r.Item as LedgerSlot | undefined;
}

async function releasedSet(wallet: Wallet): Promise<number[]> {
  const r = await store.db.send(new GetCommand({ TableName: store.tables.ledger, Key: { pk: `wallet#${lower(wallet)}`, sk: 0 }, ConsistentRead: true }));
  return [...((r.Item?.released as Set<number> | undefined) ?? [])].sort((a, b) => a - b);
}

/** Takes the next nonce from the wallet's counter, as an allocation does (the counter must exist). */
async function reserveNonce(wallet: Wallet): Promise<number> {
  const r = await store.db.send(
    new UpdateCommand({
      TableName: store.tables.ledger,
      Key: { pk: `wallet#${lower(wallet)}`, sk: 0 },
      UpdateExpression: 'ADD next_nonce :one',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':one': 1 },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(r.Attributes?.next_nonce) - 1;
}

/** A transaction of the wallet signed as the sender signs them (self, 0 value, EIP-1559). */
async function signAt(wallet: Wallet, nonce: number, tipGwei = 1n, payload = data()): Promise<{ nonce: number; txHash: string; raw: string }> {
  const raw = await wallet.signTransaction({
    type: 2,
    chainId: BigInt(CHAIN_ID),
    nonce,
    to: wallet.address,
    value: 0n,
    data: payload,
    gasLimit: gasLimitFor(payload),
    maxFeePerGas: 100n * 10n ** 9n,
    maxPriorityFeePerGas: tipGwei * 10n ** 9n,
  });
  return { nonce, raw, txHash: (Transaction.from(raw).hash as string).toLowerCase() };
}

/** A sender that has initialised the wallet's counter (its first transaction is mined). */
async function warmSender(wallet: Wallet) {
  const sender = makeSender(store, provider, wallet);
  const warm = await sender.submit(data(), { kind: 'anchor', ref: 'warm' });
  assert.equal((await sender.waitForReceipt(warm.txHash, 10_000))?.status, 'confirmed');
  return sender;
}

describe('submit with beforePersist', () => {
  it('announces the signed transaction before its slot exists, and sends exactly that transaction', async () => {
    const wallet = wallets[0] as Wallet;
    const sender = makeSender(store, provider, wallet);
    const announced: { signed: SignedLedgerTx; slotThen: LedgerSlot | undefined }[] = [];
    const result = await sender.submit(data(), { kind: 'anchor', ref: 'announced' }, {
      beforePersist: async (signed) => {
        announced.push({ signed: { ...signed }, slotThen: await slot(wallet, signed.nonce) });
      },
    });
    assert.equal(announced.length, 1);
    const first = announced[0];
    assert.ok(first);
    assert.equal(first.slotThen, undefined, 'called before the slot was written');
    assert.deepEqual(first.signed, { nonce: result.nonce, txHash: result.txHash, raw: (await slot(wallet, result.nonce))?.raw, from: lower(wallet) });
    assert.equal(Transaction.from(first.signed.raw).hash, result.txHash);
    assert.equal((await sender.waitForReceipt(result.txHash, 10_000))?.status, 'confirmed');
  });

  it('gives the nonce back and rethrows the same error when the owner refuses the transaction in beforePersist; resume of it is dead', async () => {
    const wallet = wallets[1] as Wallet;
    const sender = await warmSender(wallet);
    let copied: SignedLedgerTx | undefined;
    // The owner's conditional write lost (its claim moved on): it never stores this transaction.
    const refusal = Object.assign(new Error('the claim moved on'), { ownerRefused: true });
    const thrown = await sender
      .submit(data(), { kind: 'anchor', ref: 'crashed' }, {
        beforePersist: async (signed) => {
          copied = { ...signed };
          throw refusal;
        },
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.equal(thrown, refusal, 'the very error, not wrapped');
    assert.ok(copied);
    assert.equal(await slot(wallet, copied.nonce), undefined, 'nothing persisted');
    assert.deepEqual(await releasedSet(wallet), [copied.nonce], 'the nonce was given back');
    assert.equal(await reader.getTransaction(copied.txHash), null, 'nothing broadcast');

    const resumed = await sender.resume({ ...copied, kind: 'anchor', ref: 'crashed' });
    assert.deepEqual(resumed, { outcome: 'dead' });
    assert.equal((await slot(wallet, copied.nonce))?.status, 'released', 'the answer is recorded: the slot never takes that transaction');
    assert.equal((await slot(wallet, copied.nonce))?.raw, undefined);
    assert.equal(await reader.getTransaction(copied.txHash), null);

    // The next submit reuses the nonce; the old transaction stays dead.
    const next = await sender.submit(data(), { kind: 'anchor', ref: 'next' });
    assert.equal(next.nonce, copied.nonce);
    assert.equal(next.reusedNonce, true);
    assert.equal((await sender.waitForReceipt(next.txHash, 10_000))?.status, 'confirmed');
    assert.deepEqual(await sender.resume({ ...copied, kind: 'anchor', ref: 'crashed' }), { outcome: 'dead' });
    assert.equal(await reader.getTransaction(copied.txHash), null);
  });

  it('never gives the nonce to another transaction when beforePersist fails with an unknown outcome (the owner may hold it): a filler takes the slot, goes out first, and the owner\'s transaction is dead', async () => {
    const wallet = wallets[1] as Wallet;
    const sender = await warmSender(wallet);
    let copied: SignedLedgerTx | undefined;
    const timeout = new Error('the evidence store did not answer in time'); // its write may have landed
    const thrown = await sender
      .submit(data(), { kind: 'anchor', ref: 'unknown' }, {
        beforePersist: async (signed) => {
          copied = { ...signed };
          throw timeout;
        },
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.equal(thrown, timeout);
    assert.ok(copied);
    const filler = await slot(wallet, copied.nonce);
    assert.equal(filler?.kind, 'filler', 'a filler holds the nonce');
    assert.notEqual(filler?.tx_hash, copied.txHash);
    assert.deepEqual(await releasedSet(wallet), [], 'the nonce was not given back');
    // The owner resumes its transaction: the slot holds another one, so it is dead (and can never be mined).
    assert.deepEqual(await sender.resume({ ...copied, kind: 'anchor', ref: 'unknown' }), { outcome: 'dead' });
    // The next submit takes the next nonce; the filler goes out before it.
    const next = await sender.submit(data(), { kind: 'anchor', ref: 'after-filler' });
    assert.equal(next.nonce, copied.nonce + 1);
    assert.equal((await sender.waitForReceipt(next.txHash, 10_000))?.status, 'confirmed');
    assert.equal((await sender.waitForReceipt(filler?.tx_hash as string, 10_000))?.status, 'confirmed');
    assert.equal(await reader.getTransaction(copied.txHash), null, 'the owner\'s transaction never went out');
  });
});

describe('resume', () => {
  it('finishes a transaction whose process died between beforePersist and the slot write: writes the slot, broadcasts it, and it is mined', async () => {
    const wallet = wallets[2] as Wallet;
    await warmSender(wallet);
    // The dying process: it signs, hands the transaction to beforePersist, and never comes back.
    const dyingProvider = createLedgerProvider({ rpcUrl: chain.url, chainId: CHAIN_ID, pollingIntervalMs: 50 });
    fixture.track(dyingProvider);
    const dying = makeSender(store, dyingProvider, wallet);
    let announce!: (signed: SignedLedgerTx) => void;
    const announced = new Promise<SignedLedgerTx>((resolve) => (announce = resolve));
    void dying.submit(data(), { kind: 'anchor', ref: 'died' }, {
      beforePersist: (signed) => {
        announce({ ...signed });
        return new Promise<void>(() => undefined);
      },
    });
    const signed = await announced;
    assert.equal(await slot(wallet, signed.nonce), undefined);
    assert.deepEqual(await releasedSet(wallet), []);

    const other = makeSender(store, provider, wallet);
    const resumed = await other.resume({ ...signed, kind: 'anchor', ref: 'died' });
    assert.deepEqual(resumed, { outcome: 'sent', txHash: signed.txHash });
    const item = await slot(wallet, signed.nonce);
    assert.equal(item?.tx_hash, signed.txHash);
    assert.equal(item?.raw, signed.raw);
    assert.equal(item?.ref, 'died');
    assert.equal((await other.waitForReceipt(signed.txHash, 10_000))?.status, 'confirmed');

    const again = await other.resume({ ...signed, kind: 'anchor', ref: 'died' });
    assert.equal(again.outcome, 'mined');
    assert.equal(again.outcome === 'mined' && again.receipt.txHash, signed.txHash);
  });

  it('writes and broadcasts a missing slot whose nonce is still free (state built by hand), then reports it mined', async () => {
    const wallet = wallets[3] as Wallet;
    const sender = await warmSender(wallet);
    const signed = await signAt(wallet, await reserveNonce(wallet));

    const resumed = await sender.resume({ ...signed, kind: 'pq-key', ref: 'by-hand' });
    assert.deepEqual(resumed, { outcome: 'sent', txHash: signed.txHash });
    const item = await slot(wallet, signed.nonce);
    assert.equal(item?.status, 'sent');
    assert.equal(item?.kind, 'pq-key');
    const receipt = await sender.waitForReceipt(signed.txHash, 10_000);
    assert.equal(receipt?.status, 'confirmed');
    const mined = await sender.resume({ ...signed, kind: 'pq-key', ref: 'by-hand' });
    assert.deepEqual(mined, { outcome: 'mined', receipt });
    assert.equal((await slot(wallet, signed.nonce))?.status, 'confirmed');
  });

  it('reports a mined transaction with its receipt and records it on the slot', async () => {
    const wallet = wallets[4] as Wallet;
    const sender = makeSender(store, provider, wallet);
    let signed: SignedLedgerTx | undefined;
    const sent = await sender.submit(data(), { kind: 'anchor', ref: 'mined' }, { beforePersist: async (s) => void (signed = { ...s }) });
    assert.ok(signed);
    // Wait for the block without touching the slot (no waitForReceipt: resume records it).
    for (let i = 0; i < 200 && (await reader.getTransactionCount(lower(wallet))) <= sent.nonce; i++) await new Promise((r) => setTimeout(r, 25));
    const resumed = await sender.resume({ ...signed, kind: 'anchor', ref: 'mined' });
    assert.equal(resumed.outcome, 'mined');
    assert.ok(resumed.outcome === 'mined');
    assert.equal(resumed.receipt.status, 'confirmed');
    assert.equal(resumed.receipt.txHash, sent.txHash);
    const item = await slot(wallet, sent.nonce);
    assert.equal(item?.status, 'confirmed');
    assert.equal(item?.block_number, resumed.receipt.blockNumber);
  });

  it('re-sends a live slot whose broadcast never reached the node', async () => {
    const wallet = wallets[5] as Wallet;
    class LosesFirstBroadcast extends JsonRpcProvider {
      private lost = false;
      override async send(method: string, params: unknown[] | Record<string, unknown>): Promise<unknown> {
        if (method === 'eth_sendRawTransaction' && !this.lost) {
          this.lost = true;
          throw Object.assign(new Error('request timeout'), { code: 'TIMEOUT' });
        }
        return super.send(method, params);
      }
    }
    const network = Network.from(CHAIN_ID);
    const lossy = new LosesFirstBroadcast(chain.url, network, { staticNetwork: network, pollingInterval: 50 });
    fixture.track(lossy);
    let signed: SignedLedgerTx | undefined;
    const first = await makeSender(store, lossy, wallet).submit(data(), { kind: 'anchor', ref: 'lost' }, { beforePersist: async (s) => void (signed = { ...s }) });
    assert.equal(first.broadcast, 'ambiguous');
    assert.ok(signed);
    assert.equal(await reader.getTransaction(first.txHash), null);
    assert.equal((await slot(wallet, first.nonce))?.status, 'signed');

    const sender = makeSender(store, provider, wallet);
    assert.deepEqual(await sender.resume({ ...signed, kind: 'anchor', ref: 'lost' }), { outcome: 'sent', txHash: first.txHash });
    assert.equal((await sender.waitForReceipt(first.txHash, 10_000))?.status, 'confirmed');
  });

  it('re-sends the version a replaced slot names now when resumed with an earlier version', async () => {
    const wallet = wallets[6] as Wallet;
    const sender = await warmSender(wallet);
    const nonce = await reserveNonce(wallet);
    const payload = data();
    const v1 = await signAt(wallet, nonce, 1n, payload);
    const v2 = await signAt(wallet, nonce, 2n, payload);
    const now = new Date().toISOString();
    const item: LedgerSlot = {
      pk: `tx#${lower(wallet)}`,
      sk: nonce,
      nonce,
      tx_hash: v2.txHash,
      raw: v2.raw,
      tx_hashes: [v1.txHash, v2.txHash],
      raws: [v1.raw, v2.raw],
      kind: 'anchor',
      ref: 'replaced',
      status: 'sent',
      chain_id: CHAIN_ID,
      created_at: now,
      updated_at: now,
      sent_at: now,
      replaced_at: now,
    };
    await store.db.send(new PutCommand({ TableName: store.tables.ledger, Item: item }));

    assert.deepEqual(await sender.resume({ ...v1, kind: 'anchor', ref: 'replaced' }), { outcome: 'sent', txHash: v2.txHash });
    assert.equal(await reader.getTransaction(v1.txHash), null, 'the old version was not broadcast');
    const receipt = await sender.waitForReceipt(v1.txHash, 10_000, nonce);
    assert.equal(receipt?.txHash, v2.txHash);
    const mined = await sender.resume({ ...v1, kind: 'anchor', ref: 'replaced' });
    assert.equal(mined.outcome === 'mined' && mined.receipt.txHash, v2.txHash, 'any version mined counts');
  });

  it('is dead when the slot holds another transaction, is in conflict, or the chain passed the nonce', async () => {
    const wallet = wallets[7] as Wallet;
    const sender = await warmSender(wallet);
    // The slot holds another transaction (signed at the same nonce, e.g. before a crash of ours).
    const other = await sender.submit(data(), { kind: 'anchor', ref: 'holder' });
    const loser = await signAt(wallet, other.nonce);
    assert.deepEqual(await sender.resume({ ...loser, kind: 'anchor', ref: 'loser' }), { outcome: 'dead' });
    assert.equal((await sender.waitForReceipt(other.txHash, 10_000))?.status, 'confirmed');

    // A transaction this service did not sign took the nonce while our slot was missing.
    const nonce = await reserveNonce(wallet);
    const ours = await signAt(wallet, nonce);
    const foreign = await signAt(wallet, nonce);
    await provider.send('eth_sendRawTransaction', [foreign.raw]);
    for (let i = 0; i < 200 && (await reader.getTransactionCount(lower(wallet))) <= nonce; i++) await new Promise((r) => setTimeout(r, 25));
    assert.deepEqual(await sender.resume({ ...ours, kind: 'anchor', ref: 'passed' }), { outcome: 'dead' });
    assert.equal(await slot(wallet, nonce), undefined, 'nothing written for a nonce the chain passed');
  });

  it('marks the slot conflict and is dead when its broadcast finds the nonce used by a foreign transaction', async () => {
    const wallet = wallets[8] as Wallet;
    await warmSender(wallet);
    const nonce = await reserveNonce(wallet);
    const ours = await signAt(wallet, nonce);
    const foreign = await signAt(wallet, nonce);
    class ForeignFirst extends JsonRpcProvider {
      override async send(method: string, params: unknown[] | Record<string, unknown>): Promise<unknown> {
        if (method === 'eth_sendRawTransaction' && (params as string[])[0] === ours.raw) {
          // Between resume's reads and its broadcast, the foreign transaction is mined at the nonce.
          await super.send(method, [foreign.raw]);
        }
        return super.send(method, params);
      }
    }
    const network = Network.from(CHAIN_ID);
    const racing = new ForeignFirst(chain.url, network, { staticNetwork: network, pollingInterval: 50 });
    fixture.track(racing);
    const sender = makeSender(store, racing, wallet);
    assert.deepEqual(await sender.resume({ ...ours, kind: 'anchor', ref: 'raced' }), { outcome: 'dead' });
    assert.equal((await slot(wallet, nonce))?.status, 'conflict');
    assert.equal(await reader.getTransaction(ours.txHash), null);
    assert.deepEqual(await sender.resume({ ...ours, kind: 'anchor', ref: 'raced' }), { outcome: 'dead' }, 'and stays dead');
  });

  it('throws LedgerUnavailableError, never dead, while the node or DynamoDB is down', async () => {
    const wallet = wallets[2] as Wallet;
    const signed = await signAt(wallet, 10_000);
    const resumable = { ...signed, kind: 'anchor' as const, ref: 'outage' };
    const failingDb = { send: () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })) } as unknown as DynamoDBDocumentClient;
    await assert.rejects(
      makeSender(store, provider, wallet, { db: failingDb }).resume(resumable),
      (e: unknown) => e instanceof LedgerUnavailableError && e.reason === 'store',
    );
    const deadPort = await freePort();
    const down = createLedgerProvider({ rpcUrl: `http://127.0.0.1:${deadPort}`, chainId: CHAIN_ID, pollingIntervalMs: 50 });
    fixture.track(down);
    await assert.rejects(
      makeSender(store, down, wallet).resume(resumable),
      (e: unknown) => e instanceof LedgerUnavailableError && e.reason === 'unreachable',
    );
    assert.equal(await slot(wallet, signed.nonce), undefined);
  });
});

describe('resume of a transaction another wallet signed (a wallet rotated away, lib/local/wallet-rotation.ts)', () => {
  it('is decided on that wallet\'s slot: found mined with its receipt, or its persisted raw bytes re-sent; nothing is signed and the sender\'s own slots are untouched', async () => {
    const [oldWallet, newWallet_] = [wallets[9] as Wallet, wallets[10] as Wallet];
    const oldSender = await warmSender(oldWallet);
    const newSender = await warmSender(newWallet_);
    const ownBefore = await slot(newWallet_, 1);

    // Mined: its owner stored it and died before recording the receipt.
    let signed: SignedLedgerTx | undefined;
    const sent = await oldSender.submit(data(), { kind: 'anchor', ref: 'old-mined' }, { beforePersist: async (s) => void (signed = { ...s }) });
    assert.ok(signed);
    for (let i = 0; i < 200 && (await reader.getTransactionCount(lower(oldWallet))) <= sent.nonce; i++) await new Promise((r) => setTimeout(r, 25));
    const mined = await newSender.resume({ ...signed, kind: 'anchor', ref: 'old-mined' });
    assert.ok(mined.outcome === 'mined', mined.outcome);
    assert.equal(mined.receipt.txHash, sent.txHash);
    assert.equal((await slot(oldWallet, sent.nonce))?.status, 'confirmed');

    // Signed and stored by its owner, never persisted in a slot nor broadcast: written into the old wallet's slot and sent.
    const nonce = await reserveNonce(oldWallet);
    const orphan = await signAt(oldWallet, nonce);
    const resumed = await newSender.resume({ ...orphan, kind: 'anchor', ref: 'old-orphan' });
    assert.deepEqual(resumed, { outcome: 'sent', txHash: orphan.txHash });
    assert.equal((await slot(oldWallet, nonce))?.tx_hash, orphan.txHash);
    const receipt = await newSender.waitForReceipt(orphan.txHash, 10_000);
    assert.equal(receipt?.status, 'confirmed');
    assert.equal((await provider.getTransaction(orphan.txHash))?.from.toLowerCase(), lower(oldWallet));
    // The new wallet signed nothing for it: its nonce did not move, its slot at that number is as it was.
    assert.equal(await reader.getTransactionCount(lower(newWallet_)), 1);
    assert.deepEqual(await slot(newWallet_, 1), ownBefore);
  });
});

describe('a value transfer (kind wallet-funding: the local wallet rotation\'s funding)', () => {
  it('is sent to the recipient with its value, persisted in the sender\'s slot like every transaction; other kinds cannot carry one', async () => {
    const [from, to] = [wallets[11] as Wallet, newWallet()];
    const sender = makeSender(store, provider, from);
    await assert.rejects(sender.submit('0x', { kind: 'anchor', ref: 'x' }, { transfer: { to: to.address, valueWei: 1n } }), TypeError);
    await assert.rejects(sender.submit('0x', { kind: 'wallet-funding', ref: 'x' }), TypeError);
    await assert.rejects(sender.submit('0x', { kind: 'wallet-funding', ref: 'x' }, { transfer: { to: to.address, valueWei: 0n } }), TypeError);
    const sent = await sender.submit('0x', { kind: 'wallet-funding', ref: lower(to) }, { transfer: { to: to.address, valueWei: 12345n * 10n ** 12n } });
    assert.equal((await sender.waitForReceipt(sent.txHash, 10_000))?.status, 'confirmed');
    const tx = await provider.getTransaction(sent.txHash);
    assert.equal(tx?.to?.toLowerCase(), lower(to));
    assert.equal(tx?.value, 12345n * 10n ** 12n);
    assert.equal(await provider.getBalance(to.address), 12345n * 10n ** 12n);
    const persisted = await slot(from, sent.nonce);
    assert.equal(persisted?.kind, 'wallet-funding');
    assert.equal(persisted?.ref, lower(to));
  });
});

