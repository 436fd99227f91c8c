import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JsonRpcProvider } from 'ethers';
import { encodeAnchorData } from '../../lib/ledger/anchor-data.js';
import { RpcReader } from '../../lib/ledger/rpc-reader.js';
import { createLedgerProvider } from '../../lib/ledger/sender.js';
import { startLocalChain, type LocalChain } from '../../lib/local/chain.js';
import { CHAIN_ID, FUNDS, freePort, makeSender, newWallet, randomHash, startStore, tempLog, type Store } from './helpers.js';

const wallet = newWallet();
let store: Store;
let chain: LocalChain;
let provider: JsonRpcProvider;
let reader: RpcReader;

before(async () => {
  store = await startStore();
  chain = await startLocalChain({
    port: await freePort(),
    blockTimeMs: 1000,
    chainId: CHAIN_ID,
    accounts: [{ privateKey: wallet.privateKey, balanceWei: FUNDS }],
    logFile: tempLog('interval'),
  });
  provider = createLedgerProvider({ rpcUrl: chain.url, chainId: CHAIN_ID, pollingIntervalMs: 100 });
  reader = new RpcReader(chain.url);
});

after(async () => {
  provider?.destroy();
  await chain?.stop();
  await store?.stop();
});

describe('interval mining (1 s blocks)', () => {
  it('delivers receipts, and block timestamps keep to the wall clock', async () => {
    const sender = makeSender(store, provider, wallet);
    const first = await sender.submit(encodeAnchorData(randomHash(), randomHash()), { kind: 'anchor', ref: 'first' });
    const receipt = await sender.waitForReceipt(first.txHash, 15_000);
    assert.ok(receipt, 'a receipt within the timeout');
    assert.equal(receipt.status, 'confirmed');

    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => sender.submit(encodeAnchorData(randomHash(), randomHash()), { kind: 'anchor', ref: `n${i}` })),
    );
    const receipts = await Promise.all(results.map((r) => sender.waitForReceipt(r.txHash, 20_000)));
    assert.ok(receipts.every((r) => r?.status === 'confirmed'));

    const block = await reader.getBlock('latest');
    assert.ok(block);
    const now = Date.now() / 1000;
    assert.ok(block.timestamp <= now + 3, `block time ${block.timestamp} is ahead of the clock ${now}`);
    assert.ok(block.timestamp >= now - 60, 'block time is recent');
    assert.ok(block.baseFeePerGas !== null);
  });
});
