/**
 * Writes the AWS SDK may send twice. With per-attempt deadlines (lib/store/dynamo.ts) a write
 * whose answer is late is sent again, and the first may have landed. The writes that add (the
 * quota hold, the nonce counter) must then not add twice: the quota would charge one anchor two
 * units, and the nonce counter would leave a gap that stops every later transaction of the wallet.
 * A client that sends each such write twice (the second after the first landed) stands for it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Wallet } from 'ethers';
import { CounterTable } from '../../lib/store/counter-table.js';
import { NonceAllocator } from '../../lib/ledger/nonces.js';
import { LedgerRecords } from '../../lib/ledger/records.js';
import type { LedgerNode } from '../../lib/ledger/node.js';
import { startStore, type Store } from '../ledger/helpers.js';

let store: Store;
before(async () => {
  store = await startStore();
});
after(async () => {
  await store?.stop();
});

/** A client that sends every update matching `resend` twice and answers with the second attempt's outcome. */
function resendingDb(resend: (expression: string) => boolean): DynamoDBDocumentClient {
  return {
    async send(command: { input: { UpdateExpression?: string } }) {
      if (command.input.UpdateExpression && resend(command.input.UpdateExpression)) {
        await store.db.send(command as never); // landed; its answer lost
      }
      return store.db.send(command as never);
    },
  } as unknown as DynamoDBDocumentClient;
}

describe('writes the SDK sends twice', () => {
  it('a quota hold is added once: the resent reservation finds its own hold and answers as the first', async () => {
    const counters = new CounterTable(resendingDb((e) => e.startsWith('ADD #count')), store.tables.counters);
    const pk = `quota#acc_${randomBytes(4).toString('hex')}#2026-11`;
    assert.equal(await counters.increment(pk, 5, 2_000_000_000, 'a:1:h1'), 1);
    assert.equal(await counters.increment(pk, 5, 2_000_000_000, 'a:1:h2'), 2);
    const item = (await store.db.send(new GetCommand({ TableName: store.tables.counters, Key: { pk }, ConsistentRead: true }))).Item;
    assert.equal(item?.count, 2, 'two holds, two units');
    assert.deepEqual([...(item?.inflight as Set<string>)].sort(), ['a:1:h1', 'a:1:h2']);
  });

  it('a quota reservation at the limit is still refused when resent', async () => {
    const counters = new CounterTable(resendingDb((e) => e.startsWith('ADD #count')), store.tables.counters);
    const pk = `quota#acc_${randomBytes(4).toString('hex')}#2026-11`;
    assert.equal(await counters.increment(pk, 1, 2_000_000_000, 'a:1:only'), 1);
    assert.equal(await counters.increment(pk, 1, 2_000_000_000, 'a:1:over'), undefined);
  });

  it('a nonce allocation moves the counter once: the resent allocation finds its own token and returns its nonces', async () => {
    const address = new Wallet(Wallet.createRandom().privateKey).address.toLowerCase();
    const db = resendingDb((e) => e.startsWith('SET next_nonce'));
    const records = new LedgerRecords(db, store.tables.ledger, 31337, () => new Date());
    const node = { rpc: async () => 0, nonceAt: async () => 0 } as unknown as LedgerNode;
    const nonces = new NonceAllocator(records, node, () => new Date(), () => undefined);
    await nonces.initWallet(address);
    assert.deepEqual(await nonces.allocateNonces(address, 3), { first: 0, count: 3, reused: false });
    assert.deepEqual(await nonces.allocateNonces(address, 2), { first: 3, count: 2, reused: false });
    const wallet = await records.getWallet(address);
    assert.equal(wallet?.next_nonce, 5, 'no nonce skipped');
  });

  it('a nonce allocation that landed but whose answer never came gives its nonces back before the next allocation', async () => {
    const address = new Wallet(Wallet.createRandom().privateKey).address.toLowerCase();
    let dropAnswer = false;
    // The store applies the allocation, then the answer is lost (a frozen database that woke after the deadline).
    const db = {
      async send(command: { input: { UpdateExpression?: string } }) {
        const answer = await store.db.send(command as never);
        if (dropAnswer && command.input.UpdateExpression?.startsWith('SET next_nonce')) {
          dropAnswer = false;
          throw Object.assign(new Error('deadline passed'), { name: 'TimeoutError' });
        }
        return answer;
      },
    } as unknown as DynamoDBDocumentClient;
    const records = new LedgerRecords(db, store.tables.ledger, 31337, () => new Date());
    const node = { rpc: async () => 0, nonceAt: async () => 0 } as unknown as LedgerNode;
    const nonces = new NonceAllocator(records, node, () => new Date(), () => undefined);
    await nonces.initWallet(address);
    assert.equal((await nonces.takeNonce(address)).nonce, 0);
    dropAnswer = true;
    await assert.rejects(nonces.takeNonce(address), /could not be read or written/);
    assert.equal((await records.getWallet(address))?.next_nonce, 2, 'the unanswered allocation took nonce 1');
    // The next submit gets nonce 1 back, not 2: no gap for later transactions to wait behind.
    assert.equal((await nonces.takeNonce(address)).nonce, 1);
    assert.equal((await nonces.takeNonce(address)).nonce, 2);
  });
});
