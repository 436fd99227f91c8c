import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { JsonRpcProvider, Wallet } from 'ethers';
import { encodeAnchorData } from '../../lib/ledger/anchor-data.js';
import { LedgerUnavailableError } from '../../lib/ledger/errors.js';
import type { RpcReader } from '../../lib/ledger/rpc-reader.js';
import type { LedgerSlot, SubmitResult } from '../../lib/ledger/sender.js';
import { makeSender, newWallet, randomHash, type Store, startLedgerFixture, type LedgerFixture } from './helpers.js';

/**
 * A DynamoDB outage between the nonce allocation and the slot write (decisions.md "Faults and
 * retries"): the submits caught in it fail, and once the store answers again the next submits of
 * the process reuse the nonces left behind at once, instead of waiting behind a gap until the
 * re-send job's grace period (120 s by default, unchanged here) lets it fill them.
 */

const wallets = Array.from({ length: 2 }, () => newWallet());
let store: Store;
let provider: JsonRpcProvider;
let reader: RpcReader;
let fixture: LedgerFixture;

before(async () => {
  fixture = await startLedgerFixture('store-outage', wallets);
  ({ store, provider, reader } = fixture);
});

after(async () => {
  await fixture?.stop();
});

/**
 * The ledger table's client with a switch: once `failAfterReservation` is armed, the next nonce
 * reservation (the counter's update) succeeds and every later call fails as if DynamoDB were
 * unreachable, until `restore()`. With `landFirst`, the first failing call (the slot write) reaches
 * the table before its answer is lost.
 */
function flakyDb(): { db: DynamoDBDocumentClient; armAfterReservation(options?: { landFirst?: boolean }): void; restore(): void; isDown(): boolean } {
  let armed: { landFirst: boolean } | null = null;
  let down: { landFirst: boolean } | null = null;
  const outage = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:4567'), { code: 'ECONNREFUSED' });
  const db = {
    async send(command: { input: { UpdateExpression?: string } }) {
      if (down) {
        if (down.landFirst) {
          down.landFirst = false;
          await store.db.send(command as never);
        }
        throw outage();
      }
      const result: unknown = await store.db.send(command as never);
      if (armed && command.input.UpdateExpression?.startsWith('SET next_nonce')) {
        down = armed;
        armed = null;
      }
      return result;
    },
  } as unknown as DynamoDBDocumentClient;
  return {
    db,
    armAfterReservation: (options = {}) => (armed = { landFirst: options.landFirst ?? false }),
    restore: () => (down = null),
    isDown: () => down !== null,
  };
}

const data = () => encodeAnchorData(randomHash(), randomHash());

async function slot(wallet: Wallet, nonce: number): Promise<LedgerSlot | undefined> {
  const r = await store.db.send(
    new GetCommand({ TableName: store.tables.ledger, Key: { pk: `tx#${wallet.address.toLowerCase()}`, sk: nonce }, ConsistentRead: true }),
  );
  return r.Item as LedgerSlot | undefined;
}

async function walletItem(wallet: Wallet): Promise<{ next_nonce: number; released: number[] }> {
  const r = await store.db.send(
    new GetCommand({ TableName: store.tables.ledger, Key: { pk: `wallet#${wallet.address.toLowerCase()}`, sk: 0 }, ConsistentRead: true }),
  );
  return { next_nonce: r.Item?.next_nonce as number, released: [...((r.Item?.released as Set<number> | undefined) ?? [])].sort((a, b) => a - b) };
}

const isStoreFailure = (e: unknown) => e instanceof LedgerUnavailableError && e.reason === 'store';

describe('a DynamoDB outage between nonce allocation and slot write', () => {
  it('leaves no gap: after the outage the next submits reuse the nonces at once and every transaction is mined', async () => {
    const wallet = wallets[0] as Wallet;
    const flaky = flakyDb();
    const sender = makeSender(store, provider, wallet, { db: flaky.db });
    const warm = await sender.submit(data(), { kind: 'anchor', ref: 'warm' });
    assert.equal((await sender.waitForReceipt(warm.txHash, 10_000))?.status, 'confirmed');

    // Submits caught by the outage: the first reservation (one or more nonces, as many as were
    // waiting) succeeds, then the slot writes and the releases fail.
    flaky.armAfterReservation();
    const caught = await Promise.allSettled([1, 2, 3].map((i) => sender.submit(data(), { kind: 'anchor', ref: `caught-${i}` })));
    assert.ok(flaky.isDown());
    for (const r of caught) assert.ok(r.status === 'rejected' && isStoreFailure(r.reason), String(r.status === 'rejected' ? r.reason : 'fulfilled'));
    const stuck = await walletItem(wallet);
    const lost = stuck.next_nonce - 1;
    assert.ok(lost >= 1, 'at least one nonce was allocated');
    assert.deepEqual(stuck.released, [], 'and nowhere given back');
    for (let n = 1; n <= lost; n++) assert.equal(await slot(wallet, n), undefined);
    // During the outage nothing more is allocated.
    await assert.rejects(sender.submit(data(), { kind: 'anchor', ref: 'during' }), isStoreFailure);
    assert.equal((await walletItem(wallet)).next_nonce, lost + 1);

    flaky.restore();
    const started = Date.now();
    const after: SubmitResult[] = await Promise.all(Array.from({ length: lost + 1 }, (_, i) => sender.submit(data(), { kind: 'anchor', ref: `after-${i}` })));
    const receipts = await Promise.all(after.map((r) => sender.waitForReceipt(r.txHash, 10_000)));
    const elapsed = Date.now() - started;

    assert.ok(receipts.every((r) => r?.status === 'confirmed'));
    const expected = Array.from({ length: lost + 1 }, (_, i) => i + 1);
    assert.deepEqual(after.map((r) => r.nonce).sort((a, b) => a - b), expected, 'the nonces left behind first, then the counter');
    assert.equal(after.filter((r) => r.reusedNonce).length, lost);
    assert.ok(elapsed < 10_000, `mined ${elapsed} ms after the outage, not after the re-send job's grace period`);
    const status = await sender.walletStatus();
    assert.equal(status.nonceLatest, lost + 2);
    assert.equal(status.nextNonce, lost + 2);
    assert.deepEqual(status.releasedNonces, []);
    assert.equal(status.pendingTxs, 0);
  });

  it('keeps a slot whose write landed but whose answer was lost: that transaction is the nonce\'s, sent before the next one', async () => {
    const wallet = wallets[1] as Wallet;
    const flaky = flakyDb();
    const sender = makeSender(store, provider, wallet, { db: flaky.db });
    const warm = await sender.submit(data(), { kind: 'anchor', ref: 'warm' });
    assert.equal((await sender.waitForReceipt(warm.txHash, 10_000))?.status, 'confirmed');

    flaky.armAfterReservation({ landFirst: true });
    await assert.rejects(sender.submit(data(), { kind: 'anchor', ref: 'landed' }), isStoreFailure);
    const stranded = await slot(wallet, 1);
    assert.equal(stranded?.status, 'signed', 'the slot write reached the table');
    assert.equal(await reader.getTransaction(stranded.tx_hash), null, 'but nothing was broadcast');

    flaky.restore();
    const next = await sender.submit(data(), { kind: 'anchor', ref: 'next' });
    assert.equal(next.nonce, 2, 'nonce 1 is never given to another transaction');
    assert.equal(next.reusedNonce, false);
    assert.equal((await sender.waitForReceipt(next.txHash, 10_000))?.status, 'confirmed');
    assert.equal((await sender.waitForReceipt(stranded.tx_hash, 10_000))?.status, 'confirmed', 'the stranded transaction went out first, with its own hash');
    assert.equal((await slot(wallet, 1))?.ref, 'landed');
    assert.deepEqual((await walletItem(wallet)).released, []);
  });
});
