import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { JsonRpcProvider, Network } from 'ethers';
import { decodeLedgerData, encodeAnchorData, encodePqKeyData } from '../../lib/ledger/anchor-data.js';
import { RpcReader } from '../../lib/ledger/rpc-reader.js';
import { createLedgerProvider, type LedgerSlot } from '../../lib/ledger/sender.js';
import { startLocalChain, type LocalChain } from '../../lib/local/chain.js';
import { CHAIN_ID, FUNDS, freePort, makeSender, newWallet, randomHash, startStore, tempLog, type Store } from './helpers.js';

const wallet = newWallet();
const address = wallet.address.toLowerCase();
let store: Store;
let chain: LocalChain;
let port: number;
let provider: JsonRpcProvider;
let reader: RpcReader;
const providers: JsonRpcProvider[] = [];

const chainOptions = () => ({
  port,
  blockTimeMs: 0,
  chainId: CHAIN_ID,
  accounts: [{ privateKey: wallet.privateKey, balanceWei: FUNDS }],
  logFile: tempLog('replay'),
});

before(async () => {
  store = await startStore();
  port = await freePort();
  chain = await startLocalChain(chainOptions());
  provider = createLedgerProvider({ rpcUrl: chain.url, chainId: CHAIN_ID, pollingIntervalMs: 50 });
  providers.push(provider);
  reader = new RpcReader(chain.url);
});

after(async () => {
  for (const p of providers) p.destroy();
  await chain?.stop();
  await store?.stop();
});

describe('replay into a fresh local node', () => {
  it('finds every transaction hash on the new chain with the same input data', async () => {
    const sender = makeSender(store, provider, wallet);
    const sent: { txHash: string; data: string }[] = [];
    for (let i = 0; i < 12; i++) {
      const data = i === 5 ? encodePqKeyData(randomHash()) : encodeAnchorData(randomHash(), randomHash());
      const r = await sender.submit(data, { kind: i === 5 ? 'pq-key' : 'anchor', ref: `r${i}` });
      sent.push({ txHash: r.txHash, data });
    }
    for (const s of sent) assert.equal((await sender.waitForReceipt(s.txHash, 10_000))?.status, 'confirmed');

    await chain.stop();
    chain = await startLocalChain(chainOptions());
    assert.equal(await reader.getTransaction(sent[0]?.txHash ?? ''), null, 'the fresh node knows nothing');

    const report = await sender.replay();
    assert.equal(report.fromNonce, 0);
    assert.equal(report.resent, sent.length);
    assert.equal(report.confirmed, sent.length);
    assert.equal(report.rejected + report.failed + report.pending + report.filled, 0);
    for (const s of sent) {
      const tx = await reader.getTransaction(s.txHash);
      assert.ok(tx, `${s.txHash} exists on the new chain`);
      assert.notEqual(tx.blockNumber, null);
      assert.equal(tx.input, s.data);
      decodeLedgerData(tx.input);
    }
    // Replaying again finds nothing left to send; the counter follows the chain.
    const again = await sender.replay();
    assert.equal(again.fromNonce, sent.length);
    assert.equal(again.resent + again.slots, 0);
    assert.equal(again.nextNonce, sent.length);
  });

  it('fills the gap of an allocator that died before persisting, and re-sends an ambiguous broadcast', async () => {
    const sender = makeSender(store, provider, wallet);
    const status = await sender.walletStatus();
    const lost = status.nextNonce ?? 0;
    // A Lambda took a nonce from the counter and died before writing its slot.
    await store.db.send(
      new UpdateCommand({ TableName: store.tables.ledger, Key: { pk: `wallet#${address}`, sk: 0 }, UpdateExpression: 'ADD next_nonce :one', ExpressionAttributeValues: { ':one': 1 } }),
    );
    // Another one signed and persisted the next nonce, then timed out while broadcasting.
    class TimingOut extends JsonRpcProvider {
      override async send(method: string, params: unknown[] | Record<string, unknown>): Promise<unknown> {
        if (method === 'eth_sendRawTransaction') throw Object.assign(new Error('request timeout'), { code: 'TIMEOUT' });
        return super.send(method, params);
      }
    }
    const network = Network.from(CHAIN_ID);
    const timingOut = new TimingOut(chain.url, network, { staticNetwork: network, pollingInterval: 50 });
    providers.push(timingOut);
    const data = encodeAnchorData(randomHash(), randomHash());
    const ambiguous = await makeSender(store, timingOut, wallet).submit(data, { kind: 'anchor', ref: 'ambiguous' });
    assert.equal(ambiguous.broadcast, 'ambiguous');
    assert.equal(ambiguous.nonce, lost + 1);
    assert.equal(await reader.getTransaction(ambiguous.txHash), null, 'never reached the node');

    await chain.stop();
    chain = await startLocalChain(chainOptions());
    const report = await sender.replay();
    assert.equal(report.filled, 1);
    assert.equal(report.resent, lost + 2, 'all earlier transactions, the filler and the ambiguous one');
    assert.equal(report.confirmed, lost + 2);
    assert.equal(report.rejected + report.pending, 0);

    const tx = await reader.getTransaction(ambiguous.txHash);
    assert.equal(tx?.input, data);
    assert.notEqual(tx?.blockNumber, null);
    const filler = (await store.db.send(new GetCommand({ TableName: store.tables.ledger, Key: { pk: `tx#${address}`, sk: lost }, ConsistentRead: true })))
      .Item as LedgerSlot | undefined;
    assert.equal(filler?.kind, 'filler');
    assert.equal(filler?.status, 'confirmed');
    assert.equal(await reader.getTransactionCount(address), lost + 2);
    assert.equal((await sender.walletStatus()).nextNonce, lost + 2);
  });
});
