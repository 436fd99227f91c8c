import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { JsonRpcProvider, Network } from 'ethers';
import { decodeAnchorData, encodeAnchorData, encodePqKeyData, decodePqKeyData } from '../../lib/ledger/anchor-data.js';
import { LedgerUnavailableError } from '../../lib/ledger/errors.js';
import { RpcReader } from '../../lib/ledger/rpc-reader.js';
import { createLedgerProvider, type LedgerSlot, type SubmitResult } from '../../lib/ledger/sender.js';
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

function chainOptions() {
  return { port, blockTimeMs: 0, chainId: CHAIN_ID, accounts: [{ privateKey: wallet.privateKey, balanceWei: FUNDS }], logFile: tempLog('sender') };
}

function newProvider(): JsonRpcProvider {
  const p = createLedgerProvider({ rpcUrl: chain.url, chainId: CHAIN_ID, pollingIntervalMs: 50 });
  providers.push(p);
  return p;
}

function assertContiguous(nonces: number[]): void {
  const sorted = [...nonces].sort((a, b) => a - b);
  assert.equal(new Set(sorted).size, sorted.length, 'nonces are unique');
  const first = sorted[0] ?? 0;
  sorted.forEach((n, i) => assert.equal(n, first + i, 'nonces are contiguous'));
}

async function slot(nonce: number): Promise<LedgerSlot | undefined> {
  const r = await store.db.send(new GetCommand({ TableName: store.tables.ledger, Key: { pk: `tx#${address}`, sk: nonce }, ConsistentRead: true }));
  return r.Item as LedgerSlot | undefined;
}

async function releasedSet(): Promise<number[]> {
  const r = await store.db.send(new GetCommand({ TableName: store.tables.ledger, Key: { pk: `wallet#${address}`, sk: 0 }, ConsistentRead: true }));
  return [...((r.Item?.released as Set<number> | undefined) ?? [])].sort((a, b) => a - b);
}

before(async () => {
  store = await startStore();
  port = await freePort();
  chain = await startLocalChain(chainOptions());
  provider = newProvider();
  reader = new RpcReader(chain.url);
});

after(async () => {
  for (const p of providers) p.destroy();
  await chain?.stop();
  await store?.stop();
});

describe('LedgerSender on a Hardhat node (automine)', () => {
  it('mines an anchor transaction whose input data decodes to the two hashes', async () => {
    const sender = makeSender(store, provider, wallet);
    const imageHash = randomHash();
    const serverHash = randomHash();
    const sent = await sender.submit(encodeAnchorData(imageHash, serverHash), { kind: 'anchor', ref: imageHash });
    assert.equal(sent.broadcast, 'accepted');
    assert.equal(sent.from, address);
    const receipt = await sender.waitForReceipt(sent.txHash, 10_000);
    assert.ok(receipt);
    assert.equal(receipt.status, 'confirmed');
    assert.ok(receipt.gasUsed > 21_000n);

    const tx = await reader.getTransaction(sent.txHash);
    assert.ok(tx);
    assert.equal(tx.from, address);
    assert.equal(tx.to, address, 'a self-transaction');
    assert.equal(tx.value, 0n);
    assert.equal(tx.type, 2);
    assert.equal(tx.nonce, sent.nonce);
    assert.deepEqual(decodeAnchorData(tx.input), { imageHash, serverHash });

    const item = await slot(sent.nonce);
    assert.equal(item?.status, 'confirmed');
    assert.equal(item?.tx_hash, sent.txHash);
    assert.equal(item?.block_number, receipt.blockNumber);
    assert.equal(item?.kind, 'anchor');
    assert.equal(item?.ref, imageHash);

    assert.equal(await reader.getTransaction(`0x${'00'.repeat(32)}`), null, 'unknown hash → null');
    assert.equal(await reader.getTransactionReceipt(`0x${'00'.repeat(32)}`), null);
  });

  it('mines a PQ-key registration', async () => {
    const sender = makeSender(store, provider, wallet);
    const fingerprint = randomHash();
    const sent = await sender.submit(encodePqKeyData(fingerprint), { kind: 'pq-key', ref: 'mldsa65:test' });
    const receipt = await sender.waitForReceipt(sent.txHash, 10_000);
    assert.equal(receipt?.status, 'confirmed');
    const tx = await reader.getTransaction(sent.txHash);
    assert.deepEqual(decodePqKeyData(tx?.input ?? '0x'), { algorithm: 'ML-DSA-65', fingerprint });
  });

  it('gives 200 concurrent submits from one sender contiguous nonces, and all confirm', async () => {
    const sender = makeSender(store, provider, wallet);
    // A submit whose store call missed its deadline (a loaded machine: 200 at once against one
    // dynalite) throws LedgerUnavailableError with its nonce released; its caller retries, as the
    // anchor's does, and the released nonce is taken again: the nonces stay contiguous.
    const submit = async (data: string): Promise<SubmitResult> => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await sender.submit(data, { kind: 'anchor', ref: 'bulk' });
        } catch (error) {
          if (!(error instanceof LedgerUnavailableError) || attempt >= 5) throw error;
        }
      }
    };
    const results = await Promise.all(Array.from({ length: 200 }, () => submit(encodeAnchorData(randomHash(), randomHash()))));
    assert.ok(results.every((r) => r.broadcast === 'accepted'));
    assert.equal(new Set(results.map((r) => r.txHash)).size, 200);
    assertContiguous(results.map((r) => r.nonce));
    const receipts = await Promise.all(results.map((r) => sender.waitForReceipt(r.txHash, 30_000)));
    assert.ok(receipts.every((r) => r?.status === 'confirmed'));

    const status = await sender.walletStatus();
    const top = Math.max(...results.map((r) => r.nonce));
    assert.equal(status.nonceLatest, top + 1);
    assert.equal(status.nextNonce, top + 1);
    assert.equal(status.pendingTxs, 0);
    assert.equal(status.lowBalance, false);

    // allowBlocksWithSameTimestamp: 200 quick blocks do not push the chain clock ahead of the wall clock.
    const block = await reader.getBlock('latest');
    assert.ok(block);
    assert.ok(block.timestamp <= Date.now() / 1000 + 3, `chain time ${block.timestamp} runs ahead of ${Date.now() / 1000}`);
  });

  it('never lets two senders sharing one wallet and table (two Lambdas) collide', async () => {
    const a = makeSender(store, newProvider(), wallet);
    const b = makeSender(store, newProvider(), wallet);
    const submitMany = (s: typeof a, n: number) =>
      Array.from({ length: n }, () => s.submit(encodeAnchorData(randomHash(), randomHash()), { kind: 'anchor', ref: 'pair' }));
    const results: SubmitResult[] = await Promise.all([...submitMany(a, 60), ...submitMany(b, 60)]);
    assert.deepEqual(results.filter((r) => r.broadcast !== 'accepted' || r.reusedNonce).map((r) => ({ nonce: r.nonce, broadcast: r.broadcast, reused: r.reusedNonce })), []);
    assertContiguous(results.map((r) => r.nonce));
    assert.equal(new Set(results.map((r) => r.txHash)).size, 120);
    const receipts = await Promise.all(results.map((r) => a.waitForReceipt(r.txHash, 30_000)));
    assert.ok(receipts.every((r) => r?.status === 'confirmed'));
    // Every slot holds exactly the transaction its submitter was told about.
    for (const r of results) assert.equal((await slot(r.nonce))?.tx_hash, r.txHash);
  });

  it('persists the raw transaction before broadcasting it, and keeps it (its nonce, its bytes) when the broadcast fails: another process sends it before its own', async () => {
    const seen: { raw: string; item: LedgerSlot | undefined }[] = [];
    class FailingBroadcast extends JsonRpcProvider {
      override async send(method: string, params: unknown[] | Record<string, unknown>): Promise<unknown> {
        if (method === 'eth_sendRawTransaction') {
          const raw = (params as string[])[0] as string;
          const q = await store.db.send(
            new QueryCommand({
              TableName: store.tables.ledger,
              KeyConditionExpression: 'pk = :pk',
              FilterExpression: '#raw = :raw',
              ExpressionAttributeNames: { '#raw': 'raw' },
              ExpressionAttributeValues: { ':pk': `tx#${address}`, ':raw': raw },
              ConsistentRead: true,
            }),
          );
          seen.push({ raw, item: q.Items?.[0] as LedgerSlot | undefined });
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
        }
        return super.send(method, params);
      }
    }
    const network = Network.from(CHAIN_ID);
    const failing = new FailingBroadcast(chain.url, network, { staticNetwork: network, pollingInterval: 50 });
    providers.push(failing);
    const sender = makeSender(store, failing, wallet);
    const doomed = await sender.submit(encodeAnchorData(randomHash(), randomHash()), { kind: 'anchor', ref: 'doomed' });
    assert.equal(doomed.broadcast, 'failed');
    assert.equal(seen.length, 1);
    const persisted = seen[0]?.item;
    assert.ok(persisted, 'the slot existed when the broadcast started');
    assert.equal(persisted.status, 'signed');
    assert.equal(persisted.kind, 'anchor');
    assert.equal(persisted.ref, 'doomed');
    assert.equal(persisted.nonce, doomed.nonce);

    const after = await slot(doomed.nonce);
    assert.equal(after?.status, 'signed', 'the slot keeps the transaction: its nonce is never given to another');
    assert.equal(after?.tx_hash, doomed.txHash);
    assert.equal(after?.raw, persisted.raw);
    assert.deepEqual(await releasedSet(), []);

    // Another process's next transaction takes the next nonce; on "nonce too high" it sends the
    // kept one first (from the slot), so both are mined, the kept one with its very hash.
    const other = makeSender(store, provider, wallet);
    const sent = await other.submit(encodeAnchorData(randomHash(), randomHash()), { kind: 'anchor', ref: 'next' });
    assert.equal(sent.nonce, doomed.nonce + 1);
    assert.equal(sent.reusedNonce, false);
    assert.equal(sent.broadcast, 'accepted');
    const receipts = await Promise.all([other.waitForReceipt(doomed.txHash, 10_000), other.waitForReceipt(sent.txHash, 10_000)]);
    assert.deepEqual(receipts.map((r) => r?.status), ['confirmed', 'confirmed']);
    assert.deepEqual(await releasedSet(), []);
  });

  it('keeps the slot of an ambiguous broadcast and sends it before its next transaction', async () => {
    let calls = 0;
    class TimesOutOnce extends JsonRpcProvider {
      override async send(method: string, params: unknown[] | Record<string, unknown>): Promise<unknown> {
        if (method === 'eth_sendRawTransaction' && calls++ === 0) throw Object.assign(new Error('request timeout'), { code: 'TIMEOUT' });
        return super.send(method, params);
      }
    }
    const network = Network.from(CHAIN_ID);
    const flaky = new TimesOutOnce(chain.url, network, { staticNetwork: network, pollingInterval: 50 });
    providers.push(flaky);
    const sender = makeSender(store, flaky, wallet);
    const first = await sender.submit(encodeAnchorData(randomHash(), randomHash()), { kind: 'anchor', ref: 'ambiguous' });
    assert.equal(first.broadcast, 'ambiguous');
    assert.equal((await slot(first.nonce))?.status, 'signed', 'kept for rebroadcast');
    assert.equal(await reader.getTransaction(first.txHash), null);
    const second = await sender.submit(encodeAnchorData(randomHash(), randomHash()), { kind: 'anchor', ref: 'next' });
    assert.equal(second.nonce, first.nonce + 1);
    assert.equal(second.broadcast, 'accepted');
    const receipts = await Promise.all([sender.waitForReceipt(first.txHash, 10_000), sender.waitForReceipt(second.txHash, 10_000)]);
    assert.deepEqual(receipts.map((r) => r?.status), ['confirmed', 'confirmed']);
  });

  it('refuses to start a second node on a port in use', async () => {
    await assert.rejects(startLocalChain({ ...chainOptions(), logFile: tempLog('second') }), /already in use/);
  });

  it('keeps the transaction signed while the node is down, and after a fresh node + replay it is mined with its nonce and hash', async () => {
    const sender = makeSender(store, provider, wallet, { feeCacheMs: 600_000 });
    const warm = await sender.submit(encodeAnchorData(randomHash(), randomHash()), { kind: 'anchor', ref: 'warm' });
    await sender.waitForReceipt(warm.txHash, 10_000);
    const before = await sender.walletStatus();

    await chain.stop();
    const down = await sender.submit(encodeAnchorData(randomHash(), randomHash()), { kind: 'anchor', ref: 'down' });
    assert.equal(down.broadcast, 'failed');
    assert.equal(down.nonce, before.nonceLatest);
    assert.equal((await slot(down.nonce))?.status, 'signed');
    assert.deepEqual(await releasedSet(), []);
    await assert.rejects(reader.blockNumber(), LedgerUnavailableError);
    // resume() of the owner says the node is unreachable (never "dead": nothing else can take its nonce).
    await assert.rejects(
      sender.resume({ nonce: down.nonce, txHash: down.txHash, raw: (await slot(down.nonce))?.raw as string, kind: 'anchor', ref: 'down' }),
      (e: unknown) => e instanceof LedgerUnavailableError && e.reason === 'unreachable' && !/127\.0\.0\.1|http/.test(e.message),
    );

    chain = await startLocalChain(chainOptions());
    assert.equal(await reader.getTransactionCount(address), 0, 'a fresh node');
    const history = await sender.listSlots(0);
    const report = await sender.replay({ receiptTimeoutMs: 30_000 });
    const live = history.filter((s) => s.status !== 'released');
    assert.equal(report.fromNonce, 0);
    assert.equal(report.resent, live.length);
    assert.equal(report.confirmed, live.length);
    assert.equal(report.rejected + report.pending + report.filled, 0);
    for (const s of live) {
      const tx = await reader.getTransaction(s.tx_hash);
      assert.ok(tx?.blockNumber !== null && tx?.blockNumber !== undefined, `${s.tx_hash} is mined again`);
    }
    assert.equal((await sender.waitForReceipt(down.txHash, 10_000))?.status, 'confirmed', 'the transaction kept while the node was down is mined');

    const next = await sender.submit(encodeAnchorData(randomHash(), randomHash()), { kind: 'anchor', ref: 'after-restart' });
    assert.equal(next.nonce, down.nonce + 1);
    assert.equal((await sender.waitForReceipt(next.txHash, 10_000))?.status, 'confirmed');
    const status = await sender.walletStatus();
    assert.equal(status.nonceLatest, down.nonce + 2);
    assert.equal(status.nextNonce, down.nonce + 2);
    assert.deepEqual(status.releasedNonces, []);
    assert.equal(status.pendingTxs, 0);
  });
});
