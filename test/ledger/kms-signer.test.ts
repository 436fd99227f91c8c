import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { Signature, Transaction, Wallet, computeAddress, keccak256, randomBytes, verifyMessage, verifyTypedData, type JsonRpcProvider } from 'ethers';
import { encodeAnchorData } from '../../lib/ledger/anchor-data.js';
import { KmsLedgerSigner, addressFromSpki, lowSFromDer } from '../../lib/ledger/kms-signer.js';
import { createLedgerProvider, LedgerSender } from '../../lib/ledger/sender.js';
import { startLocalChain, type LocalChain } from '../../lib/local/chain.js';
import { ecdsaTestKey, startKmsTestServer, type KmsTestServer } from '../support/kms-server.js';
import { CHAIN_ID, FUNDS, freePort, randomHash, startStore, tempLog, type Store } from './helpers.js';

/**
 * The ledger wallet on a KMS key (ECC_SECG_P256K1), through the real @aws-sdk/client-kms against
 * the KMS-protocol test server, sending to a real Hardhat node whose genesis funds the key's address.
 */

const N = secp256k1.Point.CURVE().n;
const secret = secp256k1.utils.randomSecretKey();
const walletKey = ecdsaTestKey('6c1f0e2a-wallet-4c1d-9f00-00000000k256', 'ECC_SECG_P256K1', secret);
const otherKey = ecdsaTestKey('7d2f0e2a-other0-4c1d-9f00-00000000k256', 'ECC_SECG_P256K1', secp256k1.utils.randomSecretKey());
const p256Key = ecdsaTestKey('8e3f0e2a-p256-4c1d-9f00-000000000p256', 'ECC_NIST_P256', p256.utils.randomSecretKey());
const expectedAddress = new Wallet(`0x${Buffer.from(secret).toString('hex')}`).address;

let kms: KmsTestServer;
let store: Store;
let chain: LocalChain;
let provider: JsonRpcProvider;
/** The DER signatures KMS answered Sign with, in order. */
const kmsSignatures: Uint8Array[] = [];

before(async () => {
  kms = await startKmsTestServer([walletKey, otherKey, p256Key], {
    aliases: { 'alias/evidence-wallet': walletKey.keyId },
    transformResponse: (operation, body) => {
      if (operation === 'Sign' && typeof body.Signature === 'string') kmsSignatures.push(Buffer.from(body.Signature, 'base64'));
      return body;
    },
  });
  store = await startStore();
  chain = await startLocalChain({
    port: await freePort(),
    blockTimeMs: 0,
    chainId: CHAIN_ID,
    accounts: [{ privateKey: Buffer.from(secret).toString('hex'), balanceWei: FUNDS }],
    logFile: tempLog('kms-signer'),
  });
  provider = createLedgerProvider({ rpcUrl: chain.url, chainId: CHAIN_ID, pollingIntervalMs: 50 });
});

after(async () => {
  provider?.destroy();
  await chain?.stop();
  await store?.stop();
  await kms?.close();
});

function kmsSigner(keyId = kms.arn(walletKey.keyId)): KmsLedgerSigner {
  return new KmsLedgerSigner(kms.client(), keyId, provider);
}

function sender(signer: KmsLedgerSigner): LedgerSender {
  return new LedgerSender({ provider, signer, db: store.db, table: store.tables.ledger, chainId: CHAIN_ID, priorityFeeGwei: 1, maxFeeGwei: 100 });
}

describe('KmsLedgerSigner: address', () => {
  it('derives the address of the KMS key from the SubjectPublicKeyInfo GetPublicKey returns', async () => {
    const signer = kmsSigner('alias/evidence-wallet');
    assert.equal(await signer.getAddress(), expectedAddress);
    assert.equal(addressFromSpki(walletKey.publicKeyDer?.() ?? new Uint8Array()), computeAddress(`0x${Buffer.from(walletKey.publicKey).toString('hex')}`));
  });

  it('asks KMS for the public key once', async () => {
    const signer = kmsSigner();
    const before = kms.requests.filter((r) => r.operation === 'GetPublicKey').length;
    await Promise.all([signer.getAddress(), signer.getAddress()]);
    await signer.signMessage('hello');
    assert.equal(kms.requests.filter((r) => r.operation === 'GetPublicKey').length - before, 1);
  });

  it('refuses a key whose key spec is not ECC_SECG_P256K1', async () => {
    await assert.rejects(kmsSigner(p256Key.keyId).getAddress(), /key spec ECC_NIST_P256, expected ECC_SECG_P256K1/);
  });

  it('reports an unknown key with the KMS error name', async () => {
    await assert.rejects(kmsSigner('no-such-key').getAddress(), /GetPublicKey failed for no-such-key: NotFoundException/);
  });
});

describe('KmsLedgerSigner: signatures', () => {
  it('signs the transaction hash with MessageType DIGEST and ECDSA_SHA_256, and the signature recovers to the key', async () => {
    const signer = kmsSigner();
    const raw = await signer.signTransaction({ type: 2, chainId: CHAIN_ID, nonce: 7, to: expectedAddress, value: 0n, data: '0x1234', gasLimit: 30_000n, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 10n ** 9n });
    const tx = Transaction.from(raw);
    assert.equal(tx.from, expectedAddress);
    assert.equal(tx.nonce, 7);
    const request = kms.requests.findLast((r) => r.operation === 'Sign');
    assert.equal(request?.body.MessageType, 'DIGEST');
    assert.equal(request?.body.SigningAlgorithm, 'ECDSA_SHA_256');
    assert.equal(`0x${Buffer.from(String(request?.body.Message), 'base64').toString('hex')}`, tx.unsignedHash);
  });

  it('normalises a high s from KMS to n − s (EIP-2) and still recovers the address', async () => {
    const signer = kmsSigner();
    walletKey.sForm = 'high';
    try {
      const digest = keccak256(randomBytes(32));
      const signature = await signer.signDigest(digest);
      const der = kmsSignatures.at(-1);
      assert.ok(der);
      const fromKms = secp256k1.Signature.fromBytes(der, 'der');
      assert.ok(fromKms.s > N / 2n, 'the test server answered a high s');
      assert.equal(BigInt(signature.s), N - fromKms.s);
      assert.equal(BigInt(signature.r), fromKms.r);
      assert.ok(BigInt(signature.s) <= N / 2n);
      assert.equal(Signature.from(signature.serialized).s, signature.s);
    } finally {
      walletKey.sForm = 'as-signed';
    }
  });

  it('finds both recovery ids across signatures (v = 27 and v = 28)', async () => {
    const signer = kmsSigner();
    const vs = new Set<number>();
    for (let i = 0; i < 24 && vs.size < 2; i++) vs.add((await signer.signDigest(keccak256(randomBytes(32)))).v);
    assert.deepEqual([...vs].sort(), [27, 28]);
  });

  it('refuses a signature that does not recover to the key’s address (an alias re-pointed to another key)', async () => {
    const confused = new KmsLedgerSigner(kms.client(), otherKey.keyId, provider, expectedAddress);
    await assert.rejects(confused.signDigest(keccak256(randomBytes(32))), /does not recover to/);
  });

  it('refuses a transaction whose from is another address', async () => {
    await assert.rejects(kmsSigner().signTransaction({ from: Wallet.createRandom().address, to: expectedAddress, chainId: CHAIN_ID, nonce: 0, gasLimit: 21_000n, maxFeePerGas: 1n, maxPriorityFeePerGas: 1n }), /from address mismatch/);
  });

  it('signs EIP-191 messages and EIP-712 typed data that ethers verifies', async () => {
    const signer = kmsSigner();
    assert.equal(verifyMessage('anchor me', await signer.signMessage('anchor me')), expectedAddress);
    const domain = { name: 'Evidence', version: '1', chainId: CHAIN_ID };
    const types = { Anchor: [{ name: 'imageHash', type: 'bytes32' }] };
    const value = { imageHash: `0x${randomHash()}` };
    assert.equal(verifyTypedData(domain, types, value, await signer.signTypedData(domain, types, value)), expectedAddress);
  });

  it('parses DER strictly and normalises s', () => {
    const sig = new secp256k1.Signature(5n, N - 3n);
    assert.deepEqual(lowSFromDer(sig.toBytes('der')), { r: 5n, s: 3n, flipped: true });
    assert.throws(() => lowSFromDer(Uint8Array.of(0x30, 0x02, 0x02, 0x00)), /not a DER ECDSA-Sig-Value/);
  });
});

describe('KmsLedgerSigner with LedgerSender on a Hardhat node', () => {
  it('sends anchor transactions signed through KMS that the node mines, from the key’s address', async () => {
    const s = sender(kmsSigner());
    assert.equal(await s.address(), expectedAddress.toLowerCase());
    const sent = [];
    for (let i = 0; i < 3; i++) {
      const imageHash = randomHash();
      sent.push(await s.submit(encodeAnchorData(imageHash, randomHash()), { kind: 'anchor', ref: imageHash }));
    }
    const receipts = await Promise.all(sent.map((r) => s.waitForReceipt(r.txHash, 10_000)));
    for (const [i, receipt] of receipts.entries()) {
      assert.equal(receipt?.status, 'confirmed');
      const tx = await provider.getTransaction(sent[i]?.txHash ?? '');
      assert.equal(tx?.from, expectedAddress);
    }
    assert.deepEqual(sent.map((r) => r.nonce), [sent[0]?.nonce, (sent[0]?.nonce ?? 0) + 1, (sent[0]?.nonce ?? 0) + 2]);
  });

  it('gets a transaction mined whose KMS signature had a high s', async () => {
    walletKey.sForm = 'high';
    try {
      const s = sender(kmsSigner());
      const imageHash = randomHash();
      const before = kmsSignatures.length;
      const result = await s.submit(encodeAnchorData(imageHash, randomHash()), { kind: 'anchor', ref: imageHash });
      const der = kmsSignatures.slice(before).at(-1);
      assert.ok(der && secp256k1.Signature.fromBytes(der, 'der').s > N / 2n, 'KMS answered a high s');
      const receipt = await s.waitForReceipt(result.txHash, 10_000);
      assert.equal(receipt?.status, 'confirmed');
    } finally {
      walletKey.sForm = 'as-signed';
    }
  });
});
